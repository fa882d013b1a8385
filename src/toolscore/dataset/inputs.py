"""Where a dataset's traces come from, and how they are cut into parts and read back.

TRACES is a file, a directory (read recursively), a glob, or a URL that fsspec opens
(``s3://``, ``gs://``, ``file://``, ``memory://``; fsspec is needed only for URLs). Each file
is one of:

* a **multi-trace JSON Lines** file: its lines carry a trace id (``--trace-key``, or the first
  of :data:`ID_KEYS` found on the first line). Lines of one trace are normally contiguous; such
  a file is read trace by trace (one trace in memory at a time) and a large one is cut into
  byte ranges at trace boundaries, one part each. When the lines of traces interleave
  (detected in the first MiB, or ``interleaved=True``) the file is grouped by id instead:
  in memory up to :data:`GROUP_BUDGET` bytes, past that partitioned on disk by a hash of the
  id, one partition at a time;
* an **OpenTelemetry** export (OTLP JSON or JSON Lines): its spans are grouped by
  ``traceId`` (as above), each trace an OTLP export of its own spans;
* **one trace** in any supported format: the trace id is the file's path below TRACES without
  its extensions. It is read as ``toolscore eval`` reads a trace, streaming.

A part's lines are numbered from its start; the driver adds the lines of the parts before it.
"""

from __future__ import annotations

import glob as globlib
import os
import shutil
import struct
import tempfile
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from itertools import groupby, pairwise
from operator import attrgetter
from typing import IO, Any

import msgspec
import orjson

from ..sources._drive import COMPRESSED, READ_ERRORS, decompressing, is_compressed, read_error
from .shape import ID_KEYS, first_record, is_url
from .shape import first_line as first_line

__all__ = [
    "GROUP_BUDGET",
    "ID_KEYS",
    "Decompressed",
    "Input",
    "Part",
    "Trace",
    "add_frames",
    "count_line_starts",
    "gather_parts",
    "id_before",
    "in_location",
    "is_url",
    "list_inputs",
    "make_location",
    "next_line",
    "open_fs",
    "open_input",
    "open_lines",
    "open_output",
    "partition",
    "plan_parts",
    "remove_location",
    "ship_parts",
    "trace_name",
    "trace_start",
    "unpack",
    "write_frame",
]

GATHER_BYTES = 8 * 1024 * 1024
"""About the lines of a file whose lines interleave that one gather part groups in memory."""
PART_BYTES = 4 * 1024 * 1024
"""Target size of a byte-range part of a multi-trace file (from 8 MiB on, a file is cut).
Fixed, not a share of the dataset: a part's records are what the driver holds per part in
flight, so the driver's memory is the same at 10 thousand traces and at a million; 4 MiB is
about a thousand traces, a few ms of scheduling overhead per part on the pool or Dask."""
FILES_PER_PART = 64
"""Single-trace files evaluated in one part at most."""
GROUP_BUDGET = 64 * 1024 * 1024
"""Bytes of interleaved lines grouped in memory before they are partitioned on disk."""
SNIFF_BYTES = 1 << 20
READ_BYTES = 1 << 20
"""How much of a multi-trace file is read at a time (its ids are decoded a chunk at a time)."""
_EXTENSIONS = (".jsonl", ".ndjson", ".json", ".txt", *COMPRESSED)


def open_fs(url: str, storage_options: dict[str, Any]) -> tuple[Any, str]:
    try:
        from fsspec.core import url_to_fs
    except ImportError:  # pragma: no cover - depends on the extras installed
        from ..errors import UsageError

        raise UsageError(
            f"{url}: reading URLs needs fsspec: pip install 'toolscore[s3]' (or [dask])"
        ) from None
    fs, path = url_to_fs(url, **storage_options)
    return fs, path


@dataclass(frozen=True)
class Input:
    """One file of the dataset."""

    url: str
    """A local path, or a URL with its scheme."""
    size: int
    name: str
    """The trace id it gives when it holds one trace: its path below TRACES, no extensions."""
    local: str | None = None
    """A decompressed copy of a compressed multi-trace file, read in its place (its records
    still name ``url``; offsets count decompressed bytes; see :func:`plan_parts`)."""
    broken: str | None = None
    """Why that copy ends early (the stream broke off), when it does."""

    @property
    def path(self) -> str:
        """What is read: the decompressed copy, or ``url``."""
        return self.local or self.url


