"""A dataset's files: listed (a file, a directory, a glob, an fsspec URL), opened to read
(decompressed where their name says so) or to write, and the run's directories made and
removed, locally or through fsspec."""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
from dataclasses import dataclass
from typing import IO, Any

from ..errors import InputError, UsageError
from ..limits import read_limits
from ..redact import redact_secrets
from ..sources._drive import COMPRESSED, READ_ERRORS, decompressing, is_compressed, read_error
from ..sources._open import stall_problem
from .shape import is_url

_EXTENSIONS = (".jsonl", ".ndjson", ".json", ".txt", *COMPRESSED)


def open_fs(url: str, storage_options: dict[str, Any]) -> tuple[Any, str]:
    try:
        # fsspec is optional (the s3 and dask extras) and slow to import: URLs only
        from fsspec.core import url_to_fs
    except ImportError:  # pragma: no cover - depends on the extras installed
        raise UsageError(
            f"{url}: reading URLs needs fsspec: pip install 'toolscore[s3]' (or [dask])"
        ) from None
    fs, path = url_to_fs(url, **_with_timeout(url, storage_options))
    return fs, path


_HTTP = ("http://", "https://")


def _with_timeout(url: str, storage_options: dict[str, Any]) -> dict[str, Any]:
    """``storage_options`` for ``url``; for ``http(s)://``, with connect and read timeouts of
    :attr:`~toolscore.limits.ReadLimits.http_timeout` seconds unless the options give their
    own (``client_kwargs={"timeout": ...}``): a server that never answers, or stops sending,
    fails the read instead of hanging the run."""
    if not url.lower().startswith(_HTTP):
        return storage_options
    client = dict(storage_options.get("client_kwargs") or {})
    if "timeout" in client:
        return storage_options
    # aiohttp comes with fsspec's http filesystem, which is what reads these URLs
    import aiohttp

    seconds = read_limits().http_timeout
    client["timeout"] = aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)
    return {**storage_options, "client_kwargs": client}


def stalled(url: str, exc: TimeoutError) -> InputError:
    """The input error of a remote input whose time ran out (see :func:`_with_timeout`),
    naming ``url`` without its credentials."""
    return InputError(shown_url(url), stall_problem(exc))


def shown_url(url: str) -> str:
    """``url`` as it may be shown: its user name and password (``https://user:pw@host``)
    replaced, and what else looks like a credential redacted."""
    scheme, sep, rest = url.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        if "@" in host:
            host = "***@" + host.rsplit("@", 1)[1]
        url = f"{scheme}{sep}{host}{slash}{path}"
    return redact_secrets(url)


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


def printable_name(path: str) -> str:
    """``path`` as text: the bytes of a file name that are not UTF-8 (which Python keeps as
    lone surrogates, and no report can hold) written as ``\\xNN``."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    return path


def trace_name(relative: str) -> str:
    """``a/b.jsonl.gz`` -> ``a/b`` (see :func:`printable_name`)."""
    name = printable_name(relative).replace(os.sep, "/")
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


def _glob_base(pattern: str) -> tuple[str, list[str]]:
    """``traces/**/*.jsonl`` -> ``("traces", ["**", "*.jsonl"])``: the directory before the
    first wildcard, and the pattern's names below it."""
    names = pattern.split(os.sep)
    first = next(i for i, name in enumerate(names) if _glob_chars(name))
    return os.sep.join(names[:first]) or ("/" if pattern.startswith(os.sep) else ""), [
        name for name in names[first:] if name
    ]


def _matches(pattern: list[str], names: list[str]) -> bool:
    """Whether the path ``names`` matches ``pattern`` as :func:`glob.glob` with
    ``recursive=True`` does (``**``: any number of directories; a wildcard does not match a
    name starting with ``.``)."""
    if not pattern:
        return not names
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        for i in range(len(names) + 1):
            if _matches(rest, names[i:]):
                return True
            if i < len(names) and names[i].startswith("."):
                return False
        return False
    if not names or (names[0].startswith(".") and not head.startswith(".")):
        return False
    return fnmatch.fnmatchcase(names[0], head) and _matches(rest, names[1:])


