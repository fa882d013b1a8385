"""A part of a dataset evaluated in one worker (a pool process, a Dask worker, or inline).

Each trace is evaluated whole by :func:`toolscore.api.evaluate_trace`, so its score is the one
``toolscore eval`` gives that trace alone; :func:`run_part` returns the part's records in
reading order, with line numbers counted from the part's start (the driver shifts them).

Where things are: the run's :class:`Config`, the scorer and the record's fields in
``_scoring``; reading each kind of input (one trace, a multi-trace file or range, lines that
interleave, scattered and gathered, OTLP) in ``_readers``; running the part, its records
and what it gives back here. Every name is re-exported here.
"""

from __future__ import annotations

import gc
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from ..limits import reading_limits, value_limit
from ..redact import pii_redaction
from ._readers import FileFormat as FileFormat
from ._readers import _run_gather, _run_scatter, _run_stalling
from ._readers import range_lines as range_lines
from ._scoring import GOLD_ERRORS as GOLD_ERRORS
from ._scoring import MISSING_TRACE as MISSING_TRACE
from ._scoring import Config as Config
from ._scoring import Scorer as Scorer
from ._scoring import _fill as _fill
from ._scoring import _Tasks
from ._scoring import evaluate_absent as evaluate_absent
from ._scoring import evaluate_one as evaluate_one
from ._scoring import gold_error_record as gold_error_record
from ._scoring import scorer_for as scorer_for
from ._taskid import DEFAULT_TASK_REGEX as DEFAULT_TASK_REGEX
from .gold import gold_lookup
from .inputs import Part
from .records import (
    TraceRecord,
    pack_records,
    read_records,
    unpack_records,
    write_records,
)

__all__ = [
    "DEFAULT_TASK_REGEX",
    "MISSING_TRACE",
    "Config",
    "PartResult",
    "range_lines",
    "run_part",
]


@dataclass
class PartResult:
    """What a part gives back."""

    index: int
    records: list[TraceRecord]
    lines: list[int]
    """Lines read in each of the part's files (for the line numbers of the next part)."""
    bytes_read: int = 0
    spool: str | None = None
    """A file of the part's first records (:class:`Records`), before :attr:`records`."""
    scattered: tuple[str, list[int]] | None = None
    """A scatter range's file of framed lines, and where each partition's starts (and the
    last ends) in it (:attr:`~.inputs.Part.scatter`)."""
    notes: list[str] = field(default_factory=list)
    """:attr:`Records.notes`."""

    def batches(self) -> Iterator[list[TraceRecord]]:
        """The part's records in order, a batch at a time: the spool's (the file is then
        removed), then :attr:`records`."""
        if self.spool is not None:
            try:
                with open(self.spool, "rb") as f:
                    yield from read_records(f)
            finally:
                os.unlink(self.spool)
            self.spool = None
        if self.records:
            yield self.records

    def __getstate__(self) -> dict[str, Any]:
        # to the driver (a pool's pipe, a Dask cluster) the records go as one MessagePack
        # buffer, encoded and decoded in C: a quarter of pickling them one object at a time
        state = dict(self.__dict__)
        state["records"] = pack_records(self.records)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # decoding makes thousands of containers at once, none in a cycle: the collector's
        # passes over the driver's heap meanwhile would cost more than the decoding
        enabled = gc.isenabled()
        gc.disable()
        try:
            state["records"] = unpack_records(state["records"])
        finally:
            if enabled:
                gc.enable()
        self.__dict__.update(state)


SPOOL_RECORDS = 2_000
"""Records a part holds in memory before :class:`Records` writes them to its spool."""


PROGRESS_EVERY = 64
"""Records between two progress reports of a part run in the driver's process."""


class _InProcess:
    """The driver's count of the records a part run in its own process (the inline engine)
    has made so far: the progress bar then counts traces as they finish, not parts."""

    def __init__(self) -> None:
        self.hook: Callable[[int], None] | None = None
        self.pid = 0

    def tell(self, records: int) -> None:
        if self.hook is not None and os.getpid() == self.pid:  # (never a forked worker)
            self.hook(records)


_IN_PROCESS = _InProcess()


@contextmanager
def records_progress(hook: Callable[[int], None] | None) -> Iterator[None]:
    """While inside, a part run in this process calls ``hook(n)`` each time it has made
    ``n`` more records (every :data:`PROGRESS_EVERY`)."""
    _IN_PROCESS.hook, _IN_PROCESS.pid = hook, os.getpid()
    try:
        yield
    finally:
        _IN_PROCESS.hook = None


