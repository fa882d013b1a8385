"""The sequence metric: Levenshtein distance over tool names, kept as one DP column.

``sequence_accuracy`` is ``1 - distance / max(|gold|, |trace|)``, where the distance is
between the gold's tool names and the trace's. The trace is not kept: one DP column over the
gold names is updated per trace name (:class:`ColumnDistance`), or, from
:data:`BIT_PARALLEL_MIN_GOLD` gold calls on, two bit vectors on Python ints
(:class:`BitParallelDistance`, Myers/Hyyrö), so a trace call costs a dict lookup.

A part of a trace read on its own cannot know the column before it: it writes its names as
ids to an :class:`IdLog` instead, and the merge replays them after the calls before the part.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat

__all__ = [
    "BIT_PARALLEL_MIN_GOLD",
    "STEP_TABLE_MAX",
    "BitParallelDistance",
    "ColumnDistance",
    "IdLog",
    "Segment",
    "distance_tracker",
    "id_blocks",
]

BIT_PARALLEL_MIN_GOLD = 2
"""Gold lengths from which the bit-parallel Levenshtein column is used (measured faster)."""
STEP_TABLE_MAX = 1 << 16
"""Steps of the bit-parallel column kept in a table at most (a few MB)."""
SHARED_STEPS_MAX_GOLD = 63
"""Gold lengths up to which the step table is shared by every tracker (:data:`_SHARED_STEPS`)."""

_SHARED_STEPS: dict[int, tuple[int, int]] = {}
"""Steps of every tracker whose gold has at most :data:`SHARED_STEPS_MAX_GOLD` names: a step
depends on the gold's length alone (the state, the mask, the length in the key), so a
dataset's traces, each with its own gold, find most steps computed by those before them.
At most :data:`STEP_TABLE_MAX` entries, one tracker's table's worth."""

Segment = tuple[str, int]
"""An id log's file and its length in bytes when the segment was taken."""


class ColumnDistance:
    """Levenshtein distance to a fixed gold name list, one plain DP column per trace name."""

    __slots__ = ("col", "gold")

    def __init__(self, gold: Sequence[str]) -> None:
        self.gold = list(gold)
        self.col = list(range(len(self.gold) + 1))

    def fresh(self) -> ColumnDistance:
        """A tracker of the same gold at its start (the gold list shared: read-only)."""
        new = ColumnDistance.__new__(ColumnDistance)
        new.gold = self.gold
        new.col = list(range(len(self.gold) + 1))
        return new

    def step(self, name: str) -> None:
        col = self.col
        diag = col[0]
        col[0] = diag + 1
        i = 1
        for g in self.gold:
            up = col[i]
            best = diag if g == name else diag + 1
            if up + 1 < best:
                best = up + 1
            if col[i - 1] + 1 < best:
                best = col[i - 1] + 1
            col[i] = best
            diag = up
            i += 1

    def run(self, names: Iterable[str]) -> None:
        for name in names:
            self.step(name)

    def snapshot(self) -> tuple[int, ...]:
        """The column, as a value (:meth:`restore` takes it back)."""
        return tuple(self.col)

    def restore(self, snapshot: tuple[int, ...]) -> None:
        self.col = list(snapshot)

    def replay(self, ids: Iterable[int], names: list[str]) -> None:
        """Step through names given as ids into ``names`` (see :class:`IdLog`)."""
        self.run(map(names.__getitem__, ids))

    @property
    def distance(self) -> int:
        return self.col[-1]


