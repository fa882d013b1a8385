"""Drivers: bytes from a path, stdin, a binary file or an async stream in, batches out.

All the logic is in :class:`Session` (no I/O): it holds the first bytes until the format can be
decided, then hands every chunk to the chosen decoder. :func:`iter_batches` and
:func:`aiter_batches` only move bytes into it. Neither waits for a full buffer: the sync driver
reads with ``read1`` (what is available) and the async one takes what arrives, so on a pipe a
JSON line comes out as soon as its newline does.

Missing files are reported before iteration starts: both drivers check the path when called
and raise :class:`~toolscore.errors.InputError` (``file not found``) then. Every later fault
(bad or truncated data, no format found) is the ``error`` of the last batch.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import sys
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterator
from typing import IO, Any, BinaryIO

import anyio.to_thread
import orjson

from ..calls import Batch, Finding
from ..errors import FormatNotDetected, InputError, MalformedTrace
from ..limits import ensure_recursion_limit
from ._array import ArrayDecoder, suits
from ._base import Decoder
from ._document import JsonDecoder
from ._traceids import TraceIds
from ._util import input_finding
from .detect import MAX_SAMPLE, SAMPLE_SIZE, check_format, detect, dialect_class
from .jsonl import JsonlDecoder

__all__ = [
    "COMPRESSED",
    "READ_ERRORS",
    "Session",
    "aiter_batches",
    "decompressing",
    "is_compressed",
    "iter_batches",
    "open_decoder",
    "read_error",
    "source_size",
]

CHUNK_SIZE = 1 << 18
"""Bytes read at a time: a batch small enough that the passes over its calls (decoding,
every check, the JSON report) find them in the CPU's caches. 256 KiB read 300 MB traces
13-20% faster than 1 MiB on this project's machine (interleaved runs, both layouts)."""
_BOM = b"\xef\xbb\xbf"


def open_decoder(format: str, head: bytes, source_name: str, *, final: bool = False) -> Decoder:
    """A decoder for an input that starts with ``head`` (detecting the format unless given).

    The decoder has not consumed ``head``: feed it first.

    Args:
        format: ``auto`` or a name from :data:`~.detect.FORMATS`.
        head: the first bytes of the input.
        source_name: the file name for locations and errors.
        final: ``head`` is the whole input.

    Raises:
        UsageError: an unknown format.
        FormatNotDetected: ``auto`` and no format fits ``head``.
    """
    found = detect(head, format=format, final=final, source=source_name)
    dialect = dialect_class(found.dialect)(source_name)
    decoder: JsonlDecoder | JsonDecoder | ArrayDecoder
    if found.layout == "jsonl":
        decoder = JsonlDecoder(dialect, source_name, found.description)
    elif suits(found.prefix, head.removeprefix(_BOM)):
        decoder = ArrayDecoder(dialect, found.prefix, source_name, found.description)
    else:
        decoder = JsonDecoder(dialect, found.prefix, source_name, found.description)
    # A format the user named may rightly hold no call (a conversation without tool use);
    # only a guessed one must never come back empty without a word.
    decoder.empty_is_error = format == "auto"
    if found.shape is not None and found.shape.top == "array" and found.shape.sample == []:
        dialect.replied = True  # ``[]`` says the trace made no call
    return decoder