class Records:
    """A part's records as they are made (``append``; ``len`` counts them all). With
    ``directory`` (a local engine's work directory, which the driver reads too) and
    :meth:`spill` on, every :data:`SPOOL_RECORDS` records are written to a spool file there:
    a part of many traces (a file whose lines interleave) then holds a bounded number, and
    the driver takes them in a batch at a time (:meth:`PartResult.batches`)."""

    def __init__(self, directory: str | None = None) -> None:
        self.held: list[TraceRecord] = []
        self.count = 0
        self.last_id: str | None = None
        """The id of the last record that has one."""
        self.path: str | None = None
        self.notes: list[str] = []
        """What the part has to say of its inputs besides its records (the driver's
        problems: e.g. ids that are strings and numbers alike)."""
        self._directory = directory
        self._spill = False
        self._file: IO[bytes] | None = None

    def __len__(self) -> int:
        return self.count

    def append(self, record: TraceRecord) -> None:
        self.held.append(record)
        self.count += 1
        if not self.count % PROGRESS_EVERY:
            _IN_PROCESS.tell(PROGRESS_EVERY)
        if record.trace_id:
            self.last_id = record.trace_id
        if self._spill and len(self.held) >= SPOOL_RECORDS:
            self._write()

    def spill(self) -> None:
        """Write to the spool from now on (when there is a directory)."""
        self._spill = self._directory is not None

    def _write(self) -> None:
        if self._file is None:
            fd, self.path = tempfile.mkstemp(prefix="records-", dir=self._directory)
            self._file = os.fdopen(fd, "wb")
        write_records(self._file, self.held)
        self.held = []

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


YOUNG_COLLECTION_THRESHOLD = 50_000
"""Allocations between two of the cycle collector's young-generation passes while a dataset
is evaluated (Python's default: 700)."""


class _Collections:
    """The blocks inside :func:`fewer_collections` now, and the thresholds from before."""

    lock = threading.Lock()
    inside = 0
    before: tuple[int, ...] = ()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with the cycle collector's young generation collected every
    :data:`YOUNG_COLLECTION_THRESHOLD` allocations; the thresholds from before are restored
    when the last such block ends (blocks in several threads, a Dask worker's, may overlap).

    Evaluating a trace makes thousands of short-lived containers (the checks, their states,
    the record), freed by their reference counts; at the default threshold the collector
    passes over the survivors every 700 allocations. Scoring the benchmark's traces with their
    decoded batches held, 167 us a trace against 192; a whole run on 2 workers, about 2%
    (more for a Dask worker, whose heap is larger). Cyclic garbage waits at most that many
    allocations longer.
    """
    state = _Collections
    with state.lock:
        if not state.inside:
            state.before = gc.get_threshold()
            gc.set_threshold(max(state.before[0], YOUNG_COLLECTION_THRESHOLD), *state.before[1:])
        state.inside += 1
    try:
        yield
    finally:
        with state.lock:
            state.inside -= 1
            if not state.inside:
                gc.set_threshold(*state.before)


def run_part(part: Part, cfg: Config) -> PartResult:
    """Evaluate every trace of ``part`` (under the run's ``--pii``, ``--max-value-bytes`` and
    read limits: a pool process or a Dask worker has its own context, so they travel in
    ``cfg``)."""
    with pii_redaction(cfg.pii), value_limit(cfg.max_value_bytes), fewer_collections():
        with reading_limits(cfg.read_limits):
            return _run_part(part, cfg)


def _run_part(part: Part, cfg: Config) -> PartResult:
    records = Records(cfg.records_dir)
    try:
        if part.scatter:
            read, scattered = _run_scatter(part, cfg, records)
            # (the progress: half its bytes; the gather parts count the other half)
            return PartResult(
                part.index, records.held, [read], part.size // 2, None, scattered, records.notes
            )
        gold = gold_lookup(cfg.gold)
        tasks = _Tasks(cfg)
        if part.gather:
            _run_gather(part, cfg, gold, tasks, records)
            lines = [0]
        else:
            lines = [_run_stalling(part, item, cfg, gold, tasks, records) for item in part.inputs]
    finally:
        records.close()
    return PartResult(part.index, records.held, lines, part.size, records.path, notes=records.notes)
