"""A dataset run on a Dask cluster: the client (of a scheduler, or of a new local cluster),
the probe that asks the workers whether they share this process's directory, and what
travels to workers that do not (a part's bytes; a scatter range run here)."""

from __future__ import annotations

import contextlib
import os
import shlex
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from multiprocessing import spawn
from typing import Any

from ..errors import UsageError
from ..parts.engine import caught
from .inputs import Part, remove_location
from .worker import Config, PartResult, run_part


def connect(scheduler: str | None, dashboard: bool = False) -> Any:
    """A client of the Dask scheduler at ``scheduler``, or of a new local cluster
    (:func:`local_cluster_options`; ``dashboard``: with its dashboard on 127.0.0.1:8787).

    Raises:
        UsageError: dask (or, for a local cluster, ``cryptography``) is not installed.
    """
    try:
        # dask is optional (the dask extra) and heavy to import: --engine dask only
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the extras installed
        raise UsageError("--engine dask needs dask: pip install 'toolscore[dask]'") from None
    if scheduler:
        return Client(scheduler)  # type: ignore[no-untyped-call]
    import dask.config  # (installed with distributed)

    # the scheduler (in this process) serves only its health check over HTTP, unless the
    # dashboard is asked for: no pages of its workers, logs and call stacks
    routes = {} if dashboard else {"distributed.scheduler.http.routes": [_HEALTH_ROUTE]}
    try:
        with dask.config.set(routes):
            return Client(**local_cluster_options(dashboard))  # type: ignore[no-untyped-call]
    except ImportError as exc:  # Security.temporary() needs cryptography
        raise UsageError(
            f"--engine dask needs {exc.name or 'cryptography'}: pip install 'toolscore[dask]'"
        ) from None


_HEALTH_ROUTE = "distributed.http.health"


@contextlib.contextmanager
def workers_ignore_sigint(directory: str) -> Iterator[None]:
    """Within the block, processes started by ``multiprocessing``'s spawn (a local Dask
    cluster's workers) ignore SIGINT from their first instruction: they run the interpreter
    through a script in ``directory`` that ignores it, and an ignored signal stays ignored
    across ``exec``. A terminal's Ctrl-C reaches every process of its group; this process
    alone then handles it (the run ends with its report, exit 130, and closes the cluster),
    instead of workers dying while they start ("Nanny failed to start") or printing
    ``KeyboardInterrupt`` tracebacks. Not on Windows (no such signal groups)."""
    if os.name != "posix":
        yield
        return
    previous = spawn.get_executable()
    script = os.path.join(directory, "python-ignoring-sigint")
    with open(script, "w", encoding="utf-8") as f:
        f.write(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(os.fsdecode(previous))} \"$@\"\n")
    os.chmod(script, 0o700)
    spawn.set_executable(script)
    try:
        yield
    finally:
        spawn.set_executable(previous)


def local_cluster_options(dashboard: bool = False) -> dict[str, Any]:
    """The options of the local cluster a run without a scheduler starts (as ``Client``
    takes them): no other user of this machine may reach it, since a client of a Dask
    scheduler runs any code it likes in its workers. Scheduler, nannies and workers listen
    on 127.0.0.1 only, over TLS with a certificate authority and a key made for this run
    in memory (``Security.temporary()``: a client without them cannot connect, and each
    end proves it holds them), and the dashboard is off unless asked for (then on
    127.0.0.1:8787; else the scheduler's HTTP health check alone, on a free loopback
    port)."""
    return {
        "processes": True,
        "host": "127.0.0.1",
        "protocol": "tls://",
        "security": True,  # Client makes it Security.temporary() and passes it on
        "dashboard_address": "127.0.0.1:8787" if dashboard else "127.0.0.1:0",
        "scheduler_kwargs": {"dashboard": dashboard},
        "worker_dashboard_address": None,
    }


def workers_share(client: Any, directory: str) -> bool:
    """Whether every worker of ``client``'s cluster reads and writes this process's
    ``directory`` (a ``LocalCluster``'s do; so do other machines' that mount it from the
    same file server): each worker reads a probe file written here and writes one back for
    this process to read. A worker's address says nothing of this (one in a container may
    have a loopback address and a disk of its own), so the probe asks the disk itself.
    Workers that join later are not asked: they must see it as the first did."""

    token = uuid.uuid4().hex
    probe = os.path.join(directory, f"probe-{token}")
    try:
        with open(probe, "w", encoding="utf-8") as f:
            f.write(token)
        answers = client.run(_answer_probe, probe, token, on_error="return")
    except Exception:  # an unreachable scheduler: the run reports it
        return False
    finally:
        remove_location(probe)
    try:
        return bool(answers) and all(
            isinstance(written, str) and _holds(written, token) for written in answers.values()
        )
    finally:
        for written in answers.values():
            if isinstance(written, str):
                remove_location(written)


def _answer_probe(probe: str, token: str) -> str | None:
    """On a worker: the file written back when ``probe`` reads as ``token`` (else None)."""
    if not _holds(probe, token):
        return None
    directory, name = os.path.split(probe)
    try:
        fd, written = tempfile.mkstemp(prefix=f"{name}-", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(token)
    except OSError:
        return None
    return written


def _holds(path: str, token: str) -> bool:
    """Whether the file at ``path`` can be read and reads as ``token``."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == token
    except OSError:
        return False


def with_data(part: Part) -> Part:
    """``part`` with its bytes, as sent to a cluster: a :attr:`~.inputs.Part.ship` range or
    partition, read from this machine's files as it is submitted (at most the parts in
    flight are in memory)."""
    sections = part.gather or ((part.inputs[0].path, part.start, part.end or part.start, 0),)
    pieces = []
    for path, start, end, _ in sections:
        with open(path, "rb") as f:
            f.seek(start)
            pieces.append(f.read(end - start))
    return replace(part, data=b"".join(pieces))


def _scattered_here(cfg: Config) -> Callable[[Part], Callable[[], PartResult] | None]:
    """A scatter range whose file only this machine reads runs here."""

    def here(part: Part) -> Callable[[], PartResult] | None:
        return partial(caught, part, run_part, cfg) if part.ship and part.scatter else None

    return here
