"""Reading a multi-trace JSON Lines file: each line's trace id (and task), decoded a chunk
at a time without the rest of the line; where the traces of a byte range begin and end; and
its traces, one at a time, with their line numbers and offsets."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from typing import IO, Any

import msgspec

from ..limits import read_limits

READ_BYTES = 1 << 20
"""How much of a multi-trace file is read at a time (its ids are decoded a chunk at a time)."""


class IdReader:
    """Reads a line's trace id (and task field) without decoding the rest of it (msgspec
    skips unknown fields in C)."""

    def __init__(self, key: str, task_key: str | None) -> None:
        fields: list[tuple[str, Any, Any]] = [("k", Any, None)]
        rename = {"k": key}
        if task_key:
            fields.append(("t", Any, None))
            rename["t"] = task_key
        cls = msgspec.defstruct("_Ids", fields, rename=rename, gc=False)
        self._decode = msgspec.json.Decoder(cls).decode
        self.with_task = bool(task_key)
        self.key = key

        self._decode_lines = msgspec.json.Decoder(cls).decode_lines
        self.kinds = 0
        """The kinds of ids read: :data:`STRING_ID` and :data:`OTHER_ID` bits."""

    def read(self, line: bytes) -> tuple[str | None, str | None] | None:
        """``(id, task)``; ``None`` for a line that is not a JSON object."""
        try:
            obj = self._decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None  # (nested too deeply: the trace's decoder tells how deep)
        return self._ids(obj)

    def _ids(self, obj: Any) -> tuple[str | None, str | None]:
        key = obj.k
        if type(key) is str:
            self.kinds |= STRING_ID
        elif key is not None:
            key = self._other(key)
        if not self.with_task:
            return (key, None)
        task = obj.t
        return (key, None if task is None else str(task))

    def read_lines(self, body: bytes, lines: list[bytes]) -> ChunkIds:
        """The ids of ``lines`` (``body`` split at its newlines), in one decoding call for the
        whole chunk when every line is one JSON object: then, when every one has an id, as
        ``(ids, tasks)`` (``tasks`` None without a task key), taken out by C loops; else what
        :meth:`read` gives for each line, with :data:`BLANK` for a blank line
        (:func:`line_ids` reads either form)."""
        objs = None
        if all(map(bytes.strip, lines)):  # no blank line
            try:
                objs = self._decode_lines(body)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                objs = None
        # as many values as lines, none blank: one value on each line
        if objs is None or len(objs) != len(lines):
            read = self.read
            return [read(line) if line.strip() else BLANK for line in lines]
        keys = list(map(_KEY, objs))
        kinds = set(map(type, keys))
        if not kinds <= _STR:
            if None in keys:
                ids = self._ids
                return [ids(obj) for obj in objs]
            if str in kinds:
                self.kinds |= STRING_ID
            keys = [key if type(key) is str else self._other(key) for key in keys]
        elif keys:
            self.kinds |= STRING_ID
        if not self.with_task:
            return keys, None
        return keys, [None if task is None else str(task) for task in map(_TASK, objs)]

    def _other(self, key: Any) -> str:
        """A non-string id (a number) as text, counted."""
        self.kinds |= OTHER_ID
        return str(key)

    def mixed(self, source: str) -> str | None:
        """What to say when the ids read were strings and numbers alike (``1`` and ``"1"``
        name one trace: ids compare as text), or None."""
        if self.kinds != STRING_ID | OTHER_ID:
            return None
        return (
            f"{source}: the {self.key!r} ids are strings on some lines and numbers on others; "
            'ids compare as text, so a number and its digits as a string (1 and "1") name '
            "one trace"
        )


STRING_ID = 1
OTHER_ID = 2

_KEY = attrgetter("k")
_TASK = attrgetter("t")
_STR = {str}

BLANK = ("", "")
"""What :meth:`IdReader.read_lines` gives for a blank line."""

ChunkIds = list[Any] | tuple[list[str], list[str | None] | None]
"""A chunk's ids as :meth:`IdReader.read_lines` gives them: one ``(id, task)`` (or
:data:`BLANK`, or None for a line that is not a JSON object) per line, or, when every line
has an id, ``(ids, tasks)``."""


def line_ids(got: ChunkIds) -> list[Any]:
    """A chunk's ids, either form, one per line (see :data:`ChunkIds`)."""
    if isinstance(got, list):
        return got
    keys, tasks = got
    if tasks is None:
        return [(key, None) for key in keys]
    return list(zip(keys, tasks, strict=True))