def _walk(
    base: str, pattern: list[str] | None, follow: bool, skipped: list[str] | None
) -> list[str]:
    """The files below ``base`` (those matching ``pattern``, for a glob; else every file
    not hidden), sorted (see :func:`list_inputs` for links)."""
    top = base or "."
    root_real = os.path.realpath(top)
    depth = None if pattern is None or "**" in pattern else len(pattern) - 1
    seen_dirs = {root_real}
    found: list[str] = []

    def inside(path: str) -> bool:
        real = os.path.realpath(path)
        return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)

    def skip(path: str, why: str) -> None:
        if skipped is not None:
            skipped.append(f"{printable_name(path)}: {why}: skipped (--follow-symlinks reads it)")

    for root, dirs, files in os.walk(top, followlinks=follow):
        relative = [] if root == top else os.path.relpath(root, top).split(os.sep)
        dirs.sort()
        kept = []
        for name in dirs:
            path = os.path.join(root, name)
            if os.path.islink(path):
                real = os.path.realpath(path)
                if not follow:
                    if not inside(path):
                        skip(path, "a symbolic link out of the directory read")
                    continue  # (a link inside it: its files are read where they are)
                if real in seen_dirs:
                    continue  # a loop, or a directory read already
                seen_dirs.add(real)
            if depth is not None and len(relative) >= depth:
                continue
            kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            path = os.path.join(root, name)
            names = [*relative, name]
            if pattern is None and name.startswith("."):
                continue
            if pattern is not None and not _matches(pattern, names):
                continue
            if os.path.islink(path) and not follow and not inside(path):
                skip(path, "a symbolic link out of the directory read")
                continue
            if os.path.isfile(path):
                found.append(path if base else os.path.join(*names))
    return sorted(found)


def list_inputs(
    traces: str,
    storage_options: dict[str, Any] | None = None,
    *,
    follow_symlinks: bool = False,
    skipped: list[str] | None = None,
) -> list[Input]:
    """The files TRACES names, sorted by path. In a local directory or glob, a symbolic link
    that leads out of the directory read is skipped (never read, so nothing of its target
    reaches a report), each one named in ``skipped``, and a link to a directory is not
    entered (a loop of links ends); ``follow_symlinks`` follows both, each directory once.

    Raises:
        InputError: nothing matches, or a path does not exist.
    """
    options = storage_options or {}
    found: list[Input] = []
    if is_url(traces):
        try:
            found = _list_url(traces, options)
        except TimeoutError as exc:
            raise stalled(traces, exc) from None
    elif os.path.isdir(traces) or _glob_chars(traces):
        base, pattern = (traces, None) if os.path.isdir(traces) else _glob_base(traces)
        for path in _walk(base, pattern, follow_symlinks, skipped):
            relative = os.path.relpath(path, base or ".")
            found.append(Input(path, os.path.getsize(path), trace_name(relative)))
    elif os.path.isfile(traces):
        found.append(Input(traces, os.path.getsize(traces), trace_name(os.path.basename(traces))))
    else:
        raise InputError(traces, "file not found")
    if not found:
        raise InputError(traces, "no trace file matches")
    found.sort(key=lambda item: item.url)
    return found


def _list_url(traces: str, options: dict[str, Any]) -> list[Input]:
    """The files a URL names (a file, a directory, a glob)."""
    found: list[Input] = []
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
    return found


def open_input(url: str, storage_options: dict[str, Any] | None = None) -> IO[bytes]:
    """A binary file for ``url`` (seekable; not decompressed)."""
    if is_url(url):
        try:
            fs, path = open_fs(url, storage_options or {})
            f: IO[bytes] = fs.open(path, "rb", block_size=4 * 1024 * 1024)
        except TimeoutError as exc:
            raise stalled(url, exc) from None
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


def out_of_space(exc: BaseException, directory: str) -> InputError | None:
    """The input error for ``exc`` when it says the disk under ``directory`` (the run's
    temporary files) is full: ``ENOSPC``, or SQLite's "database or disk is full"; else
    None."""
    full = isinstance(exc, OSError) and exc.errno == errno.ENOSPC
    if not full and type(exc).__name__ == "OperationalError":  # (sqlite3, imported lazily)
        full = "disk is full" in str(exc)
    if not full:
        return None
    return InputError(
        directory,
        "no space left for the run's temporary files (a large compressed input? see "
        "--max-decompressed-bytes; or point TMPDIR at a larger disk)",
    )


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
