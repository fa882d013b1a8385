"""Where reports go: refused when they would overwrite an input, written through what is not a
regular file, and every error worded with the path the user gave.

A report path may be

- a regular file, or a path that does not exist yet: the report is written to a temporary file
  beside it and renamed onto it at the end (a reader never sees half a report, and an old report
  stays whole when the run fails); the temporary file is created exclusively under a name
  nobody can predict (:func:`tempfile.mkstemp`), so a link planted beside the report cannot
  redirect the write;
- a symbolic link: the same, onto the link's target (the link stays a link);
- a device node (``/dev/null``, ``/dev/stdout``, a terminal), a FIFO or a socket: the report is
  built in the system's temporary directory and copied into it at the end, opened like ``>``
  in a shell, so ``-o /dev/null`` works for any user (no file is created in ``/dev``).

:func:`refuse_overlap` stops a run before anything is written when an output is one of the
inputs (the same file, by device and inode, however named: ``-o trace.json``, a hard link, a
symbolic link) or two outputs are the same file: a usage error, exit 2.

:class:`AtomicOutput` is the one way a report is written (every report of every door, the
per-trace file, baselines, the pytest plugin's report): :func:`write_report` for a report made
at once, the class itself for one written as the run goes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from .errors import UsageError

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "AtomicOutput",
    "OutputTarget",
    "file_mode",
    "open_append",
    "open_stream",
    "refuse_overlap",
    "resolve_output",
    "user_os_error",
    "write_report",
]


NEW_FILE_MODE = 0o666


@dataclass(frozen=True, slots=True)
class OutputTarget:
    """How a report path is written."""

    path: str
    """The path as the user gave it (what messages name)."""
    real: str
    """The path to replace (the final target of a symbolic link), or to open (a stream)."""
    stream: bool
    """Written through (a device, FIFO or socket) rather than replaced atomically."""

    @property
    def temp_directory(self) -> str:
        """Where the report is built: beside its file, or the system's temporary directory."""
        if self.stream:
            return tempfile.gettempdir()
        return os.path.dirname(self.real) or "."


def resolve_output(path: str | os.PathLike[str]) -> OutputTarget:
    """How to write a report to ``path`` (see the module's docstring).

    Raises:
        IsADirectoryError: ``path`` is a directory (the error names ``path``).
    """
    name = os.fspath(path)
    try:
        mode = os.stat(name).st_mode  # links followed, /proc's magic ones (/dev/stdout) too
    except OSError:
        return OutputTarget(name, os.path.realpath(name), stream=False)  # created by the rename
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(21, os.strerror(21), name)
    if not stat.S_ISREG(mode):
        return OutputTarget(name, name, stream=True)
    return OutputTarget(name, os.path.realpath(name), stream=False)


def _identity(path: str) -> tuple[int, int] | None:
    """``(device, inode)`` of the regular file at ``path`` (links followed), else ``None``."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None  # a terminal, /dev/stdin or a pipe may be an input and an output at once
    return st.st_dev, st.st_ino


def refuse_overlap(
    inputs: Iterable[tuple[str, str | None]], outputs: Iterable[tuple[str, str | None]]
) -> None:
    """Refuse outputs that are inputs, lie inside an input directory (a dataset's traces or
    gold directory, or the directory a glob reads), or are the same file as another output.

    Args:
        inputs: ``(what, path)`` pairs (``"the trace"``, ``"trace.jsonl"``); ``None`` or
            ``"-"`` paths are skipped.
        outputs: ``(option, path)`` pairs (``"-o"``, ``"toolscore.json"``).

    Raises:
        UsageError: naming the option, the path and the input it would overwrite.
    """
    seen: dict[tuple[int, int] | str, str] = {}
    folders: list[tuple[str, str]] = []
    for what, path in inputs:
        if path is None or path == "-" or "://" in path:
            continue
        identity = _identity(path)
        if identity is not None:
            seen.setdefault(identity, f"{what} {path}")
        folder = _input_folder(path)
        if folder is not None:
            folders.append((folder, f"{what} {path}"))
    for option, path in outputs:
        if path is None:
            continue
        real = os.path.realpath(path)
        for folder, what in folders:
            if real.startswith(folder + os.sep):
                raise UsageError(
                    f"{option} {path} is inside {what}, an input: refusing to write there "
                    "(it could be read as input, or overwrite one)"
                )
        key: tuple[int, int] | str | None = _identity(path)
        if key is None:
            real = os.path.realpath(path)
            # a path still to be created, named twice (-o r.json --markdown ./r.json)
            key = real if not os.path.exists(real) else None
        if key is None:
            continue
        other = seen.get(key)
        if other is not None:
            raise UsageError(f"{option} {path} is {other}: refusing to overwrite it")
        seen[key] = f"the output of {option} {path}"


def _input_folder(path: str) -> str | None:
    """The real directory an input reads everything below: a directory itself, or the
    directory part of a glob before its first wildcard; None for a file."""
    if any(c in path for c in "*?["):
        head = path[: min(path.index(c) for c in "*?[" if c in path)]
        folder = os.path.dirname(head) or "."
        return os.path.realpath(folder)
    if os.path.isdir(path):
        return os.path.realpath(path)
    return None


def user_os_error(exc: OSError, path: str) -> OSError:
    """``exc`` as an error about ``path`` (the user's), not about an internal temporary file:
    same errno and text (``No space left on device``), ``path`` as its file name."""
    if exc.errno is None:
        return OSError(f"{path}: {exc}")
    return type(exc)(exc.errno, exc.strerror or os.strerror(exc.errno), path)


def _standard_fd(path: str) -> int | None:
    """1 or 2 when ``path`` is this process's stdout or stderr (``/dev/stdout``, its pipe or
    terminal under another name), else ``None``. Writing to the descriptor itself works where
    opening the path may not: a pipe made by another user cannot be reopened through
    ``/proc/self/fd``, and reopening a file would not keep its offset."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    for fd in (1, 2):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (st.st_dev, st.st_ino) and not stat.S_ISREG(st.st_mode):
            return fd
    return None


