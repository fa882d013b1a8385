"""Opening an input: a path (``-`` is stdin), a compressed file (``.gz``, or ``.zst`` with the
optional ``zstandard`` package) read decompressed, or a binary file, as a ``read1`` callable;
what reading a damaged one raises, and the size of a trace for a progress bar (see
:mod:`toolscore.sources._drive`)."""

from __future__ import annotations

import gzip
import os
import stat
import sys
import zlib
from collections.abc import Callable
from typing import Any

from ..errors import InputError, MalformedTrace, TruncatedTrace
from ..limits import read_limits

try:  # optional (pip install 'toolscore[zstd]'): .zst traces, and what a damaged one raises
    import zstandard
except ImportError:  # pragma: no cover - zstandard is optional
    zstandard = None  # type: ignore[assignment]


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
    """A reader (``read``, ``read1``) of ``file`` decompressed as ``path`` ends: ``.gz``, or
    ``.zst`` / ``.zstd`` (the optional ``zstandard`` package; without it,
    :class:`InputError`), that gives at most ``max_decompressed_bytes`` bytes (of
    :func:`~toolscore.limits.read_limits`). A read may raise one of :data:`READ_ERRORS` (a
    damaged or truncated stream, or :class:`DecompressedTooLarge`)."""
    if path.lower().endswith(".gz"):
        stream: Any = gzip.GzipFile(fileobj=file, mode="rb")
    else:
        stream = _open_zstd(path, file)
    return _Bounded(stream, read_limits().max_decompressed_bytes)


class DecompressedTooLarge(Exception):
    """A compressed input decompresses to more than the limit (its first ``limit`` bytes
    were given)."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"decompresses to more than {limit:,} bytes (the limit: --max-decompressed-bytes)"
        )
        self.limit = limit


class _Bounded:
    """A decompressed stream cut at ``limit`` bytes: the bytes up to it are given, and the
    read after them raises :class:`DecompressedTooLarge` (a bomb costs no more than the
    limit, in memory or on disk)."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self._read1 = _reader(stream)
        self._left = limit
        self._limit = limit
        self._over = False

    def read1(self, size: int = -1) -> bytes:
        return self._bounded(self._read1(size if size >= 0 else 1 << 16))

    def read(self, size: int = -1) -> bytes:
        if size >= 0:
            return self._bounded(self._stream.read(size))
        pieces = []
        while piece := self.read1(1 << 20):
            pieces.append(piece)
        return b"".join(pieces)

    def _bounded(self, data: bytes) -> bytes:
        if self._over:
            raise DecompressedTooLarge(self._limit)
        if len(data) > self._left:
            if not self._left:
                raise DecompressedTooLarge(self._limit)
            data, self._left, self._over = data[: self._left], 0, True
        else:
            self._left -= len(data)
        return data

    def close(self) -> None:
        self._stream.close()


def _open_zstd(path: str, file: Any) -> Any:
    """A ``.zst`` trace, decompressed as it is read (the optional ``zstandard`` package)."""
    if zstandard is None:
        raise InputError(
            path, "reading .zst traces needs the zstandard package: pip install 'toolscore[zstd]'"
        )
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


def stall_problem(exc: TimeoutError) -> str:
    """What a read whose time ran out (a remote input's ``--http-timeout``) says."""
    seconds = read_limits().http_timeout
    return f"no answer for {seconds:g} s (the limit: --http-timeout) {exc}".strip()


def read_error(source: str, exc: Exception) -> InputError:
    if isinstance(exc, TimeoutError):
        return InputError(source, stall_problem(exc))
    if isinstance(exc, DecompressedTooLarge):
        return InputError(source, str(exc), offset=exc.limit)
    if isinstance(exc, EOFError):
        return TruncatedTrace(source, f"the compressed input ends early: {exc}")
    return MalformedTrace(source, f"cannot read the input: {exc}")


READ_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error, DecompressedTooLarge)
"""What reading a damaged or truncated compressed input raises."""
if zstandard is not None:  # a damaged .zst stream
    READ_ERRORS += (zstandard.ZstdError,)


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
