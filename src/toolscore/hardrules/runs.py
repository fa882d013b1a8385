"""A sequence of integers kept as runs of consecutive values.

The count rules' heads (:attr:`~toolscore.hardrules.state.SeqState.heads`) are call indices
and their lines: a step budget's are every call of a stretch that does not start the trace,
and in JSON Lines each call's line is the one after the previous call's. Kept as runs, such a
stretch's heads take a few numbers, not two array items a call (a part of the 1 GB benchmark
trace kept 8 MB of them, copied when its state was made, pickled to the main process and read
back there).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import compress
from operator import and_, not_, sub
from typing import Any

__all__ = ["Runs"]


class Runs:
    """Integers in order, as runs: run ``j`` holds the values ``starts[j]``,
    ``starts[j] + 1``... up to position ``ends[j]`` (exclusive) of the sequence.

    A value extends the last run when it is that run's last value plus one and not negative
    (negative values are markers; each is a run of its own), so a sequence has one form and
    two sequences are equal when their runs are.
    """

    __slots__ = ("ends", "starts")

    def __init__(self, values: Iterable[int] | None = None) -> None:
        self.starts: array[int] = array("q")
        self.ends: array[int] = array("q")
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    def __getitem__(self, k: int) -> int:
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("Runs index out of range")
        j = bisect_right(self.ends, k)
        before = self.ends[j - 1] if j else 0
        return self.starts[j] + (k - before)

    def __iter__(self) -> Iterator[int]:
        before = 0
        for start, end in zip(self.starts, self.ends, strict=True):
            yield from range(start, start + end - before)
            before = end

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Runs):
            return self.starts == other.starts and self.ends == other.ends
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        if value < 0:  # a marker starts a run of its own
            return value in self.starts
        return any(start <= value < start + length for start, length in self.runs())

    def __repr__(self) -> str:
        return f"Runs({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuilt, (self.starts, self.ends))

    def copy(self) -> Runs:
        return _rebuilt(array("q", self.starts), array("q", self.ends))

    def append(self, value: int) -> None:
        ends = self.ends
        if ends:
            last = self.starts[-1] + ends[-1] - (ends[-2] if len(ends) > 1 else 0) - 1
            if value == last + 1 and last >= 0:
                ends[-1] += 1
                return
        self.starts.append(value)
        self.ends.append(len(self) + 1)

    def extend(self, values: Iterable[int]) -> None:
        other = values if isinstance(values, Runs) else Runs.of(values)
        for start, length in other.runs():
            self._add_run(start, length)

    @classmethod
    def of(cls, values: Iterable[int]) -> Runs:
        """The runs of ``values``, found a pass in C at a time (no Python code per value)."""
        out = _rebuilt(array("q"), array("q"))
        if isinstance(values, range) and values.step == 1:
            if len(values):
                out._add_run(values.start, len(values))
            return out
        items = values if isinstance(values, array) else array("q", values)
        n = len(items)
        if not n:
            return out
        first = items[0]
        if first >= 0 and items == array("q", range(first, first + n)):  # the usual: one run
            out._add_run(first, n)
            return out
        before, after = items[:-1], items[1:]
        # value i goes on the run of value i - 1: one more, after a value that is no marker
        goes_on = map(and_, map(_ONE.__eq__, map(sub, after, before)), map(_MARKER.__lt__, before))
        firsts = [0, *compress(range(1, n), map(not_, goes_on))]
        out.starts = array("q", map(items.__getitem__, firsts))
        out.ends = array("q", firsts[1:])
        out.ends.append(n)
        return out

    def _add_run(self, start: int, length: int) -> None:
        if start < 0:  # markers: one run each
            for _ in range(length):
                self.append(start)
            return
        self.append(start)
        if length > 1:
            self.ends[-1] += length - 1

    def runs(self) -> Iterator[tuple[int, int]]:
        """``(first value, length)`` of each run."""
        before = 0
        for start, end in zip(self.starts, self.ends, strict=True):
            yield start, end - before
            before = end

    def head(self, n: int) -> Runs:
        """The first ``n`` values."""
        if n >= len(self):
            return self.copy()
        out = Runs()
        if n <= 0:
            return out
        j = bisect_right(self.ends, n - 1)
        out.starts = self.starts[: j + 1]
        out.ends = self.ends[: j + 1]
        out.ends[-1] = n
        return out

    def shifted(self, by: int, *, markers: bool = True) -> Runs:
        """Every value plus ``by`` (``markers=False``: the negative ones left as they are)."""
        out = self.copy()
        starts = out.starts
        for j, start in enumerate(starts):
            if markers or start >= 0:
                starts[j] = start + by
        return out


_ONE = 1
_MARKER = -1  # values above it are not markers


def _rebuilt(starts: array[int], ends: array[int]) -> Runs:
    runs = Runs()
    runs.starts = starts
    runs.ends = ends
    return runs