class BitParallelDistance:
    """The same distance by Hyyrö's bit-vector form of Myers' algorithm.

    Bit ``i`` of the vertical delta vectors stands for gold row ``i + 1``; a trace name costs a
    dozen integer operations however long the gold list is. The column's state (the two
    vectors) takes few values in practice, so each step is also kept in a table, keyed by
    state, match mask and gold length: a trace name then costs one lookup. Golds of up to
    :data:`SHARED_STEPS_MAX_GOLD` names share one table (the traces of a dataset, each with
    its own gold, then find their steps computed); a longer gold has a table of its own. A
    table stops growing at :data:`STEP_TABLE_MAX` entries; past that, a tracker computes
    every step it does not find.
    """

    __slots__ = ("dist", "full", "m", "peq", "state", "table", "top")

    def __init__(self, gold: Sequence[str]) -> None:
        m = len(gold)
        peq: dict[str, int] = {}
        for i, name in enumerate(gold):
            peq[name] = peq.get(name, 0) | (1 << i)
        self.peq = peq
        self.m = m
        self.full = (1 << m) - 1
        self.top = 1 << (m - 1)
        self.state = self.full  # vp | vn << m, with vp = full and vn = 0
        self.dist = m
        self.table: dict[int, tuple[int, int]] | None = (
            _SHARED_STEPS if m <= SHARED_STEPS_MAX_GOLD else {}
        )
        """((state << m | mask) << 6 | m % 64) -> (next state, change of the distance); None
        once full."""

    def fresh(self) -> BitParallelDistance:
        """A tracker of the same gold at its start, sharing this one's masks (read-only); its
        step table as a new tracker's (the shared one, or its own: a long gold's table lives
        no longer than its tracker)."""
        new = BitParallelDistance.__new__(BitParallelDistance)
        new.peq, new.m, new.full, new.top = self.peq, self.m, self.full, self.top
        new.state, new.dist = self.full, self.m
        new.table = _SHARED_STEPS if self.m <= SHARED_STEPS_MAX_GOLD else {}
        return new

    def step(self, name: str) -> None:
        self.run([name])

    def snapshot(self) -> tuple[int, ...]:
        """The state and the distance, as a value (:meth:`restore` takes it back)."""
        return (self.state, self.dist)

    def restore(self, snapshot: tuple[int, ...]) -> None:
        self.state, self.dist = snapshot

    def run(self, names: Iterable[str]) -> None:
        """Step through ``names``."""
        self.run_masks(map(self.peq.get, names, repeat(0)))

    def replay(self, ids: Iterable[int], names: list[str]) -> None:
        """Step through names given as ids into ``names`` (see :class:`IdLog`)."""
        masks = [self.peq.get(name, 0) for name in names]
        self.run_masks(map(masks.__getitem__, ids))

    def run_masks(self, masks: Iterable[int]) -> None:
        """Step through names given as their match masks."""
        table = self.table
        if table is None:
            self.state, self.dist = self._compute(self.state, self.dist, masks)
            return
        m = self.m
        low = m & 63
        state = self.state
        dist = self.dist
        get = table.get
        masks = iter(masks)
        for mask in masks:
            key = (((state << m) | mask) << 6) | low
            known = get(key)
            if known is None:
                known = self._compute(state, 0, (mask,))
                if len(table) >= STEP_TABLE_MAX:  # full: the rest by the bit operations
                    self.table = None
                    state, change = known
                    self.state, self.dist = self._compute(state, dist + change, masks)
                    return
                table[key] = known
            state, change = known
            dist += change
        self.state = state
        self.dist = dist

    def _compute(self, state: int, dist: int, masks: Iterable[int]) -> tuple[int, int]:
        """The state and distance after ``masks`` from ``state`` and ``dist``, by the bit
        operations alone (the loop keeps the state in locals)."""
        m = self.m
        top = self.top
        full = self.full
        vp = state & full
        vn = state >> m
        for mask in masks:
            x = mask | vn
            d0 = (((x & vp) + vp) ^ vp) | x
            hp = vn | ~(d0 | vp)
            hn = d0 & vp
            if hp & top:
                dist += 1
            elif hn & top:
                dist -= 1
            hp = (hp << 1) | 1
            vp = ((hn << 1) | ~(d0 | hp)) & full
            vn = hp & d0 & full
        return vp | (vn << m), dist

    @property
    def distance(self) -> int:
        return self.dist


def distance_tracker(gold: Sequence[str]) -> ColumnDistance | BitParallelDistance:
    """The tracker for ``gold``'s length."""
    if len(gold) >= BIT_PARALLEL_MIN_GOLD:
        return BitParallelDistance(gold)
    return ColumnDistance(gold)


class IdLog:
    """A part's tool names as 4-byte ids into ``names`` (0: not a gold name), in a temporary
    file (4 bytes a call on disk, nothing in memory), for the merge to replay. The file is
    removed when the log is garbage collected (a forked reader leaves without collecting:
    its files live in a directory its parent removes)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._ids = {name: i for i, name in enumerate(names) if i}
        fd, self.path = tempfile.mkstemp(prefix="toolscore-sequence-")
        self._file = os.fdopen(fd, "wb")
        self._finalizer = weakref.finalize(self, _remove, self._file, self.path)

    def record(self, tools: list[str]) -> None:
        array("I", map(self._ids.get, tools, repeat(0))).tofile(self._file)

    def segment(self) -> Segment:
        """The ids written so far (the file only grows)."""
        self._file.flush()
        return (self.path, self._file.tell())


def _remove(file: object, path: str) -> None:
    try:
        file.close()  # type: ignore[attr-defined]
        os.unlink(path)
    except OSError:
        pass


def id_blocks(segments: Iterable[Segment]) -> Iterator[array[int]]:
    """The ids of ``segments``, in order, in arrays of at most 65,536."""
    for path, size in segments:
        left = size // 4
        with open(path, "rb") as fh:
            while left > 0:
                block = array("I")
                try:
                    block.fromfile(fh, min(left, 1 << 16))
                except EOFError:
                    if block:
                        yield block
                    break
                left -= len(block)
                yield block
