"""Where parts run: inline, a local process pool (forkserver, or fork for a function that
does not pickle), or a Dask cluster. One large trace and a dataset use the same engine.

Every engine hands the parts' results back **in part order**, with at most ``2 x workers``
parts in flight (so results waiting for an earlier part stay bounded), which is what makes
the output identical whatever ran them. A part whose worker dies is run once more; if it
fails again, or raises, the engine reports it as lost (:class:`PartLost`), never silently.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import traceback
import uuid
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

__all__ = ["ENGINES", "PartLost", "caught", "run_parts", "start_early"]

ENGINES = ("local", "dask", "inline", "fork")

SENT_IN_FLIGHT = 8
"""Parts sent with their bytes (``send``) in flight at most on a cluster: a dataset's byte
range of about :data:`~toolscore.parts.plan.PART_BYTES`, or a partition of about
:data:`~toolscore.parts.plan.GATHER_BYTES`."""


@dataclass
class PartLost:
    """A part that could not be evaluated: its worker died twice, or it raised."""

    part: Any
    reason: str

    @classmethod
    def raised(cls, part: Any, exc: BaseException) -> PartLost:
        """``part``, lost to ``exc``: its type, message and the line that raised it (a bug's
        report then says where, for the workers' tracebacks are not shown)."""
        frames = traceback.extract_tb(exc.__traceback__)
        reason = f"{type(exc).__name__}: {exc}"
        if frames:
            reason += f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})"
        return cls(part, reason)


Run = Callable[[Any, Any], Any]


