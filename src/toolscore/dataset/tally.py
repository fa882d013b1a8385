"""What the driver keeps of the records it takes, and a provisional tally it can absorb.

A :class:`Tally` is everything the records add up to: the mergeable
:class:`~.aggregate.Aggregate`, the score and task spills, the spool of record lines (what a
:class:`~.run.DatasetResult` iterates), and the first errors and traces without gold.

The byte ranges of a cut file are held until the file's last range is in (a trace read as
pieces in two ranges is then scored whole, :mod:`.regroup`), so their records would be taken
only then, by the driver alone, after the workers have finished: on the 100k-trace benchmark
about two seconds in which nothing else ran. Instead the driver takes each range's records as
it comes into a provisional tally of its own (its files beside the main ones): when the file
turns out to have no scattered trace, the usual case, the main tally absorbs it (a merge and
a few file appends); otherwise it is dropped and the held records are taken as before. So is
a tally whose aggregate counted tools past its cap together (merged, it would count under
``(other tools)`` what one by one is counted by name). A run that hands each record on
(``on_record``) or writes Parquet rows takes the held records after the last range: those
cannot be taken back.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import IO

from .aggregate import Aggregate, ScoreSpill, TaskSpill, pour
from .groups import GroupBy, Groups
from .records import TraceRecord, record_lines

__all__ = ["MAX_LISTED", "Tally"]

MAX_LISTED = 1000
"""Errors, traces without gold and gold without traces kept on the result (all are counted,
and every one is in the per-trace records)."""


class Tally:
    """The records taken so far (``take``); its files are named ``*{name}`` in ``work``;
    ``group_by``: the breakdowns to count (``--group-by``, and ``--task-regex``'s matches)."""

    def __init__(self, work: str, name: str = "", group_by: GroupBy | None = None) -> None:
        self.agg = Aggregate(groups=Groups(group_by) if group_by else None)
        self.scores = ScoreSpill(os.path.join(work, f"scores{name}.f64"))
        self.tasks = TaskSpill(work, name, len(group_by.dims) if group_by else 0)
        self.spool_path = os.path.join(work, f"records{name}.jsonl")
        self.spool: IO[bytes] = open(self.spool_path, "wb")
        self.errors: list[TraceRecord] = []
        self.missing_gold: list[str] = []
        self.count = 0

    def take(self, records: list[TraceRecord]) -> bytes:
        """Add the records in and write their lines to the spool; returns the lines."""
        agg, scores, tasks = self.agg, self.scores, self.tasks
        errors, missing_gold = self.errors, self.missing_gold
        for r in records:
            groups = agg.add(r)
            if r.score is not None:
                scores.add(r.score)
            if r.passed is not None:
                tasks.add(r.task, r.passed, groups)
            if r.status == "error" and len(errors) < MAX_LISTED:
                errors.append(r)
            if r.status == "no_gold" and len(missing_gold) < MAX_LISTED:
                missing_gold.append(r.trace_id)
        lines = record_lines(records)
        self.spool.write(lines)
        self.count += len(records)
        return lines

    def absorb(self, later: Tally, copies: Sequence[IO[bytes]] = ()) -> None:
        """Take in ``later``'s records, as if they had been taken here one by one after the
        ones before (``later`` is closed and its files removed). ``copies``: files that get
        ``later``'s record lines too (a JSON Lines per-trace file)."""
        self.agg.merge(later.agg)
        self.scores.absorb(later.scores)
        self.tasks.absorb(later.tasks)
        self.errors += later.errors[: MAX_LISTED - len(self.errors)]
        self.missing_gold += later.missing_gold[: MAX_LISTED - len(self.missing_gold)]
        later.spool.close()
        pour(later.spool_path, self.spool, *copies)
        self.count += later.count

    def close(self) -> None:
        self.spool.close()
        self.tasks.close()
        self.scores.close()

    def discard(self) -> None:
        """Close the tally and remove its files (those still there)."""
        self.close()
        for path in (self.spool_path, self.scores.path, *self.tasks.paths):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
