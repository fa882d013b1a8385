"""Writing JSON bytes for the report and its spools: :func:`dumps` (orjson, with a fallback for
any value), records joined with their separators, a thread that writes while the trace is
read (:class:`BackgroundWriter`), and copies between files in the kernel where it can."""

from __future__ import annotations

import contextlib
import json as _stdlib_json
import os
import queue
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import IO, Any, TypeVar

import orjson

from ..outputs import user_os_error
from ..result import json_safe

_Self = TypeVar("_Self", bound="_Closing")
_OPTIONS = orjson.OPT_NON_STR_KEYS
_CHUNK = 1 << 20
MAX_QUEUED = 4
"""Writes queued for a :class:`BackgroundWriter` at most (a batch makes two: its records and a
separator; a batch's records are a few hundred KB)."""


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """``value`` as JSON bytes; what JSON cannot hold is stored as its ``repr``.

    orjson does the work; values it refuses outright (integers beyond 64 bits) go through
    ``json_safe`` and, failing that, the standard library.
    """
    option = _OPTIONS | orjson.OPT_INDENT_2 if indent else _OPTIONS
    try:
        return orjson.dumps(value, default=_default, option=option)
    except TypeError:
        safe = json_safe(value)
        try:
            return orjson.dumps(safe, default=_default, option=option)
        except TypeError:
            text = _stdlib_json.dumps(safe, default=repr, indent=2 if indent else None)
            return text.encode("utf-8", "surrogatepass")


class _Closing:
    """``with`` closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def joined(texts: Iterable[bytes], separator: bytes) -> tuple[memoryview, int]:
    """Records made one at a time (JSON texts), each followed by ``separator``, in one
    buffer; and how many. Each text is copied in as soon as it is made, never held in a
    list: orjson's result takes at least 4 KiB of memory whatever its length, so a batch of
    4,000 findings held as a list took 16 MB."""
    out = bytearray()
    n = 0
    for text in texts:
        out += text
        out += separator
        n += 1
    return memoryview(out), n


class BackgroundWriter:
    """Appends to a file from a thread of its own, so that the kernel's share of a write
    (copying into the page cache, faulting its pages in) runs beside the reading instead of
    after it: ``write()`` waits only when :data:`MAX_QUEUED` writes are already queued, which
    bounds the memory held.

    The thread starts at the first write, not before: a trace read in parts forks its
    processes first, and a process that forks should have no other thread. Before anyone
    else touches the file (seek, tell, copy), :meth:`drain` waits for the queued writes and
    raises the first error one of them met.
    """

    def __init__(self, file: IO[bytes], name: str | None = None) -> None:
        self.file = file
        self.name = name
        """The path an error names (the user's report, not the temporary file)."""
        self._queue: queue.Queue[bytes | memoryview | None] = queue.Queue(MAX_QUEUED)
        self._thread: threading.Thread | None = None
        self._error: Exception | None = None

    @property
    def running(self) -> bool:
        """Whether the thread is running (it starts at the first write, ends at :meth:`stop`)."""
        return self._thread is not None

    def write(self, data: bytes | memoryview) -> None:
        if self._error is not None:
            raise self._error
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="toolscore-writer")
            self._thread.daemon = True
            self._thread.start()
        self._queue.put(data)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            try:
                if data is None:
                    return
                if self._error is None:
                    self.file.write(data)
            except OSError as exc:  # kept for the caller; the thread must live on to drain
                self._error = exc if self.name is None else user_os_error(exc, self.name)
            except Exception as exc:
                self._error = exc
            finally:
                self._queue.task_done()

    def drain(self) -> None:
        """Wait for every queued write; raise the first error met."""
        if self._thread is not None:
            self._queue.join()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """End the thread (queued writes are done first); errors are not raised here."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None


def _copy_range(src: int, dst: int, size: int, offset: int) -> None:
    """Copy the first ``size`` bytes of file descriptor ``src`` to ``dst`` at ``offset``,
    neither descriptor's position used (in the kernel where the system can)."""
    done = 0
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        with contextlib.suppress(OSError):  # another file system: copy through memory
            while done < size:
                n = copy_range(src, dst, size - done, done, offset + done)
                if n == 0:
                    break
                done += n
    while done < size:
        chunk = os.pread(src, min(_CHUNK, size - done), done)
        if not chunk:
            raise OSError(f"a spooled part ended {size - done} bytes early")
        os.pwrite(dst, chunk, offset + done)
        done += len(chunk)


def _copy(src: IO[bytes], out: IO[bytes], size: int, *, start: int = 0) -> None:
    """Copy ``size`` bytes of ``src`` from offset ``start`` to the end of ``out``."""
    out.flush()
    out.seek(0, os.SEEK_END)
    copy_range = getattr(os, "copy_file_range", None)
    size += start
    offset = start
    if copy_range is not None:
        try:
            while offset < size:
                done = copy_range(src.fileno(), out.fileno(), size - offset, offset)
                if done == 0:
                    break
                offset += done
        except OSError:  # another file system, or no support: copy through memory
            pass
        out.seek(0, os.SEEK_END)
    src.seek(offset)
    while offset < size:
        chunk = src.read(min(_CHUNK, size - offset))
        if not chunk:
            break
        out.write(chunk)
        offset += len(chunk)
    src.seek(0, os.SEEK_END)
