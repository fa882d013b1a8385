"""A dataset run on a Dask cluster: the client (of a scheduler, or of a new local cluster),
the probe that asks the workers whether they share this process's directory, and what
travels to workers that do not (a part's bytes; a scatter range run here)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from ..errors import UsageError
from ..parts.engine import caught
from .inputs import Part, remove_location
from .worker import Config, PartResult, run_part


def _connect(scheduler: str | None) -> Any:
    """A client of the Dask scheduler at ``scheduler``, or of a new local cluster."""
    try:
        # dask is optional (the dask extra) and heavy to import: --engine dask only
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the extras installed
        raise UsageError("--engine dask needs dask: pip install 'toolscore[dask]'") from None
    if scheduler:
        return Client(scheduler)  # type: ignore[no-untyped-call]
    return Client(processes=True)  # type: ignore[no-untyped-call]


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
