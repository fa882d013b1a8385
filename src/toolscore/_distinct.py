"""An exact count of distinct 64-bit fingerprints in bounded memory.

``identical_count`` needs the number of distinct call signatures in the whole trace, which an
in-memory set would make grow with the trace. :class:`DistinctCounter` buffers at most
``memory_entries`` values in a flat ``array('q')`` (8 bytes each); when the buffer fills, its
values are ordered by value range (by their top bits alone when ``fanout`` is a power of
two) and appended, split by range, to ``fanout`` run files on disk (a partitioned external
hash, the way databases count distinct values). The ranges are disjoint,
so the distinct count is the sum of the distinct counts of the partitions, each counted on its
own (in a set) at the end; a partition too big for the budget is split again by the next bits
of its range.

Memory is the buffer (256 KB at the default, 32,768 values) plus, while a full buffer is
sorted or a partition counted, its values as Python ints and a set of them (about 3 MB; the
default was 65,536 values until that set made the main process's peak RSS 4 MB higher at 1 GB),
whatever the trace length; disk is 8 bytes per call. A trace with fewer
calls than the buffer holds never touches the disk. Everything costly happens in C
(``array.extend``, ``sorted``, ``array.tofile``, ``set.update``); the Python work per value is
none.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DistinctCounter", "DistinctSet"]

_LOW = -(1 << 63)
_HIGH = 1 << 63
_ITEM = array("q").itemsize
_SHIFTS = {1 << k: 64 - k for k in range(1, 64)}
"""For a fanout of 2**k, the shift that leaves a value's top k bits: the sub-ranges of the
whole range are the values of ``v >> shift``, in order."""


class DistinctCounter:
    """Counts distinct signed 64-bit integers exactly, holding at most ``memory_entries``.

    Args:
        memory_entries: values kept in memory before spilling to disk.
        fanout: run files per spill (a power of two is not needed).
        directory: where the temporary run directory is made (default: the system's).
    """

    def __init__(
        self,
        memory_entries: int = 1 << 15,
        fanout: int = 64,
        directory: str | os.PathLike[str] | None = None,
    ) -> None:
        if memory_entries < 1 or fanout < 2:
            raise ValueError("memory_entries must be >= 1 and fanout >= 2")
        self.memory_entries = memory_entries
        self.fanout = fanout
        self._directory = directory
        self._buf = array("q")
        self._dir: Path | None = None
        self._runs: list[list[Path]] = []
        """Per partition of the full range, the run files holding its spilled values (made
        at the first spill: most counters never spill)."""
        self._spills = 0
        self._count: int | None = None
        self._adopted: list[Path] = []
        """Run directories taken over from merged counters."""

    # -- adding -------------------------------------------------------------------------------

    def add(self, value: int) -> None:
        """Count ``value`` (a signed 64-bit integer)."""
        buf = self._buf
        buf.append(value)
        self._count = None
        if len(buf) >= self.memory_entries:
            self._spill()

    def update(self, values: Iterable[int]) -> None:
        """Count every value of ``values``."""
        buf = self._buf
        buf.extend(values)
        self._count = None
        if len(buf) >= self.memory_entries:
            self._spill()

    @property
    def spilled(self) -> bool:
        """True once values went to disk."""
        return self._spills > 0

    def _spill(self) -> None:
        shift = _SHIFTS.get(self.fanout)
        if shift is None:
            values = sorted(self._buf)
            key = None
        else:  # a value's range is its top bits: ordered by them alone (a quarter quicker)
            key = shift.__rrshift__
            values = sorted(self._buf, key=key)
        self._buf = array("q")
        self._count = None
        self._write_runs(values, _LOW, _HIGH, self._run_lists(), self._run_dir(), key)
        self._spills += 1

    def _run_lists(self) -> list[list[Path]]:
        """:attr:`_runs`, made at the first spill or merge of a spilled counter."""
        if not self._runs:
            self._runs = [[] for _ in range(self.fanout)]
        return self._runs

    def _run_dir(self) -> Path:
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="toolscore-distinct-", dir=self._directory))
        return self._dir

    def _write_runs(
        self,
        values: list[int],
        lo: int,
        hi: int,
        runs: list[list[Path]],
        where: Path,
        key: Callable[[int], int] | None = None,
    ) -> None:
        """Append the sorted ``values`` (all in ``[lo, hi)``) to one run file per sub-range;
        with ``key`` (a shift by :data:`_SHIFTS`, over the whole range), sorted by it only."""
        step = -(-(hi - lo) // self.fanout)
        start = 0
        for part in range(self.fanout):
            bound = min(lo + (part + 1) * step, hi)
            if key is None:
                end = bisect_left(values, bound, start)
            else:
                end = bisect_left(values, key(bound), start, key=key)
            if end > start:
                path = where / f"{id(runs):x}-{part}"
                with open(path, "ab") as fh:
                    array("q", values[start:end]).tofile(fh)
                if not runs[part] or runs[part][-1] != path:
                    runs[part].append(path)
                start = end
            if start == len(values):
                break

    # -- counting -----------------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of distinct values added so far."""
        if not self._spills:
            return len(set(self._buf))
        if self._count is None:
            if self._buf:
                self._spill()
            step = -(-(_HIGH - _LOW) // self.fanout)
            self._count = sum(
                self._count_range(
                    [(f, None) for f in files], _LOW + p * step, min(_LOW + (p + 1) * step, _HIGH)
                )
                for p, files in enumerate(self._runs)
                if files
            )
        return self._count

    def _count_range(
        self, files: Sequence[Piece], lo: int, hi: int, extra: Sequence[int] = ()
    ) -> int:
        """Distinct values in ``files`` and ``extra`` (all in ``[lo, hi)``), splitting them
        again if needed."""
        total = sum(_size(piece) for piece in files) // _ITEM + len(extra)
        if total <= self.memory_entries or hi - lo <= 1:
            seen: set[int] = set(extra)
            for values in _blocks(files, self.memory_entries):
                seen.update(values)
            return len(seen)
        where = Path(tempfile.mkdtemp(prefix="split-", dir=self._run_dir()))
        try:
            runs: list[list[Path]] = [[] for _ in range(self.fanout)]
            if extra:
                self._write_runs(sorted(set(extra)), lo, hi, runs, where)
            for values in _blocks(files, self.memory_entries):
                self._write_runs(sorted(set(values)), lo, hi, runs, where)
            step = -(-(hi - lo) // self.fanout)
            return sum(
                self._count_range(
                    [(f, None) for f in sub], lo + p * step, min(lo + (p + 1) * step, hi)
                )
                for p, sub in enumerate(runs)
                if sub
            )
        finally:
            shutil.rmtree(where, ignore_errors=True)

    # -- several counters, one count ----------------------------------------------------------

    def snapshot(self) -> DistinctSet:
        """The values counted so far, as a value that later additions leave as it is: the
        values in memory (copied) and the run files' present lengths (files only grow)."""
        if not self._spills:  # no run file yet (every count below the memory's)
            runs: tuple[tuple[tuple[str, int], ...], ...] = ((),) * self.fanout
        else:
            runs = tuple(tuple((str(f), f.stat().st_size) for f in files) for files in self._runs)
        return DistinctSet(self.fanout, self.memory_entries, self._buf.tobytes(), runs, self)

    def merge(self, other: DistinctCounter) -> None:
        """Add every value ``other`` counted; ``other``'s run files become this counter's.

        Both must use the same ``fanout``. ``other`` is left empty.
        """
        if other.fanout != self.fanout:
            raise ValueError("cannot merge counters with different fanouts")
        if other._spills:
            if other._buf:
                other._spill()
            for mine, theirs in zip(self._run_lists(), other._runs, strict=True):
                mine.extend(theirs)
            self._spills += other._spills
            self._adopt(other)
        self._count = None
        self.update(other._buf)
        other._buf = array("q")
        other._runs = []
        other._spills = 0

    def _adopt(self, other: DistinctCounter) -> None:
        self._adopted.extend(other._adopted)
        other._adopted = []
        if other._dir is not None:
            self._adopted.append(other._dir)
            other._dir = None

    def close(self) -> None:
        """Delete the run files; the counter is empty afterwards."""
        if self._dir is not None or self._adopted:
            for path in [self._dir, *self._adopted]:
                if path is not None:
                    shutil.rmtree(path, ignore_errors=True)
            self._dir = None
            self._adopted = []
        self._buf = array("q")
        self._runs = []
        self._spills = 0
        self._count = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __repr__(self) -> str:
        where = f", {self._spills} spills" if self._spills else ""
        return f"DistinctCounter({len(self._buf)} in memory{where})"


Piece = tuple[Path, int | None]
"""A run file, or its first ``n`` bytes (a file the counter that wrote it may append to)."""


def _size(piece: Piece) -> int:
    path, n = piece
    return path.stat().st_size if n is None else n


def _blocks(files: Sequence[Piece], size: int) -> Iterable[array[int]]:
    """The values of ``files`` in arrays of at most ``size``."""
    for path, n in files:
        left = path.stat().st_size // _ITEM if n is None else n // _ITEM
        with open(path, "rb") as fh:
            while left > 0:
                block = array("q")
                try:
                    block.fromfile(fh, min(size, left))
                except EOFError:
                    if block:
                        yield block
                    break
                left -= len(block)
                yield block


@dataclass(frozen=True, eq=False)
class DistinctSet:
    """The values a :class:`DistinctCounter` counted, frozen (:meth:`DistinctCounter.snapshot`):
    the values in memory, and per value range the run files' first bytes. Sets of consecutive
    parts of a trace merge (:meth:`merge`) into the set of the whole; ``len()`` counts it.

    Picklable as paths: a set sent to another process names the sending process's run files,
    which must outlive it (the parallel reader puts them in a directory it removes at the end).
    Two sets are equal when they hold the same values.
    """

    fanout: int
    memory_entries: int
    memory: bytes
    """Values not spilled, as ``array('q')`` bytes."""
    runs: tuple[tuple[tuple[str, int], ...], ...]
    """Per value range (``fanout`` of them), ``(run file, bytes)``."""
    keep: Any = field(default=None, repr=False)
    """The counters whose files these are, kept alive with the set (not pickled)."""
    _count: list[int] = field(default_factory=list, repr=False)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DistinctSet, (self.fanout, self.memory_entries, self.memory, self.runs))

    def merge(self, later: DistinctSet) -> DistinctSet:
        """The values of both."""
        if later.fanout != self.fanout:
            raise ValueError("cannot merge sets of counters with different fanouts")
        runs = tuple(a + b for a, b in zip(self.runs, later.runs, strict=True))
        return DistinctSet(
            self.fanout, self.memory_entries, self.memory + later.memory, runs,
            (self.keep, later.keep),
        )  # fmt: skip

    def __len__(self) -> int:
        if not self._count:
            self._count.append(self._len())
        return self._count[0]

    def _len(self) -> int:
        memory = array("q")
        memory.frombytes(self.memory)
        if not any(self.runs):
            return len(set(memory))
        counter = DistinctCounter(self.memory_entries, self.fanout)
        try:
            # the values in memory are counted with their range's run files, not written
            # to disk first (64 new files and a directory: most of the count's time)
            values = sorted(memory)
            step = -(-(_HIGH - _LOW) // self.fanout)
            total = 0
            start = 0
            for p, pieces in enumerate(self.runs):
                lo, hi = _LOW + p * step, min(_LOW + (p + 1) * step, _HIGH)
                end = bisect_left(values, hi, start)
                if pieces or end > start:
                    files: list[Piece] = [(Path(path), n) for path, n in pieces]
                    total += counter._count_range(files, lo, hi, values[start:end])
                start = end
            return total
        finally:
            counter.close()

    def values(self) -> set[int]:
        """Every value (for tests: memory grows with them)."""
        out = set(array("q", self.memory))
        for pieces in self.runs:
            for values in _blocks([(Path(p), n) for p, n in pieces], 1 << 16):
                out.update(values)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DistinctSet):
            return NotImplemented
        return len(self) == len(other) and self.values() == other.values()

    __hash__ = None  # type: ignore[assignment]
