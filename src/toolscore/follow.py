"""Live byte sources for ``toolscore watch``: a pipe or terminal read as bytes arrive, and a file
followed as it grows (``--follow``, like ``tail -F``).

Both are :class:`anyio.abc.ByteReceiveStream` objects, so anything that reads an async byte
stream (``evaluate_stream``, :func:`toolscore.live.watch`) reads them. Neither waits for a buffer
to fill: :class:`FdStream` returns whatever one ``os.read`` gives once the descriptor is
readable, and :class:`FileFollower` returns what the file has grown by, polling every
``poll_interval`` seconds when it has not (inotify is not portable; 50 ms keeps a new line's
latency well under the 100 ms ``watch`` promises).

How the follower tells what happened to the file, checked only when a read comes back empty:

- **Rotation** (``mv trace.jsonl trace.1; touch trace.jsonl``, logrotate's default): the path
  now names another inode. The old file is read to its end first, then the new one from its
  start, so the lines written to the old file just before it was moved are not lost.
- **Truncation** (``> trace.jsonl``, logrotate's ``copytruncate``): the open file is shorter
  than what was read. Reading starts again at offset 0.
- **Path gone** (moved away, not yet recreated): the old file stays open and is still read;
  the follower switches once a file appears at the path again.

When a file is left on a partial line (no final newline), a newline is inserted before the next
file's bytes, so the partial line is reported as one malformed line instead of being glued to
the next file's first line. A file truncated and regrown past the old offset between two polls
cannot be told from one that grew; like ``tail``, the follower then misses the rewritten head.
"""

from __future__ import annotations

import os
import stat
import sys

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

from .errors import InputError

__all__ = ["FdStream", "FileFollower"]

_CHUNK = 65536


class FdStream(anyio.abc.ByteReceiveStream):
    """Reads a file descriptor (stdin, a pipe, a terminal) as bytes arrive.

    Each :meth:`receive` waits until the descriptor is readable, then returns what one
    ``os.read`` gives, so a line written by a slow producer is handed on as soon as its bytes
    reach the pipe, never after a buffer fills. A regular file is read directly (it is always
    readable); where the event loop cannot watch the descriptor (Windows pipes) the read runs in
    a worker thread.

    The descriptor is not closed by :meth:`aclose` unless ``close_fd`` is set: stdin belongs
    to the process.

    Args:
        fd: the descriptor to read.
        close_fd: close ``fd`` in :meth:`aclose`.
        name: the name locations give (a FIFO's path), instead of ``<fd N>``.
    """

    def __init__(self, fd: int, *, close_fd: bool = False, name: str | None = None) -> None:
        self.fd = fd
        self.name = name if name is not None else "<stdin>" if fd == 0 else f"<fd {fd}>"
        """The name sources use in locations (``name``, else ``<stdin>`` for descriptor 0)."""
        self._close_fd = close_fd
        self._closed = False
        mode = os.fstat(fd).st_mode
        self._regular = stat.S_ISREG(mode)
        self._pollable = not self._regular and sys.platform != "win32"

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        """Return the next bytes available (at least one).

        Raises:
            anyio.EndOfStream: the writer closed its end (end of file).
            anyio.ClosedResourceError: the stream was closed.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        if self._regular:
            await anyio.lowlevel.checkpoint()
            data = os.read(self.fd, max_bytes)
        elif self._pollable:
            await anyio.wait_readable(self.fd)
            data = os.read(self.fd, max_bytes)
        else:  # pragma: no cover - Windows
            data = await anyio.to_thread.run_sync(
                os.read, self.fd, max_bytes, abandon_on_cancel=True
            )
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self._close_fd:
                os.close(self.fd)
        await anyio.lowlevel.checkpoint()


class FileFollower(anyio.abc.ByteReceiveStream):
    """Reads a file from its start and keeps reading as it grows, across truncation and rotation.

    The stream does not end by itself (a followed file has no end) unless ``idle_timeout`` is
    given: then it ends once no byte has arrived for that many seconds. Stop it by cancelling
    the reader or calling :meth:`aclose`.

    Args:
        path: the file to follow; it must exist when the follower is created.
        poll_interval: seconds between looks at the file while it has not grown.
        idle_timeout: end the stream after this many seconds without new bytes; ``None``
            follows forever.

    Raises:
        InputError: ``path`` cannot be opened.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        poll_interval: float = 0.05,
        idle_timeout: float | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.name = self.path
        """The name sources use in locations."""
        self.poll_interval = poll_interval
        self.idle_timeout = idle_timeout
        self.rotations = 0
        """How many times the follower moved on to a new file at ``path``."""
        self.truncations = 0
        """How many times the file was found shorter than what was read, and reread from 0."""
        self._fd: int | None = None
        self._ino = (0, 0)
        self._pos = 0
        self._last = b"\n"
        try:
            self._open()
        except OSError as exc:
            raise InputError(self.path, f"cannot follow: {exc.strerror or exc}") from exc

    def _open(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        st = os.fstat(fd)
        self._fd = fd
        self._ino = (st.st_dev, st.st_ino)
        self._pos = 0

    def _read(self, max_bytes: int) -> bytes:
        assert self._fd is not None
        data = os.read(self._fd, max_bytes)
        if data:
            self._pos += len(data)
            self._last = data[-1:]
        return data

    def _switch(self, max_bytes: int) -> bytes | None:
        """Called when a read came back empty: look for truncation or rotation.

        Returns bytes to hand on (the old file's last bytes, or a separating newline), or
        ``None`` when nothing happened and the caller should wait.
        """
        assert self._fd is not None
        if os.fstat(self._fd).st_size < self._pos:
            os.lseek(self._fd, 0, os.SEEK_SET)
            self._pos = 0
            self.truncations += 1
            return self._separator()
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        if (st.st_dev, st.st_ino) == self._ino:
            return None
        # Rotated: finish the old file (the writer may have appended since the empty read).
        tail = self._read(max_bytes)
        if tail:
            return tail
        os.close(self._fd)
        self._fd = None
        try:
            self._open()
        except FileNotFoundError:
            # Gone again between stat and open; keep waiting for the path.
            self._fd = os.open(os.devnull, os.O_RDONLY)
            self._ino = (0, 0)
            return None
        self.rotations += 1
        return self._separator()

    def _separator(self) -> bytes | None:
        if self._last != b"\n":
            self._last = b"\n"
            return b"\n"
        return None

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        """Return the bytes the file has grown by, waiting until there are some.

        Raises:
            anyio.EndOfStream: ``idle_timeout`` passed without new bytes.
            anyio.ClosedResourceError: the follower was closed.
        """
        waited = 0.0
        while True:
            if self._fd is None:
                raise anyio.ClosedResourceError
            data = self._read(max_bytes) or self._switch(max_bytes)
            if data:
                await anyio.lowlevel.checkpoint()
                return data
            if self.idle_timeout is not None and waited >= self.idle_timeout:
                raise anyio.EndOfStream
            await anyio.sleep(self.poll_interval)
            waited += self.poll_interval

    async def aclose(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        await anyio.lowlevel.checkpoint()