def trace_name(relative: str) -> str:
    """``a/b.jsonl.gz`` -> ``a/b``."""
    name = relative.replace(os.sep, "/")
    changed = True
    while changed:
        changed = False
        for ext in _EXTENSIONS:
            if name.lower().endswith(ext) and len(name) > len(ext):
                name = name[: -len(ext)]
                changed = True
    return name


def _glob_chars(path: str) -> bool:
    return any(ch in path for ch in "*?[")


def list_inputs(traces: str, storage_options: dict[str, Any] | None = None) -> list[Input]:
    """The files TRACES names, sorted by path.

    Raises:
        InputError: nothing matches, or a path does not exist.
    """
    from ..errors import InputError

    options = storage_options or {}
    found: list[Input] = []
    if is_url(traces):
        fs, path = open_fs(traces, options)
        protocol = traces.split("://", 1)[0]
        if _glob_chars(path):
            infos = fs.glob(path, detail=True)
            base = path.split("*", 1)[0].rsplit("/", 1)[0]
        elif fs.isdir(path):
            infos = fs.find(path, detail=True)
            base = path.rstrip("/")
        elif fs.exists(path):
            infos = {path: fs.info(path)}
            base = path.rsplit("/", 1)[0]
        else:
            raise InputError(traces, "file not found")
        for name, info in sorted(infos.items()):
            if info.get("type") == "directory":
                continue
            relative = name[len(base) :].lstrip("/") if name.startswith(base) else name
            url = f"{protocol}://{name.split('://', 1)[-1]}" if protocol != "file" else name
            found.append(Input(url, int(info.get("size") or 0), trace_name(relative)))
    elif os.path.isdir(traces):
        for root, dirs, files in os.walk(traces):
            dirs.sort()
            for file in sorted(files):
                if file.startswith("."):
                    continue
                path = os.path.join(root, file)
                found.append(
                    Input(path, os.path.getsize(path), trace_name(os.path.relpath(path, traces)))
                )
    elif _glob_chars(traces):
        base = os.path.dirname(traces.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0])
        for path in sorted(globlib.glob(traces, recursive=True)):
            if os.path.isfile(path):
                found.append(
                    Input(
                        path,
                        os.path.getsize(path),
                        trace_name(os.path.relpath(path, base or ".")),
                    )
                )
    elif os.path.isfile(traces):
        found.append(Input(traces, os.path.getsize(traces), trace_name(os.path.basename(traces))))
    else:
        raise InputError(traces, "file not found")
    if not found:
        raise InputError(traces, "no trace file matches")
    found.sort(key=lambda item: item.url)
    return found


def open_input(url: str, storage_options: dict[str, Any] | None = None) -> IO[bytes]:
    """A binary file for ``url`` (seekable; not decompressed)."""
    if is_url(url):
        fs, path = open_fs(url, storage_options or {})
        f: IO[bytes] = fs.open(path, "rb", block_size=4 * 1024 * 1024)
        return f
    return open(url, "rb")


def open_output(url: str, storage_options: dict[str, Any] | None = None) -> IO[bytes]:
    """A binary file to write at ``url`` (a local path, or a URL through fsspec)."""
    if is_url(url):
        fs, path = open_fs(url, storage_options or {})
        f: IO[bytes] = fs.open(path, "wb")
        return f
    return open(url, "wb")


def in_location(base: str, name: str) -> str:
    """``name`` inside the directory ``base`` (a local path, or a URL)."""
    return f"{base.rstrip('/')}/{name}" if is_url(base) else os.path.join(base, name)


def make_location(url: str, storage_options: dict[str, Any] | None = None) -> None:
    """Create the directory ``url`` (a local path, or a URL) in one that exists (never its
    parents: a missing bucket is an error, not a bucket made)."""
    if is_url(url):
        fs, path = open_fs(url, storage_options or {})
        try:
            fs.mkdir(path, create_parents=False)
        except FileExistsError:
            pass
    else:
        os.mkdir(url)