def id_chunks(
    f: IO[bytes], ids: IdReader, start: int = 0
) -> Iterator[tuple[int, bytes, list[bytes], ChunkIds]]:
    """The lines of ``f`` from ``start`` with their ids, a chunk of whole lines at a time:
    ``(offset of the first line, the chunk, its lines without their newlines, their ids)``
    (:meth:`IdReader.read_lines`). The file's last line is given a newline it lacks."""
    pos = start
    pending: list[bytes] = []  # a line begun in earlier chunks (joined once, at its newline)
    while True:
        chunk = f.read(READ_BYTES)
        if not chunk:
            break
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending.append(chunk)
            continue
        if pending:
            pending.append(chunk[:cut])
            body = b"".join(pending)
        else:
            body = chunk[:cut]
        pending = [chunk[cut:]] if cut < len(chunk) else []
        lines = body.split(b"\n")
        lines.pop()
        yield pos, body, lines, ids.read_lines(body, lines)
        pos += len(body)
    if pending:
        rest = b"".join(pending)
        yield pos, rest + b"\n", [rest], [ids.read(rest) if rest.strip() else BLANK]


@dataclass
class Trace:
    """One trace's lines as read, with where they came from."""

    trace_id: str | None
    task: str | None
    lines: list[bytes]
    """The trace's bytes, in pieces of whole lines (each ends with a newline)."""
    linenos: list[int]
    """Each line's number, counted from the part's start (1-based)."""
    offset: int
    """The first line's byte offset in the file."""
    size: int = 0
    """The bytes of all its lines, counted on past
    :attr:`~toolscore.limits.ReadLimits.max_trace_bytes` (``--max-trace-bytes``), where its
    lines stop being held: :attr:`lines` is emptied and :attr:`linenos` keeps the first (the
    trace is then an error record, not evaluated: :func:`~._feed.too_large`)."""
    limit: int = field(default_factory=lambda: read_limits().max_trace_bytes)
    """The bound on :attr:`size`, read once when the trace begins."""

    def keep(self, piece: bytes, first: int, count: int = 1) -> None:
        """Add ``piece``: ``count`` whole lines numbered from ``first``."""
        self.size += len(piece)
        if self.size > self.limit:
            if self.lines:
                self.lines.clear()
                del self.linenos[1:]
            elif not self.linenos:
                self.linenos.append(first)
            return
        self.lines.append(piece)
        if count == 1:
            self.linenos.append(first)
        else:
            self.linenos.extend(range(first, first + count))


