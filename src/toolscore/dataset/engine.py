"""Where a dataset's parts run: inline, a local process pool, or a Dask cluster.

Every engine hands the parts' results back **in part order**, with at most ``2 x workers``
parts in flight (so results waiting for an earlier part stay bounded), which is what makes
the per-trace output and the aggregate identical whatever ran them. A part whose worker dies
is run once more; if it fails again, the engine reports it as lost (:class:`PartLost`), never
silently.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any

from .inputs import Part
from .worker import Config, PartResult, run_part

__all__ = ["ENGINES", "PartLost", "run_parts"]

ENGINES = ("local", "dask", "inline")

SENT_IN_FLIGHT = 8
"""Parts sent with their bytes (:attr:`~.inputs.Part.ship`) in flight at most: a byte range
of about :data:`~.inputs.PART_BYTES`, or a partition of about :data:`~.inputs.GATHER_BYTES`."""


@dataclass
class PartLost:
    """A part that could not be evaluated: its worker died twice, or it raised."""

    part: Part
    reason: str


Outcome = PartResult | PartLost


def run_parts(
    parts: list[Part],
    cfg: Config,
    *,
    engine: str = "local",
    workers: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
    on_retry: Callable[[Part, str], None] | None = None,
) -> Iterator[Outcome]:
    """Each part's outcome, in part order (``parts`` are numbered on from the first's
    index)."""
    if client is not None or scheduler is not None or engine == "dask":
        yield from _dask(parts, cfg, client, scheduler, on_retry)
        return
    count = workers or os.cpu_count() or 1
    if engine == "inline" or count == 1 or len(parts) <= 1:
        for part in parts:
            yield _inline(part, cfg)
        return
    yield from _pool(parts, cfg, count, on_retry)


def _inline(part: Part, cfg: Config) -> Outcome:
    try:
        return run_part(part, cfg)
    except Exception as exc:  # a bug must not lose the other parts
        return PartLost(part, f"{type(exc).__name__}: {exc}")


def _context() -> Any:
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["toolscore.dataset.worker", "toolscore.api"])
    return ctx


def _pool(
    parts: list[Part],
    cfg: Config,
    count: int,
    on_retry: Callable[[Part, str], None] | None,
) -> Iterator[Outcome]:
    ctx = _context()
    limit = 2 * count
    pending: dict[int, Future[PartResult]] = {}
    done: dict[int, Outcome] = {}
    tries: dict[int, int] = {}
    queue = list(reversed(parts))
    retry: list[Part] = []
    pool = ProcessPoolExecutor(max_workers=count, mp_context=ctx)
    by_index = {p.index: p for p in parts}
    following = parts[0].index if parts else 0  # (numbered on from there)

    def recover(reason: str) -> None:
        """The pool broke: a new one; each part that was in it runs once more (or is lost)."""
        nonlocal pool
        pool.shutdown(wait=False, cancel_futures=True)
        pool = ProcessPoolExecutor(max_workers=count, mp_context=ctx)
        for index in sorted(pending, reverse=True):
            part = by_index[index]
            tries[index] = tries.get(index, 0) + 1
            if tries[index] > 1:
                done[index] = PartLost(part, reason + ", twice")
            else:
                if on_retry is not None:
                    on_retry(part, reason)
                retry.append(part)
        pending.clear()

    try:
        while queue or pending or retry or done:
            while (retry or queue) and len(pending) + len(done) < limit:
                part = retry.pop() if retry else queue.pop()
                try:
                    pending[part.index] = pool.submit(run_part, part, cfg)
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
            try:
                result = future.result()
                del pending[following]
                done[following] = result
            except BrokenProcessPool as exc:
                recover(f"a worker process died ({exc or 'killed'})")
            except Exception as exc:
                del pending[following]
                done[following] = PartLost(by_index[following], f"{type(exc).__name__}: {exc}")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _with_data(part: Part) -> Part:
    """``part``, with its bytes when it is a :attr:`~.inputs.Part.ship` range or partition
    (read from this machine's files as it is submitted: at most the parts in flight are in
    memory)."""
    if not part.ship:
        return part
    sections = part.gather or ((part.inputs[0].path, part.start, part.end or part.start, 0),)
    pieces = []
    for path, start, end, _ in sections:
        with open(path, "rb") as f:
            f.seek(start)
            pieces.append(f.read(end - start))
    return replace(part, data=b"".join(pieces))


class _RanHere:
    """The outcome of a part run in this process, standing for a cluster's future."""

    def __init__(self, outcome: Outcome) -> None:
        self._outcome = outcome

    def result(self) -> Outcome:
        return self._outcome


def _dask(
    parts: list[Part],
    cfg: Config,
    client: Any,
    scheduler: str | None,
    on_retry: Callable[[Part, str], None] | None,
) -> Iterator[Outcome]:
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the extras installed
        from ..errors import UsageError

        raise UsageError("--engine dask needs dask: pip install 'toolscore[dask]'") from None
    own = client is None
    if own:
        client = Client(scheduler) if scheduler else Client(processes=True)  # type: ignore[no-untyped-call]
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        limit = 2 * workers
        queue = list(reversed(parts))
        pending: dict[int, Any] = {}
        sending: set[int] = set()  # the parts in flight with their bytes (_with_data)
        following = parts[0].index if parts else 0  # (numbered on from there)
        while queue or pending:
            while queue and len(pending) < limit:
                part = queue[-1]
                if part.ship and part.scatter:  # (its file is read here only)
                    queue.pop()
                    pending[part.index] = _RanHere(_inline(part, cfg))
                    continue
                if part.ship and len(sending) >= SENT_IN_FLIGHT:
                    break  # (the bytes held here stay bounded, however many the workers)
                queue.pop()
                if part.ship:
                    sending.add(part.index)
                # retries=1: a task whose worker died is run once more (the scheduler also
                # reschedules it on worker loss)
                pending[part.index] = client.submit(
                    run_part,
                    _with_data(part),
                    cfg,
                    pure=False,
                    retries=1,
                    key=f"toolscore-part-{part.index}-{id(parts)}",
                )
            future = pending.pop(following)
            sending.discard(following)
            try:
                yield future.result()
            except Exception as exc:
                yield PartLost(
                    next(p for p in parts if p.index == following),
                    f"{type(exc).__name__}: {exc}",
                )
            following += 1
    finally:
        if own:
            client.close()
