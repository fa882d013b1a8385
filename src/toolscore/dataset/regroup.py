"""Lines of one trace that are not contiguous in their file, scored as one trace.

A multi-trace JSON Lines file is read trace by trace when its first MiB shows no trace id
coming back after another one (:func:`~.inputs.interleaved`), and a large one is cut into
byte ranges read by different workers. A trace whose lines come back later (past that MiB,
or in another byte range) is then read as two or more *pieces*, each its own record. The
driver hands each part's records to :class:`Regroup` before anything is written:

* a part of whole files: pieces of one trace of one file are all in the part's records; when
  there are any, the trace is read again whole (:func:`gather`) and its record replaces the
  pieces', at the first piece's place;
* the byte ranges of one cut file: their records are held in a spool file on disk (memory
  stays flat) and the file's ids in SQLite, where a piece of a trace seen in an earlier range
  is found; when the file's last range is done the pieces are gathered the same way and the
  held records released in order, the gathered trace in its first piece's place.

:func:`gather` re-reads the file and keeps only the lines of the traces asked for, grouped in
bounded memory (:class:`~.inputs.Grouper` spills to disk past its budget), so the cost is one
more pass over the file only when a file does have scattered traces. Two *files* holding one
trace id stay an error (the driver's duplicate check), as before.
"""

from __future__ import annotations

import io
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

from ..limits import value_limit
from ..redact import pii_redaction
from ._feed import too_large
from ._sqlite import scratch
from .gold import gold_lookup
from .inputs import SNIFF_BYTES, Grouper, IdReader, Part, detect_key, iter_lines, open_lines
from .records import TraceRecord, read_records, write_records
from .worker import GOLD_ERRORS, Config, evaluate_one, gold_error_record

__all__ = ["Regroup", "gather", "ids_in"]


def ids_in(db: sqlite3.Connection, table: str, ids: list[str]) -> set[str]:
    """Those of ``ids`` that the ``id`` column of ``table`` holds (asked 500 at a time)."""
    found: set[str] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        rows = db.execute(f"SELECT id FROM {table} WHERE id IN ({marks})", chunk)
        found.update(trace_id for (trace_id,) in rows)
    return found


def _is_piece(record: TraceRecord) -> bool:
    """A record read from a multi-trace file (one of possibly several pieces)."""
    return bool(record.trace_id) and record.line is not None and record.source is not None


