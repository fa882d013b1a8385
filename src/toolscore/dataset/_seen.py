"""The trace ids a dataset run has seen, in an SQLite file: a second sighting is an error
record, and the gold ids never seen are gold without a trace."""

from __future__ import annotations

from collections.abc import Iterator

from ._sqlite import scratch
from .gold import GoldSpec, base_name, gold_ids
from .records import TraceRecord
from .regroup import ids_in


class _Seen:
    """Trace ids seen so far, on disk: a second sighting is an error record. With
    ``by_base_name`` (gold matched by a trace's base name too), the base names of the ids
    are kept as well, so gold used that way is not "gold without a trace"."""

    def __init__(self, path: str, by_base_name: bool = False) -> None:
        self.conn = scratch(path)
        self.conn.execute("CREATE TABLE seen (id TEXT PRIMARY KEY) WITHOUT ROWID")
        self.by_base_name = by_base_name
        self.used = False
        """Whether an id was added (else no record can be a duplicate)."""
        if by_base_name:
            self.conn.execute("CREATE TABLE bases (id TEXT PRIMARY KEY) WITHOUT ROWID")

    def _bases(self, records: list[TraceRecord]) -> None:
        if self.by_base_name:
            self.conn.executemany(
                "INSERT OR IGNORE INTO bases VALUES (?)",
                [(base_name(r.trace_id),) for r in records if "/" in r.trace_id],
            )

    def held_duplicates(self, records: list[TraceRecord]) -> list[TraceRecord]:
        """For records taken provisionally (a cut file's, :mod:`.tally`): those whose id was
        seen before the file. The file's own ids are not added until :meth:`add_held` (an id
        that comes back within the file is a trace read as pieces: the provisional tally is
        then dropped, and its records go through :meth:`add`)."""
        self._bases(records)
        if not self.used:
            return []
        seen = ids_in(self.conn, "seen", [r.trace_id for r in records if r.trace_id])
        return [r for r in records if r.trace_id in seen] if seen else []

    def add_held(self, index: str | None) -> None:
        """The provisionally taken file's ids are seen: the table ``ids`` of the SQLite file
        ``index``, the regrouping's (:meth:`~.regroup.Regroup.index`), which holds every one:
        each record of a byte range with a trace id is a piece (it has its line)."""
        self.conn.commit()
        if index is not None:
            self.conn.execute("ATTACH DATABASE ? AS held", (index,))
            self.conn.execute("PRAGMA held.cache_size=-256")  # (read once, in order)
            try:
                self.conn.execute("INSERT OR IGNORE INTO seen SELECT id FROM held.ids")
                self.conn.commit()
            finally:
                self.conn.execute("DETACH DATABASE held")
        self.used = True

    def add(self, records: list[TraceRecord]) -> list[TraceRecord]:
        """Records whose id was seen before (in this batch or an earlier one)."""
        ids = [(r.trace_id,) for r in records if r.trace_id]
        self._bases(records)
        self.used = self.used or bool(ids)
        self.conn.commit()  # a rollback below must undo this batch only
        before = self.conn.total_changes
        self.conn.executemany("INSERT OR IGNORE INTO seen VALUES (?)", ids)
        if self.conn.total_changes - before == len(ids):
            return []
        # rare: find which ones (each record's id against those before it)
        self.conn.rollback()
        dup: list[TraceRecord] = []
        for r in records:
            if not r.trace_id:
                continue
            cur = self.conn.execute("INSERT OR IGNORE INTO seen VALUES (?)", (r.trace_id,))
            if cur.rowcount == 0:
                dup.append(r)
        return dup

    def missing(self, spec: GoldSpec) -> Iterator[str]:
        self.conn.commit()
        if spec.kind == "keyed" and spec.path is not None:
            # one query over the two indexes, in SQLite: not one query per gold entry
            self.conn.execute("ATTACH DATABASE ? AS g", (spec.path,))
            unseen = "SELECT id FROM g.gold WHERE id NOT IN (SELECT id FROM seen)"
            if self.by_base_name:
                unseen += " AND id NOT IN (SELECT id FROM bases)"
            try:
                for (gold_id,) in self.conn.execute(unseen + " ORDER BY id"):
                    yield gold_id
            finally:
                self.conn.execute("DETACH DATABASE g")
            return
        for gold_id in gold_ids(spec):
            row = self.conn.execute("SELECT 1 FROM seen WHERE id = ?", (gold_id,)).fetchone()
            if row is None and self.by_base_name:
                row = self.conn.execute("SELECT 1 FROM bases WHERE id = ?", (gold_id,)).fetchone()
            if row is None:
                yield gold_id

    def close(self) -> None:
        self.conn.close()