def remove_location(
    url: str, storage_options: dict[str, Any] | None = None, *, recursive: bool = False
) -> None:
    """Remove the file (or, ``recursive``, the directory) ``url``, if it can be (a temporary
    file: gone already, or not removable, the run goes on)."""
    try:
        if is_url(url):
            fs, path = open_fs(url, storage_options or {})
            fs.rm(path, recursive=recursive)
        elif recursive:
            shutil.rmtree(url, ignore_errors=True)
        else:
            os.unlink(url)
    except OSError:
        pass


def open_lines(url: str, storage_options: dict[str, Any] | None = None) -> IO[bytes]:
    """``url`` to read a line at a time: :func:`open_input`, decompressed when its name says
    it is compressed (:class:`Decompressed`)."""
    if is_compressed(url):
        return Decompressed(url, storage_options)  # type: ignore[return-value]
    return open_input(url, storage_options)


class Decompressed:
    """A compressed input, read decompressed: ``read``, ``seek(0)`` (reading it again from
    the start) and ``tell``. A damaged or truncated stream ends the reading instead of
    raising: :attr:`error` then says what went wrong, and :attr:`offset` where (decompressed
    bytes read before it).

    Raises:
        InputError: ``.zst`` without the optional ``zstandard`` package.
        OSError: the file cannot be opened.
    """

    def __init__(self, url: str, storage_options: dict[str, Any] | None = None) -> None:
        self.url = url
        self._options = storage_options
        self.error: Exception | None = None
        self.offset = 0
        self._raw: IO[bytes] | None = None
        self._stream: Any = None
        self._start()

    def _start(self) -> None:
        raw = open_input(self.url, self._options)
        try:
            self._stream = decompressing(self.url, raw)
        except BaseException:
            raw.close()
            raise
        self._raw = raw
        self.offset = 0
        self.error = None

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all the rest for -1), fewer only at the end, or where the
        stream broke off: what came out before that is given."""
        pieces: list[bytes] = []
        want = size
        while self.error is None and want != 0:
            try:  # a piece at a time: nothing decompressed is lost to a later fault
                piece: bytes = self._stream.read1(1 << 16 if want < 0 else min(want, 1 << 16))
            except READ_ERRORS as exc:
                self.error = exc
                break
            if not piece:
                break
            pieces.append(piece)
            if want > 0:
                want -= len(piece)
        data = b"".join(pieces)
        self.offset += len(data)
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        if pos or whence:
            raise OSError("a compressed input is read again from its start only")
        if self.offset or self.error is not None:
            self.close()
            self._start()
        return 0

    def tell(self) -> int:
        return self.offset

    @property
    def fault(self) -> str | None:
        """What broke the stream off, and where; None while it has not."""
        if self.error is None:
            return None
        problem = read_error(self.url, self.error).problem
        return f"{problem} ({self.offset:,} bytes decompressed)"

    def close(self) -> None:
        if self._raw is not None:
            self._stream.close()
            self._raw.close()
            self._raw = None

    def __enter__(self) -> Decompressed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Part:
    """A unit of work: whole files, or a byte range of one multi-trace file."""

    index: int
    inputs: tuple[Input, ...]
    start: int = 0
    end: int | None = None
    """With ``end``: a byte range of the one input, at trace boundaries (see :func:`plan_parts`)."""
    key: str | None = None
    """The trace key, for a byte range."""
    scatter: int = 0
    """For a byte range of a file whose lines interleave: write its lines, by trace id, into
    this many partitions (:func:`~.worker.run_part`), for the gather parts to group."""
    gather: tuple[tuple[str, int, int, int], ...] = ()
    """A partition of such a file, to group and evaluate: ``(spool file, start, end, lines
    before the range)`` for each range, in file order."""
    ship: bool = False
    """A part whose input only this machine reads, for workers that share no directory with
    it: a byte range of a decompressed copy here (from one trace boundary to the next,
    :func:`trace_start`) or a partition of scattered lines, whose bytes the engine sends
    with it (:attr:`data`); or a scatter range, which the engine runs here."""
    data: bytes | None = None
    """The bytes of a :attr:`ship` part, as its worker gets them: the range's, or the
    partition's sections of every range (in :attr:`gather` order)."""

    @property
    def size(self) -> int:
        if self.gather:
            return 0  # (its bytes were counted by the ranges)
        if self.end is not None:
            return self.end - self.start
        return sum(item.size for item in self.inputs)

    def describe(self) -> str:
        if self.end is not None:
            return f"{self.inputs[0].url} bytes {self.start}-{self.end}"
        if len(self.inputs) == 1:
            return self.inputs[0].url
        return f"{self.inputs[0].url} and {len(self.inputs) - 1} more file(s)"


