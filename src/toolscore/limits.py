"""The limits that bound the work one input can cause, and how they are enforced.

- :data:`MAX_DEPTH`: a JSON document, a JSON line, or a JSON string holding arguments may
  nest arrays and objects at most 1,000 levels deep (the outermost container is level 1).
  Deeper input is an input error that names the file and the line or byte offset, raised
  before the deep part is built in memory.
- :func:`max_value_bytes` (default :data:`DEFAULT_MAX_VALUE_BYTES`, 64 MiB): the most bytes of
  one value that a reader holds whole: a JSON line, one item of a JSON array read in runs, or
  one string of a JSON document. A larger one is an input error with its position (a JSON
  line is skipped as one input finding and the rest of the trace is read). Set it with
  ``toolscore eval --max-value-bytes N`` or :func:`value_limit`.
- :class:`ReadLimits` (:func:`read_limits`, :func:`reading_limits`): the most bytes one
  compressed input may decompress to (default 8 GiB, ``--max-decompressed-bytes``), the most
  bytes of one trace a dataset holds in memory to evaluate it (default 256 MiB,
  ``--max-trace-bytes``), and how long a remote input (``http://``, ``https://``) may take
  to connect or to send its next bytes (default 30 s, ``--http-timeout``). Past each, an
  input error naming the file (and the offset or the trace); what was read before is still
  evaluated, and so is the rest of a dataset.

How the depth is held without a second pass over every byte: the decoders written in C
(msgspec, :mod:`json`) count their nesting against Python's recursion limit, so
:func:`bounded_depth` lowers that limit, around one decode, to the current stack depth plus
:data:`MAX_DEPTH` (calibrated once, at import, on this interpreter); a deeper value fails with
``RecursionError`` there, and the caller names the position. ijson's yajl parser has no such
bound (and keeps one prefix string per open level, so 100,000 levels cost gigabytes): its
input goes through :class:`~toolscore.sources._depth.DepthGuard`, an exact byte scanner.
Where the interpreter's C decoders do not follow the recursion limit (Python 3.12 and later
count C recursion separately), :data:`DECODE_LIMIT_EXACT` is False and the fast decoders'
input goes through the byte scanner too (``TOOLSCORE_DEPTH_SCANNER=1`` in the environment
chooses that everywhere).

The checks and reports walk argument values recursively; :func:`ensure_recursion_limit`
(called whenever a trace is opened) raises Python's recursion limit, never lowers it, so a
value 1,000 levels deep can be walked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

import msgspec

from .errors import UsageError

__all__ = [
    "APPROX_PAIRING_CANDIDATES",
    "DECODE_LIMIT_EXACT",
    "DEFAULT_MAX_VALUE_BYTES",
    "EXACT_PAIRING_ENV",
    "EXACT_PAIRING_MAX_GOLD",
    "MARGIN",
    "MAX_DEPTH",
    "PARALLEL_MIN_BYTES",
    "RECURSION_LIMIT",
    "ReadLimits",
    "bounded_depth",
    "decode_limit_exact",
    "ensure_recursion_limit",
    "exact_pairing_max",
    "max_value_bytes",
    "read_limits",
    "reading_limits",
    "value_limit",
]

MAX_DEPTH = 1000
"""The deepest nesting of arrays and objects read (the outermost container is level 1)."""

MARGIN = 16
"""Levels of slack in :func:`bounded_depth` where exactness matters: the C decoders' count of
their nesting can be off by a few levels, so a decode is first held :data:`MARGIN` levels
below the limit and a refused text is measured exactly (``sources._depth.decode_checked``)."""

DEFAULT_MAX_VALUE_BYTES = 64 << 20
"""The default of :func:`max_value_bytes`: 64 MiB."""

PARALLEL_MIN_BYTES = 16 << 20
"""The smallest part of a trace worth a process of its own (:mod:`toolscore.parts.trace`, which
reads it as its own ``PARALLEL_MIN_BYTES``)."""

EXACT_PAIRING_MAX_GOLD = 2000
"""The most gold calls of one tool for which the argument pairing is exact (Toolscore's
one-to-one pairing, solved exactly: memory grows with the square of this count, time with it
times the tool's trace calls). A tool with more gold calls is paired by the bounded
approximation of :mod:`toolscore.checks.expected.approx`, which the report flags
(``argument_metrics.pairing``). ``expected_check(exact_pairing_max=...)`` or the environment
variable :data:`EXACT_PAIRING_ENV` overrides it (:func:`exact_pairing_max`)."""

EXACT_PAIRING_ENV = "TOOLSCORE_EXACT_PAIRING_MAX"
"""The environment variable that overrides :data:`EXACT_PAIRING_MAX_GOLD` (a whole number
>= 0), for the command line and the worker processes alike."""


def exact_pairing_max() -> int:
    """:data:`EXACT_PAIRING_MAX_GOLD`, or the whole number in :data:`EXACT_PAIRING_ENV`.

    Raises:
        UsageError: the variable is set to something else.
    """
    raw = os.environ.get(EXACT_PAIRING_ENV, "").strip()
    if not raw:
        return EXACT_PAIRING_MAX_GOLD
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(f"{EXACT_PAIRING_ENV} must be a whole number >= 0, not {raw[:40]!r}")
    return value


APPROX_PAIRING_CANDIDATES = 16
"""Past :data:`EXACT_PAIRING_MAX_GOLD`, the candidate trace calls kept per gold call."""

RECURSION_LIMIT = 10 * MAX_DEPTH
"""Python's recursion limit while a trace is read: the checks' and reports' recursive walks
of a value :data:`MAX_DEPTH` deep take up to three frames a level."""

_max_value_bytes: ContextVar[int] = ContextVar(
    "toolscore_max_value_bytes", default=DEFAULT_MAX_VALUE_BYTES
)

T = TypeVar("T")


def max_value_bytes() -> int:
    """The largest value a reader holds whole, in bytes (see the module docstring)."""
    return _max_value_bytes.get()


@contextlib.contextmanager
def value_limit(limit: int | None) -> Iterator[None]:
    """Within the block, readers opened refuse values larger than ``limit`` bytes (``None``
    keeps the current limit).

    Raises:
        UsageError: ``limit`` is not a positive integer.
    """
    if limit is None:
        yield
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise UsageError(f"max_value_bytes must be a positive integer, got {limit!r}")
    token = _max_value_bytes.set(limit)
    try:
        yield
    finally:
        _max_value_bytes.reset(token)


def set_max_value_bytes(limit: int) -> None:
    """Set :func:`max_value_bytes` for the rest of this context (the CLI's option)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise UsageError(f"--max-value-bytes must be a positive integer, got {limit!r}")
    _max_value_bytes.set(limit)


DEFAULT_MAX_DECOMPRESSED_BYTES = 8 << 30
"""The default of :attr:`ReadLimits.max_decompressed_bytes`: 8 GiB."""

DEFAULT_MAX_TRACE_BYTES = 256 << 20
"""The default of :attr:`ReadLimits.max_trace_bytes`: 256 MiB."""

DEFAULT_HTTP_TIMEOUT = 30.0
"""The default of :attr:`ReadLimits.http_timeout`: 30 seconds."""


@dataclasses.dataclass(frozen=True)
class ReadLimits:
    """How much reading one input may cost (see the module docstring); picklable, so a
    dataset's workers get the run's.

    Raises:
        UsageError: a limit that is not a positive number.
    """

    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    """The most bytes a compressed input (``.gz``, ``.zst``) is decompressed to, in every
    engine and by every reader (a copy on disk included)."""
    max_trace_bytes: int = DEFAULT_MAX_TRACE_BYTES
    """The most bytes of one trace of a multi-trace file a dataset holds to evaluate it."""
    http_timeout: float = DEFAULT_HTTP_TIMEOUT
    """Seconds a remote input may take to connect, and between two reads of its bytes."""

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise UsageError(f"{item.name} must be a positive number, got {value!r}")


_read_limits: ContextVar[ReadLimits | None] = ContextVar("toolscore_read_limits", default=None)


def read_limits() -> ReadLimits:
    """The :class:`ReadLimits` in force."""
    return _read_limits.get() or _DEFAULT_READ_LIMITS


_DEFAULT_READ_LIMITS = ReadLimits()


@contextlib.contextmanager
def reading_limits(limits: ReadLimits | None = None, /, **changes: float) -> Iterator[None]:
    """Within the block, inputs opened follow ``limits`` (``None``: the ones in force), with
    ``changes`` (:class:`ReadLimits` fields by name) applied."""
    chosen = dataclasses.replace(limits or read_limits(), **changes)  # type: ignore[arg-type]
    token = _read_limits.set(chosen)
    try:
        yield
    finally:
        _read_limits.reset(token)


def set_read_limits(limits: ReadLimits) -> None:
    """Set :func:`read_limits` for the rest of this context (the CLI's options)."""
    _read_limits.set(limits)


def ensure_recursion_limit() -> None:
    """Raise Python's recursion limit to :data:`RECURSION_LIMIT` (never lower it)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


_DEPTH_IN_MESSAGE = re.compile(r"recursion depth (\d+)")


def _recursion_depth() -> int | None:
    """The current thread's recursion depth as Python counts it against the limit (Python
    frames and C-level recursive calls alike): the one place it is told is the message of a
    refused ``sys.setrecursionlimit``; None when the message does not say it."""
    try:
        sys.setrecursionlimit(1)
    except RecursionError as exc:
        m = _DEPTH_IN_MESSAGE.search(str(exc))
        return int(m.group(1)) if m else None
    sys.setrecursionlimit(RECURSION_LIMIT)  # pragma: no cover - a limit of 1 was accepted
    return None


_slack = {"msgspec": 0, "json": 0}


def decode_limit_exact() -> bool:
    """Whether :func:`bounded_depth` holds the C decoders to a depth on this interpreter
    (found once, on first use); where it does not, readers measure deep texts with the byte
    scanner before decoding them."""
    if not _calibrated:
        _calibrate()
    return DECODE_LIMIT_EXACT


class bounded_depth:
    """Within the block, C decoders (``kind``: ``msgspec`` or ``json``) refuse, with
    ``RecursionError``, values nested deeper than ``levels``. A no-op where that cannot be
    done (:data:`DECODE_LIMIT_EXACT` False)."""

    __slots__ = ("_kind", "_levels", "_old", "_within")

    def __init__(
        self, levels: int = MAX_DEPTH, kind: str = "msgspec", within: Sequence[Any] = ()
    ) -> None:
        self._levels = levels
        self._kind = kind
        self._old = 0
        self._within = within
        """The texts the block decodes, when known: small ones with fewer opening brackets
        than ``levels`` cannot nest that deep, and the depth is then not measured."""

    def __enter__(self) -> None:
        if not _calibrated:
            _calibrate()
        self._old = sys.getrecursionlimit()
        if self._within and shallow(self._within, self._levels):
            return
        depth = _recursion_depth() if DECODE_LIMIT_EXACT else None
        if depth is not None:
            sys.setrecursionlimit(depth + self._levels + _slack[self._kind])

    def __exit__(self, *exc: object) -> None:
        sys.setrecursionlimit(self._old)


SHALLOW_SCAN_BYTES = 64 * 1024
"""Texts up to this size are counted for opening brackets before a bounded decode (cheaper
than measuring the recursion depth, a refused ``sys.setrecursionlimit`` of ~10 µs)."""


def shallow(texts: Sequence[Any], levels: int) -> bool:
    """Whether ``texts`` (bytes-like) surely nest no deeper than ``levels``: they are small
    (:data:`SHALLOW_SCAN_BYTES` in all) and hold at most ``levels`` opening brackets (a value
    nested ``n`` deep opens ``n`` arrays or objects)."""
    size = 0
    opened = 0
    for text in texts:
        size += len(text)
        if size > SHALLOW_SCAN_BYTES:
            return False
        data = text if isinstance(text, bytes) else bytes(text)
        opened += data.count(b"[") + data.count(b"{")
    return opened <= levels


def decode_bounded(
    decode: Callable[[bytes], T], data: bytes, levels: int = MAX_DEPTH, kind: str = "msgspec"
) -> T:
    """``decode(data)`` refusing nesting deeper than ``levels`` (``RecursionError``)."""
    with bounded_depth(levels, kind):
        return decode(data)


def _json_loads(data: bytes) -> object:
    return json.loads(data.decode("utf-8"))


def _calibrate() -> None:
    """Set :data:`DECODE_LIMIT_EXACT` (at the first bounded decode, not at import: the
    import machinery's own frames would skew the figure)."""
    global DECODE_LIMIT_EXACT, _calibrated
    _calibrated = True
    if os.environ.get("TOOLSCORE_DEPTH_SCANNER") == "1":
        DECODE_LIMIT_EXACT = False  # measure every deep text with the byte scanner
        return
    found: list[bool] = []
    # In a thread of its own: the figure must not depend on the frames it is called from.
    thread = threading.Thread(target=lambda: found.append(_find_slack()))
    thread.start()
    thread.join()
    DECODE_LIMIT_EXACT = bool(found and found[0])


def _find_slack() -> bool:
    """Find, for each kind of decoder, the slack that makes :func:`decode_bounded` admit
    exactly ``levels`` levels; False when the recursion limit does not govern them here."""
    n = MAX_DEPTH
    deep_ok = b"[" * n + b"]" * n
    too_deep = b"[" * (n + 1) + b"]" * (n + 1)
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old, RECURSION_LIMIT))
        for kind, decode in (("msgspec", msgspec.json.decode), ("json", _json_loads)):
            for slack in range(-5, 40):
                _slack[kind] = slack
                try:
                    decode_bounded(decode, deep_ok, n, kind)
                except RecursionError:
                    continue
                try:
                    decode_bounded(decode, too_deep, n, kind)
                except RecursionError:
                    break
                return False
            else:
                return False
        return True
    finally:
        sys.setrecursionlimit(old)


_calibrated = False
DECODE_LIMIT_EXACT = True
"""Whether :func:`bounded_depth` holds msgspec and :mod:`json` to an exact depth here (found
at the first bounded decode)."""