class Session:
    """One input read start to end: buffers the head until the format is decided.

    The head is decided on when the first non-blank line is complete JSON (JSON Lines), or
    :data:`SAMPLE_SIZE` bytes and a newline have arrived, or at the end of input; if no format
    fits, a larger sample is tried, up to :data:`MAX_SAMPLE`.

    Args:
        format: ``auto`` or a format name (checked now).
        source: the file name.

    Raises:
        UsageError: an unknown format.
    """

    def __init__(
        self,
        format: str,
        source: str,
        *,
        pull: tuple[Callable[[int], bytes], int] | None = None,
        one_trace: bool = True,
    ) -> None:
        self.format = check_format(format)
        self.source = source
        self.ids = TraceIds() if one_trace else None
        """Says where a second trace id shows (None: the input is many traces by design,
        as for a watch with ``--trace-key``)."""
        self.decoder: Decoder | None = None
        self._pull = pull
        self.pulling: Iterator[Batch] | None = None
        """Set when a JSON document is read by pulling (``pull`` given): the driver takes
        its batches from here instead of calling :meth:`feed`."""
        self._head = bytearray()
        self._target = SAMPLE_SIZE
        self._scanned = 0
        self._start = -1
        self._first_nl = -1
        self._line_ok = False
        self._retry_from = 0
        self._failed = False
        self._whole_item: bool | None = None

    def feed(self, chunk: bytes) -> Batch:
        """Decode ``chunk`` (or hold it while the format is undecided)."""
        if self.decoder is not None:
            return self.decoder.feed(chunk)
        if self._failed or not chunk:
            return Batch()
        self._head += chunk
        return self._open(final=False) if self._ready() else Batch()

    def close(self) -> Batch:
        """End of input: decide on what was read, and finish."""
        if self.decoder is not None:
            return self.decoder.close()
        if self._failed:
            return Batch()
        if not self._head.strip():
            self._failed = True
            return Batch(findings=[_empty(self.source)])
        first = self._open(final=True)
        if first.error is not None or self.decoder is None:
            return first
        last = self.decoder.close() if self.pulling is None else _merge(self.pulling)
        first.calls += last.calls
        first.done += last.done
        first.findings += last.findings
        first.error = last.error
        return first

    def _ready(self) -> bool:
        head = self._head
        if self._first_nl < 0:
            # where the JSON starts (found once: lstrip would copy the head at each chunk)
            if self._start < 0:
                found = _NON_BLANK.search(head)
                if found is not None:
                    self._start = found.start()
            start = self._start if self._start >= 0 else len(head)
            nl = head.find(b"\n", max(self._scanned, start))
            self._scanned = len(head)
            if nl < 0 or start >= len(head):
                # No line yet: an array is a document, decided on at once; an object may be
                # a long first JSON line, so wait a little longer. An object that is one item
                # as a whole (a call) reads the same as the first line of JSON Lines or as a
                # document, so its line's end is awaited whatever its length: what follows
                # decides (a container, '{"calls": [...', is decided on at once).
                if head[start : start + 1] == b"[":
                    return len(head) >= self._target
                if len(head) < max(self._target, _NO_NEWLINE_WAIT):
                    return False
                return not self._one_item(head)
            self._first_nl = nl
            try:
                # orjson only: a first line only json would take is decided on at 64 KiB.
                orjson.loads(bytes(head[start:nl]))
                self._line_ok = True
            except orjson.JSONDecodeError:
                self._line_ok = False
        if len(head) >= self._target:
            return True
        # JSON Lines: try again once another line is complete.
        return self._line_ok and head.find(b"\n", self._retry_from) >= 0

    def _one_item(self, head: bytearray) -> bool:
        """Whether ``head`` (no newline yet) starts a document that is one item as a whole
        (asked once)."""
        if self._whole_item is None:
            try:
                found = detect(bytes(head), format=self.format, source=self.source)
            except InputError:
                found = None
            self._whole_item = found is not None and found.layout == "json" and found.prefix == ""
        return self._whole_item

    def _open(self, *, final: bool) -> Batch:
        head = bytes(self._head)
        try:
            self.decoder = open_decoder(self.format, head, self.source, final=final)
        except FormatNotDetected as exc:
            if not final and len(head) < MAX_SAMPLE:
                self._target = min(len(head) * 2, MAX_SAMPLE)
                self._retry_from = len(head)
                return Batch()
            self._failed = True
            return Batch(error=exc)
        self._head = bytearray()
        if head.startswith(_BOM):  # a UTF-8 byte order mark is not JSON; drop it
            head = head[len(_BOM) :]
        if self._pull is not None and isinstance(self.decoder, JsonDecoder):
            self.pulling = self.decoder.pull(head, *self._pull)
            return Batch()
        return self.decoder.feed(head)