def run_parts(
    parts: list[Any],
    run: Run,
    cfg: Any,
    *,
    engine: str = "local",
    workers: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
    on_retry: Callable[[Any, str], None] | None = None,
    here: Callable[[Any], Callable[[], Any] | None] | None = None,
    send: Callable[[Any], Any] | None = None,
    preload: tuple[str, ...] = (),
    setup: Callable[[], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Generator[Any, None, None]:
    """Each part's outcome, ``run(part, cfg)`` or :class:`PartLost`, in part order (``parts``
    are numbered on from the first's index).

    Args:
        engine: ``inline`` (this process), ``local`` (a forkserver pool, ``preload`` imported
            by the server), ``fork`` (a forked pool: ``run`` and ``cfg`` reach the workers
            through the fork, unpickled, and ``setup`` runs in each), ``dask``.
        here: for a part run in this process instead (at its turn; on a cluster, as it is
            queued), what runs it; None for the others.
        on_retry: told of each part run once more, and why: its worker process died (a
            pool), or it raised on the cluster (after the cluster's own retry; it is then run
            in this process, which reads every part's input; not one whose workers died).
        send: on a cluster, a part whose ``ship`` is true is sent as ``send(part)`` gives it
            (a dataset's range with its bytes; at most :data:`SENT_IN_FLIGHT` in flight).
        stop: polled while waiting for a part (and before each part run here): once it
            returns True, no other outcome comes, and the workers' processes end now (not
            after their parts).
    """
    asked = stop or _never
    if client is not None or scheduler is not None or engine == "dask":
        yield from _dask(parts, run, cfg, client, scheduler, on_retry, here, send, asked)
        return
    count = workers or os.cpu_count() or 1
    if engine == "inline" or (engine != "fork" and (count == 1 or len(parts) <= 1)):
        for part in parts:
            if asked():
                return
            later = here(part) if here is not None else None
            yield caught(part, run, cfg) if later is None else _Later(part, later).result()
        return
    yield from _pool(parts, run, cfg, count, on_retry, here, engine, preload, setup, asked)


def _never() -> bool:
    return False


POLL = 0.05
"""Seconds between two looks at ``stop`` while a part is awaited."""


def _awaited(future: Any, stop: Callable[[], bool]) -> bool:
    """Wait for ``future`` (a pool's or a cluster's); False when ``stop`` asked first."""
    while not stop():
        try:
            future.result(timeout=POLL)
            return True
        except TimeoutError:
            continue
        except BaseException:
            return True  # (its error is taken by the caller)
    return False


def caught(part: Any, run: Run, cfg: Any) -> Any:
    """``run(part, cfg)``, or the part lost if it raises."""
    try:
        return run(part, cfg)
    except Exception as exc:  # a bug must not lose the other parts
        return PartLost.raised(part, exc)


class _Later:
    """A part run in this process when its outcome is asked for (standing for a future)."""

    def __init__(self, part: Any, thunk: Callable[[], Any]) -> None:
        self._part = part
        self._thunk: Callable[[], Any] | None = thunk
        self._outcome: Any = None

    def result(self) -> Any:
        if self._thunk is not None:
            thunk, self._thunk = self._thunk, None
            self._outcome = thunk()
        return self._outcome


_FORKED: list[Any] = [None, None]
"""``run`` and ``cfg`` of the ``fork`` engine, for its workers (they inherit them)."""


def _forked(part: Any) -> Any:
    run, cfg = _FORKED
    return run(part, cfg)


SOCKET_DIR_MAX = 60
"""The longest temporary directory a forkserver's socket fits under: its path
(``TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX``) must fit an AF_UNIX address (108 bytes on Linux,
104 on macOS). Under a longer one the pool starts its workers by ``spawn`` (pipes only)."""


def _context(engine: str, preload: tuple[str, ...]) -> Any:
    if engine == "fork":
        return multiprocessing.get_context("fork")
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    if method == "forkserver" and len(tempfile.gettempdir()) > SOCKET_DIR_MAX:
        method = "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver" and preload:
        ctx.set_forkserver_preload(list(preload))
    return ctx


def start_early(preload: tuple[str, ...]) -> None:
    """Start the local pool's forkserver now, so that it imports ``preload`` while the caller
    reads its gold and plans its parts (else the first part waits for those imports: on 20k
    5-call traces 5% of the run). Does nothing where workers start by ``spawn``; a run that
    then stays in this process leaves the server idle until the interpreter exits."""
    ctx = _context("local", preload)
    if ctx.get_start_method() == "forkserver":
        # (the module exists only where the forkserver method does)
        from multiprocessing import forkserver

        forkserver.ensure_running()


def _pool(
    parts: list[Any],
    run: Run,
    cfg: Any,
    count: int,
    on_retry: Callable[[Any, str], None] | None,
    here: Callable[[Any], Callable[[], Any] | None] | None,
    engine: str,
    preload: tuple[str, ...],
    setup: Callable[[], None] | None,
    stop: Callable[[], bool],
) -> Iterator[Any]:
    ctx = _context(engine, preload)
    forked = engine == "fork"
    if forked:
        _FORKED[:] = [run, cfg]
    limit = 2 * count
    pending: dict[int, Any] = {}
    done: dict[int, Any] = {}
    tries: dict[int, int] = {}
    queue = list(reversed(parts))
    retry: list[Any] = []

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=count, mp_context=ctx, initializer=setup)

    def submit(part: Any) -> Future[Any]:
        return pool.submit(_forked, part) if forked else pool.submit(run, part, cfg)

    pool = new_pool()
    by_index = {p.index: p for p in parts}
    following = parts[0].index if parts else 0  # (numbered on from there)
    finished = False

    def recover(reason: str) -> None:
        """The pool broke: a new one; each part that was in it runs once more (or is lost)."""
        nonlocal pool
        pool.shutdown(wait=False, cancel_futures=True)
        pool = new_pool()
        for index in sorted(pending, reverse=True):
            if isinstance(pending[index], _Later):
                continue  # (run here)
            part = by_index[index]
            tries[index] = tries.get(index, 0) + 1
            if tries[index] > 1:
                done[index] = PartLost(part, reason + ", twice")
            else:
                if on_retry is not None:
                    on_retry(part, reason)
                retry.append(part)
            del pending[index]

    try:
        while queue or pending or retry or done:
            while (retry or queue) and len(pending) + len(done) < limit + (here is not None):
                part = retry.pop() if retry else queue.pop()
                later = here(part) if here is not None else None
                if later is not None:
                    pending[part.index] = _Later(part, later)
                    continue
                try:
                    pending[part.index] = submit(part)
                except BrokenProcessPool as exc:
                    (retry if tries.get(part.index) else queue).append(part)
                    recover(f"a worker process died ({exc or 'killed'})")
            if following in done:
                yield done.pop(following)
                following += 1
                continue
            future = pending.get(following)
            if future is None:
                continue  # it was just put back to be submitted again
            if not isinstance(future, _Later) and not _awaited(future, stop):
                return
            try:
                result = future.result()
                del pending[following]
                done[following] = result
            except BrokenProcessPool as exc:
                recover(f"a worker process died ({exc or 'killed'})")
            except Exception as exc:
                del pending[following]
                done[following] = PartLost.raised(by_index[following], exc)
        finished = True
    finally:
        if not finished:
            # stopped early (Ctrl-C, a read error): the workers end now, not after their parts
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
            _unblock_results(pool)
        pool.shutdown(wait=True, cancel_futures=True)
        if forked:
            _FORKED[:] = [None, None]


def _unblock_results(pool: ProcessPoolExecutor) -> None:
    """After its workers were ended: a worker ended while writing a result leaves part of it
    in the result pipe, and the pool's manager thread would wait for the rest for ever (and
    ``shutdown`` with it). This process's own copy of the pipe's write end is closed, so that
    with the workers gone the thread reads the pipe's end and gives up on the pool."""
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()


def _dask(
    parts: list[Any],
    run: Run,
    cfg: Any,
    client: Any,
    scheduler: str | None,
    on_retry: Callable[[Any, str], None] | None,
    here: Callable[[Any], Callable[[], Any] | None] | None,
    send: Callable[[Any], Any] | None,
    stop: Callable[[], bool],
) -> Iterator[Any]:
    try:
        # optional dependency: dask's distributed, for a cluster only
        from distributed import Client, KilledWorker
    except ImportError:  # pragma: no cover - depends on the extras installed
        raise UsageError("--engine dask needs dask: pip install 'toolscore[dask]'") from None
    own = client is None
    if own:
        client = Client(scheduler) if scheduler else Client(processes=True)  # type: ignore[no-untyped-call]
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        limit = 2 * workers
        queue = list(reversed(parts))
        run_key = uuid.uuid4().hex  # (a key names a task on the whole cluster: its drivers too)
        pending: dict[int, Any] = {}
        sending: set[int] = set()  # the parts in flight with their bytes (``send``)
        following = parts[0].index if parts else 0  # (numbered on from there)
        while queue or pending:
            while queue and len(pending) < limit:
                part = queue[-1]
                later = here(part) if here is not None else None
                if later is not None:  # (run now, while the cluster works)
                    queue.pop()
                    pending[part.index] = _Later(part, later)
                    pending[part.index].result()
                    continue
                ships = send is not None and getattr(part, "ship", False)
                if ships and len(sending) >= SENT_IN_FLIGHT:
                    break  # (the bytes held here stay bounded, however many the workers)
                queue.pop()
                sent = part
                if ships:
                    sending.add(part.index)
                    sent = send(part)  # type: ignore[misc]
                # retries=1: a task whose worker died is run once more (the scheduler also
                # reschedules it on worker loss)
                pending[part.index] = client.submit(
                    run,
                    sent,
                    cfg,
                    pure=False,
                    retries=1,
                    key=f"toolscore-part-{part.index}-{run_key}",
                )
            future = pending[following]
            if not isinstance(future, _Later) and not _awaited(future, stop):
                for waiting in pending.values():  # (the cluster drops them)
                    if not isinstance(waiting, _Later):
                        waiting.cancel()
                return
            del pending[following]
            sending.discard(following)
            try:
                outcome = future.result()
            except Exception as exc:
                # (the cluster ran it twice: a worker's fault, a directory it does not see)
                part = next(p for p in parts if p.index == following)
                lost = PartLost.raised(part, exc)
                if stop() or isinstance(exc, KilledWorker):
                    outcome = lost  # (a part that ended its workers twice would end this one)
                else:
                    if on_retry is not None:
                        on_retry(part, f"the cluster raised {lost.reason}")
                    outcome = caught(part, run, cfg)  # once more, here: it sees its input
            yield outcome
            following += 1
    finally:
        if own:
            client.close()