def iter_lines(f: IO[bytes], start: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` from ``start``; each line keeps its newline (the last may lack it)."""
    pos = start
    pending: list[bytes] = []  # a line begun in earlier chunks (joined once, at its newline)
    while True:
        chunk = f.read(READ_BYTES)
        if not chunk:
            break
        lines = chunk.split(b"\n")
        if len(lines) == 1:
            pending.append(chunk)
            continue
        if pending:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
        last = lines.pop()
        pending = [last] if last else []
        for line in lines:
            yield pos, line + b"\n"
            pos += len(line) + 1
    if pending:
        yield pos, b"".join(pending) + b"\n"


def _previous_id(
    f: IO[bytes], start: int, ids: IdReader, end: int | None = None
) -> tuple[str | None, int]:
    """The offset of the first line that starts at or after ``start``, and the id of the trace
    the lines before it continue: the id of the nearest line before it that has one (blank
    and malformed lines, and JSON objects without an id, go with the trace before them, as
    :func:`contiguous_traces` reads a file); ``None`` when no line before it has one. With
    ``end``: ``(None, end)`` when no line starts before ``end``."""
    begin = next_line(f, start, end)
    if end is not None and begin >= end:
        return None, end
    return id_before(f, begin, ids, named=True), begin


def trace_start(f: IO[bytes], ids: IdReader, start: int, size: int) -> int:
    """Where the traces that a byte range from ``start`` reads as its own begin (see
    :func:`contiguous_traces`): the first line at or after ``start``, past the lines that
    still belong to the trace before it; ``size`` (the file's) when none is left."""
    if start <= 0:
        return 0
    skip, begin = _previous_id(f, start, ids)
    if skip is None:
        return min(begin, size)
    f.seek(begin)
    for pos, _, lines, got in id_chunks(f, ids, begin):
        for line, one in zip(lines, line_ids(got), strict=True):
            if not _continues(one, skip):
                return pos
            pos += len(line) + 1
    return size


def _continues(one: Any, skip: str) -> bool:
    """Whether a line, by the ids :func:`line_ids` gives it, still goes with the trace
    ``skip`` before it: a blank or malformed line, a JSON object without an id, or a line of
    that trace (where a byte range's own traces begin, :func:`contiguous_traces`)."""
    return one is BLANK or one is None or one[0] is None or one[0] == skip


BACK_BYTES = 1 << 16
"""The first block :func:`id_before` reads; each next one is twice as large, up to
:data:`READ_BYTES` (a long run of lines without an id is read in blocks, not line by line)."""


def id_before(f: IO[bytes], pos: int, ids: IdReader, named: bool = False) -> str | None:
    """What :meth:`IdReader.read` gives as the id of the nearest line before offset ``pos`` (a
    line start) that is a JSON object (with ``named``, one that has an id); ``None`` when
    none is. Blank and malformed lines are passed over; only a line ending with ``}`` can be
    an object, so only those are decoded (and only those are held whole: a long line that
    does not end so is passed over block by block, each byte read once)."""
    size = BACK_BYTES
    hi = pos
    pieces: list[bytes] = []  # the line the previous block began inside, its pieces last first
    ends: bool | None = None  # whether that line ends with "}" (None: only blanks seen yet)
    while hi > 0:
        lo = max(0, hi - size)
        f.seek(lo)
        *whole, last = f.read(hi - lo).split(b"\n")
        if ends is not False:
            pieces.append(last)
            if ends is None and last.strip():
                ends = last.rstrip().endswith(b"}")
                if not ends:
                    pieces = []
        if whole or lo == 0:  # the carried line is complete: it starts in this block
            if ends:
                got = _object_id(b"".join(reversed(pieces)), ids, named)
                if got is not None:
                    return got[0]
            for line in reversed(whole[1:] if lo > 0 else whole):
                got = _object_id(line, ids, named)
                if got is not None:
                    return got[0]
            if whole and lo > 0:
                first = whole[0]
                pieces = [first]
                ends = first.rstrip().endswith(b"}") if first.strip() else None
        hi = lo
        size = min(size * 2, READ_BYTES)
    return None


def _object_id(line: bytes, ids: IdReader, named: bool) -> tuple[str | None, str | None] | None:
    """What :func:`id_before` takes from ``line``: its ids when it is a JSON object (with
    ``named``, one that has an id), else None."""
    if not line.rstrip().endswith(b"}"):
        return None
    got = ids.read(line)
    if got is None or (named and got[0] is None):
        return None
    return got


def count_line_starts(f: IO[bytes], begin: int, end: int) -> int:
    """How many lines start in ``[begin, end)``, ``f`` at ``begin`` (a line start): the one
    at ``begin``, and one after each newline before ``end - 1``."""
    if begin >= end:
        return 0
    count = 1
    pos = begin
    while pos < end - 1:
        piece = f.read(min(READ_BYTES, end - 1 - pos))
        if not piece:
            break
        count += piece.count(b"\n")
        pos += len(piece)
    return count


def next_line(f: IO[bytes], pos: int, end: int | None = None) -> int:
    """The offset of the first line that starts at or after ``pos`` (the end of the file when
    none does); with ``end``, looked for before ``end`` only (``end`` when none starts
    before it: a range inside one long line is passed over without reading the rest of it)."""
    if pos == 0:
        return 0
    f.seek(pos - 1)
    at = pos - 1
    while end is None or at < end:
        piece = f.read(65536 if end is None else min(65536, end - at))
        if not piece:
            return at
        cut = piece.find(b"\n")
        if cut >= 0:
            return at + cut + 1
        at += len(piece)
    return end


def contiguous_traces(
    f: IO[bytes],
    ids: IdReader,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Trace | tuple[int, int, str]]:
    """The traces of a contiguous multi-trace file (or of the byte range ``[start, end)``: the
    traces whose first line starts in it, read to their last line), one at a time.

    Yields traces and, for a line without a readable id, ``(lineno, offset, problem)``: a
    malformed line inside a trace goes with that trace (its decoder reports it). The last
    value yielded is ``(lines read, offset reached, "")``.
    """
    skip: str | None = None
    begin = 0
    if start > 0:
        skip, begin = _previous_id(f, start, ids, end)
        if end is not None and begin >= end:  # no line starts in the range
            yield (0, begin, "")
            return
    f.seek(begin)
    current: Trace | None = None
    lineno = 0
    reached = begin
    for pos, body, lines, got in id_chunks(f, ids, begin):
        if (
            isinstance(got, tuple)
            and skip is None
            and (end is None or pos + len(body) - len(lines[-1]) - 1 < end)
        ):
            # the usual chunk: whole JSON objects with ids, none past the end; each run of
            # one id is one slice of the chunk
            current = yield from _runs(current, pos, body, lines, got, lineno)
            lineno += len(lines)
            reached = pos + len(body)
            continue
        for line, one in zip(lines, line_ids(got), strict=True):
            offset, line = pos, line + b"\n"
            pos += len(line)
            blank = one is BLANK
            if blank:
                one = None
            if skip is not None:
                # the end of the trace the part before this one started (its lines, and the
                # blank, malformed and id-less lines that go with it): that part reads them
                if end is not None and offset >= end:  # no trace of this range's own
                    yield (lineno, reached, "")
                    return
                if _continues(one, skip):  # (a blank line's ``one`` is None by now)
                    continue
                skip = None
            if (
                end is not None
                and offset >= end
                and (
                    current is None
                    or (one is not None and one[0] is not None and one[0] != current.trace_id)
                )
            ):
                if current is not None:
                    yield current
                yield (lineno, reached, "")
                return
            lineno += 1
            reached = offset + len(line)
            if blank:
                continue
            if one is None:
                if current is not None:
                    current.keep(line, lineno)
                else:
                    yield (lineno, offset, "malformed JSON line (not a JSON object)")
                continue
            trace_id, task = one
            if trace_id is None:
                yield (lineno, offset, f"the line has no {ids.key!r}")
                continue
            if current is None or trace_id != current.trace_id:
                if current is not None:
                    yield current
                current = Trace(trace_id, task, [], [], offset)
            current.keep(line, lineno)
    if current is not None:
        yield current
    yield (lineno, reached, "")


def _runs(
    current: Trace | None,
    pos: int,
    body: bytes,
    lines: list[bytes],
    ids: tuple[list[str], list[str | None] | None],
    lineno: int,
) -> Generator[Trace, None, Trace | None]:
    """The traces a chunk of id-bearing lines completes, each run of one id as one slice of
    the chunk (the first run continues ``current`` when it has its id); returns the trace the
    chunk's last run belongs to, which the next chunk may continue."""
    keys, tasks = ids
    at = 0  # the run's start in body
    first = 0  # the run's first line
    for trace_id, run in groupby(keys):
        count = len(list(run))
        after = first + count
        size = sum(map(len, lines[first:after])) + count
        if current is None or current.trace_id != trace_id:
            if current is not None:
                yield current
            task = None if tasks is None else tasks[first]
            current = Trace(trace_id, task, [], [], pos + at)
        current.keep(body[at : at + size], lineno + first + 1, count)
        at += size
        first = after
    return current