def open_stream(path: str) -> IO[bytes]:
    """Open a device, FIFO or socket path to write a report into, like ``>`` in a shell (the
    process's own stdout or stderr when it is one of them)."""
    fd = _standard_fd(path)
    if fd is None:
        return open(path, "wb")
    (sys.stdout if fd == 1 else sys.stderr).flush()
    return os.fdopen(os.dup(fd), "wb")


def open_append(path: str) -> int:
    """A descriptor appending to ``path`` (created if need be), for a findings file; the
    process's own stdout or stderr when ``path`` names one of them."""
    fd = _standard_fd(path)
    if fd is not None:
        return os.dup(fd)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
    return os.open(path, flags, 0o644)


class AtomicOutput:
    """A report being written (see the module's docstring): :attr:`file` is an exclusive
    temporary file beside the report (or in the system's temporary directory for a device,
    FIFO or socket); :meth:`commit` renames it onto the report (or copies it through), and
    :meth:`discard` removes it, leaving an old report whole. As a context manager: committed
    when the block ends normally, discarded when it raises.

    Raises (the constructor and :meth:`commit`):
        OSError: naming ``path`` as given.
    """

    def __init__(self, path: str | os.PathLike[str], *, suffix: str = ".part") -> None:
        self.path = os.fspath(path)
        self.suffix = suffix
        try:
            self.target = resolve_output(self.path)
            fd, self.temp = tempfile.mkstemp(
                prefix=".toolscore-", suffix=suffix, dir=self.target.temp_directory
            )
        except OSError as exc:
            raise user_os_error(exc, self.path) from None
        self.file: IO[bytes] = os.fdopen(fd, "w+b")
        self.done = False
        """Committed or discarded."""

    @property
    def directory(self) -> str:
        """Where the temporary file is (other temporary files of the report go there too)."""
        return self.target.temp_directory

    def sibling(self) -> AtomicOutput:
        """Another temporary file for the same report (one rewritten whole, then taking this
        one's place: :meth:`discard` this one)."""
        return AtomicOutput(self.path, suffix=self.suffix)

    def commit(self) -> None:
        """Put the written file in place of the report (see the class's docstring)."""
        if self.done:
            return
        try:
            self.file.close()
            if self.target.stream:
                with open(self.temp, "rb") as src, open_stream(self.path) as out:
                    shutil.copyfileobj(src, out, 1 << 20)  # no seek: a FIFO has none
                os.unlink(self.temp)
            else:
                os.chmod(self.temp, file_mode())  # mkstemp's 0600 -> what open() would give
                os.replace(self.temp, self.target.real)
        except OSError as exc:
            self.discard()
            raise user_os_error(exc, self.path) from None
        except BaseException:
            self.discard()
            raise
        self.done = True

    def discard(self) -> None:
        """Remove the temporary file (the report, if any, stays as it was)."""
        self.done = True
        with contextlib.suppress(OSError):
            self.file.close()
        with contextlib.suppress(OSError):
            os.unlink(self.temp)

    def __enter__(self) -> AtomicOutput:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
            return
        self.discard()
        if isinstance(exc, OSError) and exc.filename is None:  # a write: name the report
            raise user_os_error(exc, self.path) from None


def write_report(path: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> None:
    """Write a whole report to ``path`` through an :class:`AtomicOutput`. ``data`` may be
    the report's chunks, written as they come (a report larger than memory).

    Raises:
        OSError: naming ``path`` as given.
    """
    with AtomicOutput(path) as output:
        for chunk in (data,) if isinstance(data, bytes) else data:
            output.file.write(chunk)


def file_mode() -> int:
    """The mode a new file gets (``0o666`` less the umask), for a report renamed into place."""
    return NEW_FILE_MODE & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