_NON_BLANK = re.compile(rb"[^ \t\r\n\f\v]")
_NO_NEWLINE_WAIT = 1 << 20
"""Bytes an object with no newline is held before detection decides on it as a document."""


def _merge(batches: Iterator[Batch]) -> Batch:
    out = Batch()
    for batch in batches:
        out.calls += batch.calls
        out.done += batch.done
        out.findings += batch.findings
        out.error = batch.error
    return out


def _empty(source: str) -> Finding:
    return input_finding(
        "empty_input", f"{source}: the input is empty: no tool calls", None, severity="warning"
    )


# ---------------------------------------------------------------------------------------------
# Opening


def _name(src: Any) -> str:
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        return "<stdin>" if path == "-" else str(path)
    name = getattr(src, "name", None)
    return name if isinstance(name, str) else "<stream>"


def _check_path(path: str) -> None:
    if path == "-":
        return
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot open: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise InputError(path, "is a directory, expected a trace file")


def _open_path(
    path: str, on_bytes: Callable[[int], None] | None = None
) -> tuple[Callable[[int], bytes], Callable[[], None]]:
    """``read1`` and ``close`` of a path (``-`` is stdin, ``.gz`` is decompressed);
    ``on_bytes`` is told how many bytes of the file each read took (compressed ones for a
    compressed file)."""
    if path == "-":
        return _counted(_reader(sys.stdin.buffer), on_bytes), lambda: None
    try:
        file: Any = open(path, "rb")
    except OSError as exc:
        raise InputError(path, f"cannot open: {exc.strerror or exc}") from None
    compressed = is_compressed(path)
    if on_bytes is not None and compressed:
        file = _CountingFile(file, on_bytes)
    if compressed:
        try:
            raw: Any = decompressing(path, file)
        except InputError:
            file.close()
            raise
        raw_close = raw.close

        def close() -> None:
            raw_close()
            file.close()

        return _reader(raw), close
    return _counted(_reader(file), on_bytes), file.close


def _counted(
    read: Callable[[int], bytes], on_bytes: Callable[[int], None] | None
) -> Callable[[int], bytes]:
    if on_bytes is None:
        return read

    def counted(size: int) -> bytes:
        data = read(size)
        if data:
            on_bytes(len(data))
        return data

    return counted


class _CountingFile:
    """A binary file whose reads are counted (below a decompressor)."""

    def __init__(self, raw: Any, on_bytes: Callable[[int], None]) -> None:
        self._raw = raw
        self._on_bytes = on_bytes

    def read(self, size: int = -1) -> bytes:
        data: bytes = self._raw.read(size)
        if data:
            self._on_bytes(len(data))
        return data

    def readinto(self, buffer: Any) -> int:
        count = int(self._raw.readinto(buffer) or 0)
        if count:
            self._on_bytes(count)
        return count

    def close(self) -> None:
        self._raw.close()

    @property
    def closed(self) -> bool:
        return bool(self._raw.closed)


COMPRESSED = (".gz", ".zst", ".zstd")
"""The endings of the inputs read decompressed (any case)."""


def is_compressed(path: str) -> bool:
    """Whether ``path`` is read decompressed (:data:`COMPRESSED`)."""
    return path.lower().endswith(COMPRESSED)


def decompressing(path: str, file: Any) -> Any:
    """A reader (``read``) of ``file`` decompressed as ``path`` ends: ``.gz``, or ``.zst`` /
    ``.zstd`` (the optional ``zstandard`` package; without it, :class:`InputError`). A read
    may raise one of :data:`READ_ERRORS` (a damaged or truncated stream)."""
    if path.lower().endswith(".gz"):
        return gzip.GzipFile(fileobj=file, mode="rb")
    return _open_zstd(path, file)


def _open_zstd(path: str, file: Any) -> Any:
    """A ``.zst`` trace, decompressed as it is read (the optional ``zstandard`` package)."""
    try:
        import zstandard
    except ImportError:
        raise InputError(
            path, "reading .zst traces needs the zstandard package: pip install 'toolscore[zstd]'"
        ) from None
    return _ZstdReader(file, zstandard.ZstdDecompressor())