def sniff(f: IO[bytes], limit: int = SNIFF_BYTES) -> bytes:
    head = f.read(limit)
    return head


def detect_key(head: bytes, key: str | None) -> str | None:
    """The trace key of a file starting with ``head``, from its first record
    (:func:`~.shape.first_record`: malformed lines before it are passed over): ``key`` when
    given and present (or ``None`` when absent), else the first of :data:`ID_KEYS` present."""
    found = first_record(head)
    if found is None:
        return None
    if key is not None and key != "auto":
        return key if key in found else None
    if "resourceSpans" in found:
        return None
    return next((name for name in ID_KEYS if name in found and found[name] is not None), None)


def is_otlp(head: bytes) -> bool:
    return b'"resourceSpans"' in head[:65536]


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

    def read(self, line: bytes) -> tuple[str | None, str | None] | None:
        """``(id, task)``; ``None`` for a line that is not a JSON object."""
        try:
            obj = self._decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None  # (nested too deeply: the trace's decoder tells how deep)
        return self._ids(obj)

    def _ids(self, obj: Any) -> tuple[str | None, str | None]:
        key = obj.k
        if type(key) is not str:
            key = None if key is None else str(key)
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
        if not set(map(type, keys)) <= _STR:
            if None in keys:
                ids = self._ids
                return [ids(obj) for obj in objs]
            keys = list(map(str, keys))
        if not self.with_task:
            return keys, None
        return keys, [None if task is None else str(task) for task in map(_TASK, objs)]


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
    rest = b""
    while True:
        chunk = f.read(READ_BYTES)
        if not chunk:
            break
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n") + 1
        if not cut:
            rest = data
            continue
        body, rest = data[:cut], data[cut:]
        lines = body.split(b"\n")
        lines.pop()
        yield pos, body, lines, ids.read_lines(body, lines)
        pos += cut
    if rest:
        yield pos, rest + b"\n", [rest], [ids.read(rest) if rest.strip() else BLANK]


def gather_parts(scattered: list[tuple[Part, str, list[int], int]], first: int) -> list[Part]:
    """The parts that group a file's scattered lines, numbered from ``first``: one for each
    partition, given every range's ``(part, spool file, section offsets, lines before it)``
    in file order."""
    ranges = sorted(scattered, key=lambda s: s[0].index)
    item = ranges[0][0].inputs[0]
    count = len(ranges[0][2]) - 1
    return [
        Part(
            first + p,
            (item,),
            key=ranges[0][0].key,
            gather=tuple((path, cuts[p], cuts[p + 1], base) for _, path, cuts, base in ranges),
            ship=ranges[0][0].ship,
        )
        for p in range(count)
    ]


def unpack(
    item: Input,
    directory: str,
    number: int,
    key: str | None,
    storage_options: dict[str, Any] | None = None,
) -> Input:
    """``item`` (a compressed file) with a decompressed copy in ``directory`` (a path or a
    URL) when its head shows a multi-trace file; else ``item`` as it is (one trace: read
    decompressed as it is read). A stream that breaks off gives the copy of what came out,
    and :attr:`Input.broken`."""
    try:
        with Decompressed(item.url, storage_options) as f:
            head = f.read(SNIFF_BYTES)
            if detect_key(head, key) is None or f.error is not None:
                return item
            path = in_location(directory, f"unpacked-{number}.jsonl")
            with open_output(path, storage_options) as out:
                out.write(head)
                while piece := f.read(READ_BYTES):
                    out.write(piece)
            return replace(item, local=path, size=f.offset, broken=f.fault)
    except (OSError, ValueError):
        return item  # the worker reports it, reading the file itself