class Regroup:
    """See the module docstring. In part order, with records shifted to file lines: a part of
    whole files gives its records to :meth:`whole`; a byte range of a cut file (:meth:`holds`
    it) to :meth:`hold`; after the file's :meth:`last` range, :meth:`release` gives the held
    records back (or :meth:`drop` forgets them, when they were taken as they came)."""

    def __init__(self, parts: list[Part], cfg: Config, work: str) -> None:
        self.cfg = cfg
        self.work = work
        self._last: dict[str, int] = {}
        self._paths: dict[str, str] = {}
        """What is read for a source: its decompressed copy (:attr:`~.inputs.Input.path`)."""
        for part in parts:
            if part.end is not None:
                self._last[part.inputs[0].url] = part.index
            for item in part.inputs:
                if item.local is not None:
                    self._paths[item.url] = item.local
        self._db: sqlite3.Connection | None = None
        self._index = os.path.join(work, "regroup.sqlite")
        self._spool: Any = None
        self._spool_url: str | None = None
        self._scattered: set[str] = set()
        self._key: str | None = None
        self.regrouped = 0
        """Traces read as pieces and scored whole."""
        self.held = 0
        """Records held now (for the progress)."""

    # -- parts of whole files --------------------------------------------------------------

    def holds(self, part: Part) -> bool:
        """Whether ``part`` is a byte range of a cut file, whose records are held."""
        return part.end is not None and part.inputs[0].url in self._last

    def last(self, part: Part) -> bool:
        """Whether ``part`` is the last byte range of its file (:meth:`holds` it)."""
        return part.index == self._last[part.inputs[0].url]

    @property
    def scattered(self) -> bool:
        """Whether a trace of the file held now came as pieces so far."""
        return bool(self._scattered)

    def whole(self, records: list[TraceRecord]) -> list[TraceRecord]:
        """A part of whole files' records, each trace of one file read as pieces scored
        whole, in its first piece's place."""
        seen: dict[tuple[str, str], int] = {}
        pieces: dict[str, set[str]] = {}
        for record in records:
            if not _is_piece(record):
                continue
            assert record.source is not None
            key = (record.source, record.trace_id)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] == 2:
                pieces.setdefault(record.source, set()).add(record.trace_id)
        if not pieces:
            return records
        whole: dict[tuple[str, str], TraceRecord] = {}
        for url, ids in pieces.items():
            found = gather(url, ids, self.cfg, None, self._paths.get(url))
            for trace_id, record in found.items():
                whole[(url, trace_id)] = record
        out: list[TraceRecord] = []
        done: set[tuple[str, str]] = set()
        for record in records:
            key = (record.source or "", record.trace_id)
            if _is_piece(record) and key in whole:
                if key not in done:
                    done.add(key)
                    out.append(_in_place_of(whole[key], record))
                    self.regrouped += 1
                continue
            out.append(record)
        return out

    # -- the byte ranges of a cut file ---------------------------------------------------------

    def hold(self, part: Part, records: list[TraceRecord]) -> None:
        """Hold records of a byte range of a cut file (:meth:`holds` it)."""
        url = part.inputs[0].url
        if self._spool_url != url:
            self._start(url, part.key)
        assert self._db is not None and self._spool is not None
        counts: dict[str, int] = {}
        for r in records:
            if _is_piece(r):
                counts[r.trace_id] = counts.get(r.trace_id, 0) + 1
        self._scattered.update(t for t, n in counts.items() if n > 1)
        distinct = list(counts)
        self._scattered |= ids_in(self._db, "ids", distinct)  # read by an earlier range
        self._db.executemany("INSERT OR IGNORE INTO ids VALUES (?)", [(t,) for t in distinct])
        write_records(self._spool, records)
        self.held += len(records)

    def _start(self, url: str, key: str | None) -> None:
        self._close_file()
        self._db = scratch(self._index)
        self._db.execute("DROP TABLE IF EXISTS ids")
        self._db.execute("CREATE TABLE ids (id TEXT PRIMARY KEY) WITHOUT ROWID")
        self._spool = open(os.path.join(self.work, "regroup.held"), "w+b")
        self._spool_url = url
        self._scattered = set()
        self._key = key

    def release(self) -> Iterator[list[TraceRecord]]:
        """The held records in batches, each scattered trace scored whole in its first
        piece's place (after the file's last range)."""
        url, spool = self._spool_url, self._spool
        if url is None or spool is None:
            return  # (no range of the file had a record)
        whole = (
            gather(url, self._scattered, self.cfg, self._key, self._paths.get(url))
            if self._scattered
            else {}
        )
        done: set[str] = set()
        spool.seek(0)
        for held in read_records(spool):  # (a range's records: one frame)
            batch: list[TraceRecord] = []
            for record in held:
                if _is_piece(record) and record.trace_id in whole:
                    if record.trace_id in done:
                        continue
                    done.add(record.trace_id)
                    record = _in_place_of(whole[record.trace_id], record)
                    self.regrouped += 1
                batch.append(record)
            yield batch
        self.held = 0
        self._close_file()

    def index(self) -> str | None:
        """The SQLite file whose table ``ids`` holds the distinct ids of the held file's
        pieces (committed, for another connection to read), or None when none is held."""
        if self._db is None:
            return None
        self._db.commit()
        return self._index

    def drop(self) -> None:
        """Forget the held records: they were taken as they came (no trace of the file came
        as pieces)."""
        self.held = 0
        self._close_file()

    def _close_file(self) -> None:
        if self._spool is not None:
            self._spool.close()
            os.unlink(self._spool.name)
            self._spool = None
        if self._db is not None:
            self._db.close()
            self._db = None
        self._spool_url = None


def _in_place_of(whole: TraceRecord, first: TraceRecord) -> TraceRecord:
    """The gathered trace's record where its first piece was."""
    whole.task = first.task
    whole.fields = first.fields
    whole.order = first.order
    return whole


def gather(
    url: str, ids: set[str], cfg: Config, key: str | None, path: str | None = None
) -> dict[str, TraceRecord]:
    """Read ``url`` again (or ``path``, its decompressed copy) and evaluate the traces ``ids``
    whole: each one's lines wherever they are in the file, as the file's reader attaches them
    (a line without a readable id goes with the trace before it). Line numbers are the
    file's."""
    out: dict[str, TraceRecord] = {}
    with pii_redaction(cfg.pii), value_limit(cfg.max_value_bytes):
        with open_lines(path or url, cfg.storage_options) as f:
            if key is None:
                head = f.read(SNIFF_BYTES)
                f.seek(0)
                key = detect_key(head, cfg.trace_key)
                if key is None:
                    return out
            reader = IdReader(key, cfg.task_key)
            grouper = Grouper(directory=cfg.spill_dir)
            lineno = 0
            current: str | None = None
            for offset, line in iter_lines(f):
                lineno += 1
                if not line.strip():
                    continue
                got = reader.read(line)
                if got is None:
                    if current is not None:
                        grouper.add(current, None, line, lineno, offset)
                    continue
                if got[0] is None:
                    continue
                current = got[0] if got[0] in ids else None
                if current is not None:
                    grouper.add(current, got[1], line, lineno, offset)
        gold = gold_lookup(cfg.gold)
        for trace in grouper.traces():
            trace_id = trace.trace_id or ""
            try:
                calls = gold.get(trace_id, None)
            except GOLD_ERRORS as exc:
                first = trace.linenos[0] if trace.linenos else None
                out[trace_id] = gold_error_record(trace_id, url, exc, line=first)
                continue
            refused = too_large(trace, url)  # (its lines were not held past the bound)
            if refused is not None:
                out[trace_id] = refused
                continue
            out[trace_id] = evaluate_one(
                cfg,
                trace_id,
                trace.task or trace_id,
                io.BytesIO(b"".join(trace.lines)),
                calls,
                source=url,
                linenos=trace.linenos,
                line=trace.linenos[0] if trace.linenos else None,
                offset=trace.offset,
            )
    return out