class _ZstdReader:
    """``read1`` over a zstd file that, unlike ``zstandard``'s own stream reader, notices a
    file cut off inside a frame (``EOFError``, reported as a truncated trace)."""

    def __init__(self, raw: Any, decompressor: Any) -> None:
        self._raw = raw
        self._decompressor = decompressor
        self._frame = decompressor.decompressobj()
        self._buffer = b""

    def read1(self, size: int = -1) -> bytes:
        while not self._buffer:
            chunk = self._raw.read(1 << 16)
            if not chunk:
                if not self._frame.eof:
                    raise EOFError("the input ends inside a zstd frame")
                return b""
            if self._frame.eof:  # a further frame
                self._frame = self._decompressor.decompressobj()
            self._buffer = self._frame.decompress(chunk)
            rest = self._frame.unused_data if self._frame.eof else b""
            while rest:
                self._frame = self._decompressor.decompressobj()
                self._buffer += self._frame.decompress(rest)
                rest = self._frame.unused_data if self._frame.eof else b""
        if size < 0 or size >= len(self._buffer):
            out, self._buffer = self._buffer, b""
        else:
            out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out

    read = read1

    def close(self) -> None:
        self._raw.close()


def _reader(f: Any) -> Callable[[int], bytes]:
    read1 = getattr(f, "read1", None)
    return read1 if callable(read1) else f.read  # type: ignore[no-any-return]


def read_error(source: str, exc: Exception) -> InputError:
    if isinstance(exc, EOFError):
        from ..errors import TruncatedTrace

        return TruncatedTrace(source, f"the compressed input ends early: {exc}")
    return MalformedTrace(source, f"cannot read the input: {exc}")


READ_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error)
"""What reading a damaged or truncated compressed input raises."""
try:  # a damaged .zst stream
    from zstandard import ZstdError as _ZstdError

    READ_ERRORS += (_ZstdError,)
except ImportError:  # pragma: no cover - zstandard is optional
    pass


def _sync_batches(session: Session, read: Callable[[int], bytes], size: int) -> Iterator[Batch]:
    for batch in _sync_session(session, read, size):
        batch.decoded = True
        if session.ids is not None:
            session.ids.check(batch)
        yield batch


def _sync_session(session: Session, read: Callable[[int], bytes], size: int) -> Iterator[Batch]:
    while True:
        try:
            chunk = read(size)
        except READ_ERRORS as exc:
            batch = session.close()
            batch.error = read_error(session.source, exc)
            yield batch
            return
        if not chunk:
            break
        batch = session.feed(chunk)
        if not batch.empty:
            yield batch
            if batch.error is not None:
                return
        if session.pulling is not None:
            try:
                for batch in session.pulling:
                    if not batch.empty:
                        yield batch
            except READ_ERRORS as exc:
                yield Batch(error=read_error(session.source, exc))
            return
    yield session.close()


def iter_batches(
    src: str | os.PathLike[str] | BinaryIO | IO[bytes],
    format: str = "auto",
    *,
    chunk_size: int = CHUNK_SIZE,
    on_bytes: Callable[[int], None] | None = None,
) -> Iterator[Batch]:
    """Read a trace, one :class:`Batch` per chunk read (empty ones skipped), then the end.

    Use it to drive the pipeline synchronously; the iteration stops after a batch whose
    ``error`` is set.

    Args:
        src: a path (``-`` for stdin; a ``.gz`` path is decompressed as it is read), or a
            binary file (read with ``read1`` when it has it; not closed).
        format: ``auto`` or a name from :data:`~.detect.FORMATS`.
        chunk_size: the most bytes read at a time.
        on_bytes: told the number of bytes of each read of a path (progress).

    Raises:
        InputError: the path does not exist or is a directory (raised by this call).
        UsageError: an unknown format (raised by this call).
    """
    ensure_recursion_limit()
    if isinstance(src, (str, os.PathLike)):
        path = str(os.fspath(src))
        check_format(format)
        _check_path(path)
        return _iter_path(format, path, chunk_size, on_bytes)
    read = _counted(_reader(src), on_bytes)
    pull = (read, chunk_size) if source_size(src) is not None else None
    return _sync_batches(Session(format, _name(src), pull=pull), read, chunk_size)