def interleaved(head: bytes, ids: IdReader) -> bool:
    """Whether a trace id in ``head`` reappears after another one."""
    seen: set[str] = set()
    current = None
    for line in head.split(b"\n")[:-1]:
        got = ids.read(line) if line.strip() else None
        if got is None or got[0] is None:
            continue
        if got[0] != current:
            if got[0] in seen:
                return True
            seen.add(got[0])
            current = got[0]
    return False


def plan_parts(
    inputs: list[Input],
    *,
    key: str | None,
    task_key: str | None,
    force_interleaved: bool,
    storage_options: dict[str, Any] | None = None,
    part_bytes: int = PART_BYTES,
    unpack_dir: str | None = None,
    ship_dir: str | None = None,
) -> list[Part]:
    """Cut the dataset into parts: a large uncompressed multi-trace file whose traces are
    contiguous becomes byte ranges of about ``part_bytes``; small files are batched.

    With ``unpack_dir`` (a directory, local or a URL, that every worker reads and writes:
    the run's work directory when they share this machine's disk), a compressed
    multi-trace file of ``part_bytes`` or more, whose traces are contiguous, is first
    decompressed there (:func:`unpack`) and its copy cut the same way: read on every worker,
    its records come back a range at a time (memory stays flat). Otherwise a compressed
    file is read whole, by one worker. With it too, a large file whose lines interleave is
    cut into ranges that scatter its lines into partitions by trace id (:attr:`Part.scatter`,
    :data:`GATHER_BYTES` of lines each); the driver then plans the parts that group them
    (:func:`gather_parts`). Otherwise such a file is grouped whole, by one worker.

    With ``ship_dir`` instead (a directory on this machine only, for a cluster whose workers
    share no directory with it), such a compressed file is decompressed there all the same
    and cut at trace boundaries into :attr:`Part.ship` ranges, whose bytes the engine sends
    with each part; a large file whose lines interleave is cut into scatter ranges that this
    process runs itself (:attr:`Part.ship`), writing the partitions there, and the parts that
    group them get their partition's lines sent with them.
    """
    parts: list[Part] = []
    batch: list[Input] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch, batch_bytes
        if batch:
            parts.append(Part(len(parts), tuple(batch)))
            batch, batch_bytes = [], 0

    for item in inputs:
        compressed = is_compressed(item.url)
        original = item
        copy_dir = unpack_dir if unpack_dir is not None else ship_dir
        if copy_dir is not None and compressed and item.size >= part_bytes:
            item = unpack(item, copy_dir, len(parts), key, storage_options)
            compressed = item.local is None
        ship = unpack_dir is None and item.local is not None
        if item.size >= 2 * part_bytes and not compressed:
            with open_input(item.path, storage_options) as f:
                head = sniff(f)
            found = detect_key(head, key)
            mixed = found is not None and (
                force_interleaved or interleaved(head, IdReader(found, task_key))
            )
            if found is not None and ship and not mixed:
                flush()
                parts += ship_parts(item, found, task_key, part_bytes, len(parts))
                continue
            if found is not None and (not mixed or unpack_dir is not None or ship_dir):
                flush()
                here = mixed and unpack_dir is None  # (scattered by this process)
                scatter = -(-item.size // GATHER_BYTES) + 1 if mixed else 0
                cuts = list(range(0, item.size, part_bytes))
                for i, start in enumerate(cuts):
                    end = cuts[i + 1] if i + 1 < len(cuts) else item.size
                    parts.append(Part(len(parts), (item,), start, end, found, scatter, ship=here))
                continue
        if ship:  # (the copy is this machine's: a worker reads the file itself)
            os.unlink(item.path)
            item = original
        if batch and (len(batch) >= FILES_PER_PART or batch_bytes + item.size > part_bytes):
            flush()
        batch.append(item)
        batch_bytes += item.size
    flush()
    return parts


def ship_parts(
    item: Input, key: str, task_key: str | None, part_bytes: int, first: int
) -> list[Part]:
    """A decompressed copy on this machine cut into :attr:`Part.ship` ranges of about
    ``part_bytes``, each from one trace boundary to the next (a trace longer than a range
    makes the ranges around it one)."""
    assert item.local is not None
    ids = IdReader(key, task_key)
    with open(item.local, "rb") as f:
        starts = [trace_start(f, ids, cut, item.size) for cut in range(0, item.size, part_bytes)]
    bounds = sorted(set(starts) | {item.size})
    return [
        Part(first + i, (item,), start, end, key, ship=True)
        for i, (start, end) in enumerate(pairwise(bounds))
    ]


# -- reading traces ------------------------------------------------------------------------


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


def iter_lines(f: IO[bytes], start: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` from ``start``; each line keeps its newline (the last may lack it)."""
    pos = start
    rest = b""
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        data = rest + chunk if rest else chunk
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield pos, line + b"\n"
            pos += len(line) + 1
    if rest:
        yield pos, rest + b"\n"


def _previous_id(f: IO[bytes], start: int, ids: IdReader) -> tuple[str | None, int]:
    """The offset of the first line that starts at or after ``start``, and the id of the trace
    the lines before it continue: the id of the nearest line before it that has one (blank
    and malformed lines, and JSON objects without an id, go with the trace before them, as
    :func:`contiguous_traces` reads a file); ``None`` when no line before it has one."""
    begin = next_line(f, start)
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
    an object, so only those are decoded."""
    size = BACK_BYTES
    hi = pos
    tail = b""  # the start of the line the previous block began inside
    while hi > 0:
        lo = max(0, hi - size)
        f.seek(lo)
        lines = (f.read(hi - lo) + tail).split(b"\n")
        tail = lines[0] if lo > 0 else b""
        for line in reversed(lines if lo == 0 else lines[1:]):
            if line.rstrip().endswith(b"}"):
                got = ids.read(line)
                if got is not None and (got[0] is not None or not named):
                    return got[0]
        hi = lo
        size = min(size * 2, READ_BYTES)
    return None


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


def next_line(f: IO[bytes], pos: int) -> int:
    """The offset of the first line that starts at or after ``pos`` (the end of the file when
    none does)."""
    if pos == 0:
        return 0
    f.seek(pos - 1)
    end = pos - 1
    while True:
        piece = f.read(65536)
        if not piece:
            return end
        cut = piece.find(b"\n")
        if cut >= 0:
            return end + cut + 1
        end += len(piece)


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
        skip, begin = _previous_id(f, start, ids)
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
                    current.lines.append(line)
                    current.linenos.append(lineno)
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
            current.lines.append(line)
            current.linenos.append(lineno)
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
        numbers = list(range(lineno + first + 1, lineno + after + 1))
        if current is not None and current.trace_id == trace_id:
            current.lines.append(body[at : at + size])
            current.linenos.extend(numbers)
        else:
            if current is not None:
                yield current
            task = None if tasks is None else tasks[first]
            current = Trace(trace_id, task, [body[at : at + size]], numbers, pos + at)
        at += size
        first = after
    return current


# -- interleaved lines: grouped by id, spilled to disk past a budget -----------------------

_FRAME = struct.Struct("<IIQQ")


def partition(trace_id: str, count: int) -> int:
    """Which of ``count`` partitions the lines of ``trace_id`` go to."""
    return zlib.crc32(trace_id.encode("utf-8", "surrogatepass")) % count


def write_frame(
    out: IO[bytes], trace_id: str, task: str | None, line: bytes, lineno: int, offset: int
) -> None:
    """One line of a trace, framed for :func:`add_frames`."""
    head = orjson.dumps([trace_id, task])
    out.write(_FRAME.pack(len(head), len(line), lineno, offset))
    out.write(head)
    out.write(line)


def add_frames(groups: dict[str, Trace], f: IO[bytes], size: int | None, base: int) -> None:
    """Add the lines framed in ``f`` (its next ``size`` bytes; to its end for None) to their
    traces in ``groups``, a frame at a time (a trace new to it starts at its first line's
    offset; ``base`` is added to the line numbers)."""
    left = -1 if size is None else size
    while left:
        frame = f.read(_FRAME.size)
        if not frame:
            break
        head_len, line_len, lineno, offset = _FRAME.unpack(frame)
        trace_id, task = orjson.loads(f.read(head_len))
        line = f.read(line_len)
        group = groups.get(trace_id)
        if group is None:
            group = groups[trace_id] = Trace(trace_id, task, [], [], offset)
        group.lines.append(line)
        group.linenos.append(base + lineno)
        if size is not None:
            left -= _FRAME.size + head_len + line_len


class Grouper:
    """Groups ``(id, task, line, lineno, offset)`` items by id in bounded memory."""

    PARTS = 16

    def __init__(self, budget: int = GROUP_BUDGET, directory: str | None = None) -> None:
        self.budget = budget
        self.directory = directory
        self._groups: dict[str, Trace] = {}
        self._bytes = 0
        self._spill: list[IO[bytes]] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def add(self, trace_id: str, task: str | None, line: bytes, lineno: int, offset: int) -> None:
        if self._spill is not None:
            self._write(trace_id, task, line, lineno, offset)
            return
        group = self._groups.get(trace_id)
        if group is None:
            group = self._groups[trace_id] = Trace(trace_id, task, [], [], offset)
        group.lines.append(line)
        group.linenos.append(lineno)
        self._bytes += len(line) + 64
        if self._bytes > self.budget:
            self._start_spill()

    def _start_spill(self) -> None:
        # the run's directory may be another machine's (a Dask worker that does not share
        # the driver's disk): then the system's
        directory = self.directory
        if directory is not None and not os.path.isdir(directory):
            directory = None
        self._tmp = tempfile.TemporaryDirectory(prefix="toolscore-group-", dir=directory)
        self._spill = [
            open(os.path.join(self._tmp.name, f"{i}.bin"), "w+b") for i in range(self.PARTS)
        ]
        groups, self._groups = self._groups, {}
        for group in groups.values():
            for line, lineno in zip(group.lines, group.linenos, strict=True):
                assert group.trace_id is not None
                self._write(group.trace_id, group.task, line, lineno, group.offset)

    def _write(
        self, trace_id: str, task: str | None, line: bytes, lineno: int, offset: int
    ) -> None:
        assert self._spill is not None
        write_frame(
            self._spill[partition(trace_id, self.PARTS)], trace_id, task, line, lineno, offset
        )

    def traces(self) -> Iterator[Trace]:
        """The groups, in order of first appearance (per partition once spilled)."""
        if self._spill is None:
            yield from self._groups.values()
            self._groups = {}
            return
        try:
            for f in self._spill:
                f.seek(0)
                groups: dict[str, Trace] = {}
                add_frames(groups, f, None, 0)
                yield from sorted(groups.values(), key=lambda t: t.offset)
                f.close()
        finally:
            for f in self._spill:
                f.close()
            if self._tmp is not None:
                self._tmp.cleanup()


def otlp_items(f: IO[bytes], head: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(lineno, offset, ResourceSpans)`` of an OTLP JSON export or OTLP JSON Lines file."""
    line = first_line(head)
    try:
        orjson.loads(line)
        lines_layout = len(line) < len(head.strip())
    except orjson.JSONDecodeError:
        lines_layout = False
    f.seek(0)
    if lines_layout:
        lineno = 0
        for offset, raw in iter_lines(f):
            lineno += 1
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                yield lineno, offset, exc
                continue
            for rs in obj.get("resourceSpans") or () if isinstance(obj, dict) else ():
                yield lineno, offset, rs
        return
    import ijson

    try:
        for rs in ijson.items(f, "resourceSpans.item", use_float=True):
            yield 1, 0, rs
    except ijson.JSONError as exc:
        yield 1, 0, exc


def otlp_traces(rs: Any) -> Iterator[tuple[str, bytes]]:
    """``(traceId, one OTLP export line holding that trace's spans of ``rs``)``."""
    if not isinstance(rs, dict):
        return
    resource = rs.get("resource")
    for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ():
        if not isinstance(ss, dict):
            continue
        by_trace: dict[str, list[Any]] = {}
        for span in ss.get("spans") or ():
            if isinstance(span, dict):
                by_trace.setdefault(str(span.get("traceId") or ""), []).append(span)
        for trace_id, spans in by_trace.items():
            scope: dict[str, Any] = {"spans": spans}
            if "scope" in ss:
                scope["scope"] = ss["scope"]
            out: dict[str, Any] = {"scopeSpans": [scope]}
            if resource is not None:
                out["resource"] = resource
            yield trace_id, orjson.dumps({"resourceSpans": [out]}) + b"\n"