def _iter_path(
    format: str, path: str, size: int, on_bytes: Callable[[int], None] | None
) -> Iterator[Batch]:
    read, close = _open_path(path, on_bytes)
    regular = (path != "-" and source_size(path) is not None) or is_compressed(path)
    session = Session(format, _name(path), pull=(read, size) if regular else None)
    try:
        yield from _sync_batches(session, read, size)
    finally:
        close()


# ---------------------------------------------------------------------------------------------
# Async


async def _thread_chunks(read: Callable[[int], bytes], size: int) -> AsyncIterator[bytes]:
    while True:
        chunk = await anyio.to_thread.run_sync(read, size, abandon_on_cancel=True)
        if not chunk:
            return
        yield chunk


async def _path_chunks(path: str, size: int) -> AsyncIterator[bytes]:
    read, close = await anyio.to_thread.run_sync(_open_path, path)
    try:
        async for chunk in _thread_chunks(read, size):
            yield chunk
    finally:
        close()


async def _async_batches(session: Session, chunks: AsyncIterable[bytes]) -> AsyncIterator[Batch]:
    async for batch in _async_session(session, chunks):
        batch.decoded = True
        if session.ids is not None:
            session.ids.check(batch)
        yield batch


async def _async_session(session: Session, chunks: AsyncIterable[bytes]) -> AsyncIterator[Batch]:
    try:
        async for chunk in chunks:
            batch = session.feed(bytes(chunk))
            if not batch.empty:
                yield batch
                if batch.error is not None:
                    return
    except READ_ERRORS as exc:
        batch = session.close()
        batch.error = read_error(session.source, exc)
        yield batch
        return
    yield session.close()


def aiter_batches(
    src: str | os.PathLike[str] | BinaryIO | IO[bytes] | AsyncIterable[bytes],
    format: str = "auto",
    *,
    chunk_size: int = CHUNK_SIZE,
    one_trace: bool = True,
) -> AsyncIterator[Batch]:
    """The async twin of :func:`iter_batches`: batches as the bytes arrive.

    Args:
        src: a path (read in a worker thread), a binary file (``read1`` in a worker thread),
            or an async byte source: an ``anyio.abc.ByteReceiveStream`` or any async iterable
            of ``bytes`` (each chunk is decoded as soon as it is received).
        format: ``auto`` or a name from :data:`~.detect.FORMATS`.
        chunk_size: the most bytes read at a time from a path or file.
        one_trace: the input is one trace (a second trace id is an input finding); False
            for a stream of sessions.

    Raises:
        InputError: the path does not exist or is a directory (raised by this call).
        UsageError: an unknown format (raised by this call).
    """
    ensure_recursion_limit()
    session = Session(format, _name(src), one_trace=one_trace)
    if isinstance(src, (str, os.PathLike)):
        path = str(os.fspath(src))
        _check_path(path)
        return _async_batches(session, _path_chunks(path, chunk_size))
    if hasattr(src, "read") and not isinstance(src, AsyncIterable):
        return _async_batches(session, _thread_chunks(_reader(src), chunk_size))
    if isinstance(src, AsyncIterable):
        return _async_batches(session, src)
    raise InputError(_name(src), f"cannot read a trace from {type(src).__name__}")


def source_size(src: Any) -> int | None:
    """The byte size of a trace for a progress bar: a regular file's size (a ``.gz`` path's
    compressed size is no use for the bytes decoded, so ``None``); ``None`` for stdin, pipes,
    streams and missing files."""
    try:
        if isinstance(src, (str, os.PathLike)):
            path = str(os.fspath(src))
            if path == "-" or is_compressed(path):
                return None
            st = os.stat(path)
        elif hasattr(src, "fileno"):
            st = os.fstat(src.fileno())
        else:
            return None
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None
