"""User patterns (``$regex`` rules, :class:`~toolscore.matchers.Regex`) with Python ``re``'s
meaning, run in linear time on RE2.

A pattern is first compiled by Python's ``re`` (so its syntax and its errors are exactly
Python's), then read once by :func:`translate`, a small reader of Python's documented regular
expression syntax, which writes the same pattern for RE2:

- ``\\d``, ``\\w``, ``\\s`` and their negations become the exact sets of characters Python's
  ``re`` gives them (read from ``re`` itself, once per process), not RE2's ASCII ones;
- ``^``, ``$``, ``.`` and case are written out per flag scope (``re.MULTILINE``, ``re.DOTALL``,
  ``re.IGNORECASE``, ``re.ASCII``, ``re.VERBOSE`` and their inline forms);
- ``\\Z`` becomes ``\\z``, ``{,n}`` becomes ``{0,n}``, character escapes (``\\x``, ``\\u``,
  ``\\U``, ``\\N{...}``, octal) become code points.

A pattern that needs what RE2 cannot run in linear time (backreferences, lookahead and
lookbehind, conditional groups, atomic groups, possessive quantifiers, repetition counts over
1000) runs on Python's ``re`` under a time bound instead, or is refused
(:class:`PatternError`, with the position in the pattern) when the caller asks so.

Three things RE2 cannot say exactly as Python does; where a text makes them matter, that one
match also runs on Python's ``re`` under the bound: ``\\b``/``\\B`` and ``re.IGNORECASE``
on a text that is not ASCII (RE2's word boundary is ASCII, its case folding Unicode's rather
than Python's; a non-ASCII letter under ``re.IGNORECASE`` sends every text there), and a
``$`` without ``re.MULTILINE`` on a text ending with a newline (Python's ``$`` also matches
before that newline).

The bound: one match on Python's ``re`` may take :data:`TIME_LIMIT` seconds, and one
pattern's such matches :data:`TIME_BUDGET` seconds in all (plus :data:`RUN_ALLOWANCE` a
match); past either, :class:`PatternTimeout`. It is a ``SIGALRM`` timer, so it holds in the
main thread on Python 3.11+ (whose ``re`` stops for signals); elsewhere those matches run
unbounded.
"""

from __future__ import annotations

import array
import functools
import re
import signal
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import re2

__all__ = [
    "TIME_LIMIT",
    "PatternError",
    "PatternTimeout",
    "Translation",
    "UserPattern",
    "class_ranges",
    "translate",
]

TIME_LIMIT = 0.25
"""Seconds one match run by Python's ``re`` (see the module docstring) may take."""
TIME_BUDGET = 1.0
RUN_ALLOWANCE = 50e-6
"""Seconds one pattern's matches on Python's ``re`` may take in all: ``TIME_BUDGET`` plus
``RUN_ALLOWANCE`` for each such match (so ordinary matches never run out); past it, its
matches on Python's ``re`` time out at once."""


class PatternError(re.error, ValueError):
    """A pattern that is not valid Python syntax, or that needs what RE2 does not run.

    A :class:`re.error` (as Python's ``re`` raises for a bad pattern) and a ``ValueError``.
    Its message is ``problem``, then Python's ``at position N`` (with the line and column for
    a pattern of several lines).

    Args:
        problem: what is wrong, in a few words.
        pattern: the pattern.
        position: 0-based index in the pattern, when known.
        refused: True when the pattern is valid Python but needs backtracking (or exceeds
            RE2's limits); False when it is not valid at all.
    """

    def __init__(
        self, problem: str, pattern: str, position: int | None = None, *, refused: bool = False
    ) -> None:
        super().__init__(problem, pattern, position)
        self.problem = problem
        self.position = position
        self.refused = refused


class PatternTimeout(Exception):
    """A match run by Python's ``re`` took longer than :data:`TIME_LIMIT`."""


# -- the character sets of Python's re, read from re itself ------------------------------


_SETS: dict[tuple[str, bool], tuple[tuple[int, int], ...]] = {}
_CHUNK = 0x10000


def class_ranges(name: str, ascii_only: bool) -> tuple[tuple[int, int], ...]:
    """The code point ranges of Python's ``\\d``, ``\\w`` or ``\\s`` (``name``), read from
    ``re`` itself over every code point (the ASCII ones under ``re.ASCII``, whose classes
    are ASCII), 65,536 at a time, on first use (about 15 ms), unless
    :mod:`toolscore._classes` has them for this Python version and Unicode database."""
    key = (name, ascii_only)
    found = _SETS.get(key)
    if found is not None:
        return found
    if not ascii_only:
        from ._classes import known_ranges

        found = known_ranges(name)  # read from re by this very Python version, once
        if found is not None:
            _SETS[key] = found
            return found
    runs = re.compile(f"(?{'a' if ascii_only else 'u'})\\{name}+")
    out: list[tuple[int, int]] = []
    # The code points of one plane as UTF-32-LE: the low 16 bits of each (made once), the
    # plane number in each third byte; so no plane costs a Python int per code point.
    size = 0x80 if ascii_only else _CHUNK
    plane = bytearray(array.array("I", range(size)).tobytes())
    for base in range(0, 0x80 if ascii_only else 0x110000, _CHUNK):
        plane[2::4] = bytes((base >> 16,)) * size
        for m in runs.finditer(plane.decode("utf-32-le", "surrogatepass")):
            lo, hi = base + m.start(), base + m.end() - 1
            if out and out[-1][1] == lo - 1:
                lo = out.pop()[0]
            out.append((lo, hi))
    _SETS[key] = found = tuple(out)
    return found


@functools.cache
def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= 0x10FFFF:
        out.append((start, 0x10FFFF))
    return tuple(out)


def _char(code: int) -> str:
    c = chr(code)
    if c.isascii() and (c.isalnum() or c == "_"):
        return c
    return f"\\x{{{code:x}}}"


def _class_items(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(_char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}" for lo, hi in ranges)


# -- reading Python's syntax ---------------------------------------------------------------

_WHITESPACE = frozenset(" \t\n\r\v\f")
_CONTROL = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")
_DIGITS = frozenset("0123456789")
_FLAG_LETTERS = {
    "a": re.ASCII,
    "i": re.IGNORECASE,
    "L": re.LOCALE,
    "m": re.MULTILINE,
    "s": re.DOTALL,
    "u": re.UNICODE,
    "x": re.VERBOSE,
}


@dataclass(frozen=True)
class _Scope:
    ignorecase: bool
    multiline: bool
    dotall: bool
    verbose: bool
    ascii: bool

    @classmethod
    def of(cls, flags: int) -> _Scope:
        return cls(
            ignorecase=bool(flags & re.IGNORECASE),
            multiline=bool(flags & re.MULTILINE),
            dotall=bool(flags & re.DOTALL),
            verbose=bool(flags & re.VERBOSE),
            ascii=bool(flags & re.ASCII),
        )

    def with_flags(self, on: int, off: int) -> _Scope:
        scope = self
        for flag, name in (
            (re.IGNORECASE, "ignorecase"),
            (re.MULTILINE, "multiline"),
            (re.DOTALL, "dotall"),
            (re.VERBOSE, "verbose"),
            (re.ASCII, "ascii"),
        ):
            if on & flag:
                scope = replace(scope, **{name: True})
            if off & flag:
                scope = replace(scope, **{name: False})
        if on & re.UNICODE:
            scope = replace(scope, ascii=False)
        return scope


@dataclass
class Translation:
    """A Python pattern written for RE2, and what it holds.

    ``refused`` names the first construct RE2 cannot run (``None``: none), at
    ``refused_at``. ``pattern`` is the translation with ``^``/``$`` as written;
    ``joined`` the one for a search over texts joined by newlines (``^``/``$`` at every
    line), ``None`` when the pattern holds ``\\A`` or ``\\Z``.
    """

    pattern: str = ""
    joined: str | None = None
    refused: str | None = None
    refused_at: int | None = None
    nonboundary: bool = False
    """``\\B`` somewhere: Python's never matches in an empty text, RE2's does."""
    boundary: bool = False
    """``\\b`` outside ``re.ASCII``, or ``\\B``: exact on ASCII text only."""
    casefold: bool = False
    """``re.IGNORECASE`` somewhere: exact on ASCII text only."""
    casefold_wide: bool = False
    """A non-ASCII letter under ``re.IGNORECASE``: exact on no text."""
    dollar: bool = False
    """``$`` without ``re.MULTILINE``: exact on texts not ending with a newline."""
    anchored: bool = False
    """``\\A`` or ``\\Z``."""
    _parts: list[tuple[str, str]] = field(default_factory=list)


_BACKTRACKING = "it needs backtracking; patterns run on RE2, in linear time"


class _Reader:
    def __init__(self, pattern: str, flags: int) -> None:
        self.p = pattern
        self.i = 0
        self.out = Translation()
        self.scopes = [_Scope.of(flags)]
        self.parts: list[tuple[str, str]] = []  # (as written, for the joined search)

    @property
    def scope(self) -> _Scope:
        return self.scopes[-1]

    def refuse(self, what: str, at: int, why: str = _BACKTRACKING) -> None:
        if self.out.refused is None:
            self.out.refused = f"{what} is not supported ({why})"
            self.out.refused_at = at

    def emit(self, text: str, joined: str | None = None) -> None:
        self.parts.append((text, text if joined is None else joined))

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.p[j] if j < len(self.p) else ""

    def run(self) -> Translation:
        p = self.p
        while self.i < len(p):
            c = p[self.i]
            if self.scope.verbose and c in _WHITESPACE:
                self.i += 1
                continue
            if self.scope.verbose and c == "#":
                end = p.find("\n", self.i)
                self.i = len(p) if end < 0 else end + 1
                continue
            start = self.i
            self.i += 1
            if c == "\\":
                self.escape(start)
            elif c == "[":
                self.char_class(start)
            elif c == "(":
                self.group(start)
            elif c == ")":
                if len(self.scopes) > 1:
                    self.scopes.pop()
                self.emit(")")
            elif c == "|":
                self.emit("|")
            elif c == ".":
                self.emit("(?s:.)" if self.scope.dotall else "[^\\n]")
            elif c == "^":
                self.emit("(?m:^)" if self.scope.multiline else "\\A", "(?m:^)")
            elif c == "$":
                if self.scope.multiline:
                    self.emit("(?m:$)")
                else:
                    self.out.dollar = True
                    self.emit("\\z", "(?m:$)")
            elif c in "*+?":
                self.emit(c)
                self.quantifier_suffix(start)
            elif c == "{":
                self.brace(start)
            else:
                self.literal(ord(c))
        out = self.out
        out.pattern = "".join(text for text, _ in self.parts)
        if not out.anchored:
            out.joined = "".join(joined for _, joined in self.parts)
        return out

    def literal(self, code: int) -> None:
        c = chr(code)
        if self.scope.ignorecase and c.lower() != c.upper():
            self.out.casefold = True
            if not c.isascii():
                self.out.casefold_wide = True
            self.emit(f"(?i:{_char(code)})")
        elif self.scope.ignorecase and not c.isascii():
            # uncased for str.lower/upper, yet Python's re may still fold it (fixes table)
            self.out.casefold = self.out.casefold_wide = True
            self.emit(_char(code))
        else:
            self.emit(_char(code))

    def quantifier_suffix(self, start: int) -> None:
        nxt = self.peek()
        if nxt == "?":
            self.i += 1
            self.emit("?")
        elif nxt == "+":
            self.refuse("a possessive quantifier", start)
            self.i += 1

    def brace(self, start: int) -> None:
        p = self.p
        j = self.i
        if j < len(p) and p[j] == "}":
            self.literal(ord("{"))
            return
        lo = hi = ""
        while j < len(p) and p[j] in _DIGITS:
            lo += p[j]
            j += 1
        if j < len(p) and p[j] == ",":
            j += 1
            while j < len(p) and p[j] in _DIGITS:
                hi += p[j]
                j += 1
        else:
            hi = lo
        if j >= len(p) or p[j] != "}":
            self.literal(ord("{"))
            return
        self.i = j + 1
        low = int(lo) if lo else 0
        high = int(hi) if hi else None
        if low > 1000 or (high is not None and high > 1000):
            self.refuse("a repetition count over 1000", start, "RE2's limit")
        self.emit(f"{{{low},{'' if high is None else high}}}")
        self.quantifier_suffix(start)

    def _code_escape(self, c: str, start: int) -> int | None:
        """The code point of a character escape (after the backslash and ``c``)."""
        p = self.p
        if c in _CONTROL:
            return _CONTROL[c]
        if c in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[c]
            digits = p[self.i : self.i + n]
            self.i += n
            return int(digits, 16)
        if c == "N":
            end = p.index("}", self.i)
            name = p[self.i + 1 : end]
            self.i = end + 1
            return ord(unicodedata.lookup(name))
        return None

    def escape(self, start: int) -> None:
        p = self.p
        c = p[self.i]
        self.i += 1
        code = self._code_escape(c, start)
        if code is not None:
            self.literal(code)
        elif c in "dwsDWS":
            ranges = class_ranges(c.lower(), self.scope.ascii)
            neg = "^" if c.isupper() else ""
            self.emit(f"[{neg}{_class_items(ranges)}]")
        elif c in "bB":
            # RE2 matches on UTF-8 bytes: outside re.ASCII its word boundary is ASCII's, and
            # even under re.ASCII its \B matches between the bytes of one non-ASCII
            # character ('0\x800'), where Python's never does.
            if not self.scope.ascii or c == "B":
                self.out.boundary = True
            if c == "B":
                self.out.nonboundary = True
            self.emit(f"\\{c}")
        elif c == "A":
            self.out.anchored = True
            self.emit("\\A")
        elif c in "Zz":  # \z: Python 3.14's spelling of \Z
            self.out.anchored = True
            self.emit("\\z")
        elif c == "0":
            digits = c
            while len(digits) < 3 and self.peek() in _OCT and self.peek():
                digits += p[self.i]
                self.i += 1
            self.literal(int(digits, 8))
        elif c in _DIGITS:
            if (
                c in _OCT
                and self.peek() in _OCT
                and self.peek(1) in _OCT
                and self.peek()
                and self.peek(1)
            ):
                self.literal(int(p[start + 1 : start + 4], 8))
                self.i = start + 4
            else:
                while self.peek() in _DIGITS and self.peek():
                    self.i += 1
                self.refuse("a backreference", start)
        else:
            self.literal(ord(c))

    def char_class(self, start: int) -> None:
        p = self.p
        negate = False
        if self.peek() == "^":
            negate = True
            self.i += 1
        items: list[str] = []
        wide = False
        first = True
        while True:
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            here = self.i
            self.i += 1
            code: int | None
            if c == "\\":
                e = p[self.i]
                self.i += 1
                if e in "dwsDWS":
                    ranges = class_ranges(e.lower(), self.scope.ascii)
                    if e.isupper():
                        ranges = _complement(ranges)
                    items.append(_class_items(ranges))
                    continue
                if e == "b":
                    code = 8
                elif e in _OCT:
                    digits = e
                    while len(digits) < 3 and self.peek() in _OCT and self.peek():
                        digits += p[self.i]
                        self.i += 1
                    code = int(digits, 8)
                else:
                    code = self._code_escape(e, here)
                    if code is None:
                        code = ord(e)
            else:
                code = ord(c)
            hi = code
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                d = p[self.i]
                self.i += 1
                if d == "\\":
                    e = p[self.i]
                    self.i += 1
                    if e == "b":
                        hi = 8
                    elif e in _OCT:
                        digits = e
                        while len(digits) < 3 and self.peek() in _OCT and self.peek():
                            digits += p[self.i]
                            self.i += 1
                        hi = int(digits, 8)
                    else:
                        got = self._code_escape(e, here)
                        hi = ord(e) if got is None else got
                else:
                    hi = ord(d)
            if code > 0x7F or hi > 0x7F:
                wide = True
            items.append(_char(code) if code == hi else f"{_char(code)}-{_char(hi)}")
        body = "".join(items) or ""
        if not body:
            # Python's [^] cannot happen (a ']' first is a literal); keep RE2 happy anyway
            body = "\\x{0}-\\x{10ffff}" if negate else ""
        text = f"[{'^' if negate else ''}{body}]"
        if self.scope.ignorecase:
            self.out.casefold = True
            if wide:
                self.out.casefold_wide = True
            text = f"(?i:{text})"
        self.emit(text)

    def group(self, start: int) -> None:
        p = self.p
        if self.peek() != "?":
            self.scopes.append(self.scope)
            self.emit("(?:")
            return
        self.i += 1
        c = p[self.i]
        if c == "P":
            if self.peek(1) == "<":
                self.i = p.index(">", self.i) + 1
                self.scopes.append(self.scope)
                self.emit("(?:")
                return
            self.i = p.index(")", self.i) + 1
            self.refuse("a backreference (?P=...)", start)
            return
        if c == ":":
            self.i += 1
            self.scopes.append(self.scope)
            self.emit("(?:")
            return
        if c == "#":
            self.i = p.index(")", self.i) + 1
            return
        if c in "=!":
            self.refuse("a lookahead", start)
        elif c == "<" and self.peek(1) in "=!":
            self.refuse("a lookbehind", start)
        elif c == "(":
            self.refuse("a conditional group", start)
        elif c == ">":
            self.refuse("an atomic group", start)
        if c in "=!<(>":
            # refused; keep reading so that later groups still nest
            self.i += 1
            self.scopes.append(self.scope)
            self.emit("(?:")
            return
        on = off = 0
        minus = False
        while p[self.i] in _FLAG_LETTERS or p[self.i] == "-":
            if p[self.i] == "-":
                minus = True
            elif minus:
                off |= _FLAG_LETTERS[p[self.i]]
            else:
                on |= _FLAG_LETTERS[p[self.i]]
            self.i += 1
        end = p[self.i]
        self.i += 1
        if end == ")":
            return  # global flags: already in the compiled pattern's flags
        if end != ":":  # a group syntax of a later Python than this reader knows
            self.refuse("this group syntax", start, "this reader does not know it")
        self.scopes.append(self.scope.with_flags(on, off))
        self.emit("(?:")


def translate(pattern: str, flags: int = 0) -> Translation:
    """Write a valid Python pattern for RE2 (see the module docstring).

    Args:
        pattern: a pattern Python's ``re`` compiles.
        flags: its flags, inline global flags included (``re.compile(...).flags``).
    """
    return _Reader(pattern, flags).run()


# -- matching --------------------------------------------------------------------------------

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 64 << 20
_OPTIONS.never_capture = True


def _re2(text: str) -> re2._Regexp:
    return re2.compile(text, _OPTIONS)


class _Alarm(Exception):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    if _armed:
        raise _Alarm


_armed = False


def _run_bounded(run: Callable[[str], object], text: str, limit: float) -> bool:
    """``run(text) is not None``, stopped after ``limit`` seconds where a timer can be set.

    A timer someone else had set (``ITIMER_REAL``) is put back afterwards with the time it
    had left, and so is their ``SIGALRM`` handler; one due first is left to fire."""
    global _armed
    if (
        limit <= 0
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
    ):
        return run(text) is not None
    earlier, interval = signal.getitimer(signal.ITIMER_REAL)
    if earlier and earlier <= limit:
        return run(text) is not None  # another timer is due first: run as it is
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    began = time.monotonic()
    try:
        _armed = True
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return run(text) is not None
        finally:
            _armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Alarm:
        raise PatternTimeout(f"the match took longer than {limit:g} s") from None
    finally:
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if earlier:
            left = max(earlier - (time.monotonic() - began), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, interval)


class UserPattern:
    """A user's pattern, compiled for RE2 with Python's meaning.

    Args:
        pattern: Python ``re`` syntax.
        flags: ``re`` flags.
        allow_backtracking: run a pattern that needs what RE2 does not run (see the module
            docstring) on Python's ``re`` under the time bound; False: refuse it.

    Raises:
        PatternError: not valid Python syntax, or (``allow_backtracking=False``) it needs
            what RE2 does not run; ``position`` is the index in the pattern.
    """

    def __init__(self, pattern: str, flags: int = 0, *, allow_backtracking: bool = True) -> None:
        try:
            self.python = re.compile(pattern, flags)
        except re.error as exc:
            raise PatternError(exc.msg, pattern, exc.pos) from exc
        except (ValueError, OverflowError) as exc:
            raise PatternError(str(exc), pattern) from exc
        self.pattern = pattern
        self.flags = flags
        done = translate(pattern, self.python.flags)
        self.translation = done
        self.backtracking = done.refused
        """What RE2 cannot run in this pattern (None: nothing): then every match runs on
        Python's ``re`` under the time bound."""
        self.re2: re2._Regexp | None = None
        self.joined: re2._Regexp | None = None
        if done.refused is not None:
            if not allow_backtracking:
                raise PatternError(done.refused, pattern, done.refused_at, refused=True)
        else:
            try:
                self.re2 = _re2(done.pattern)
                self.joined = None if done.joined is None else _re2(done.joined)
            except re2.error as exc:
                if not allow_backtracking:
                    raise PatternError(
                        f"RE2 cannot run it: {_decode(exc)}", pattern, refused=True
                    ) from exc
                self.backtracking = f"RE2 cannot run it: {_decode(exc)}"
        self._ascii_only = done.boundary or done.casefold
        self._nonboundary = done.nonboundary
        self._never = done.casefold_wide or self.re2 is None
        self._dollar = done.dollar
        self._spent = 0.0
        self._runs = 0

    def exact(self, text: str) -> bool:
        """Whether RE2 answers for ``text`` exactly as Python's ``re`` does."""
        if self._never:
            return False
        if self._ascii_only and not text.isascii():
            return False
        if self._nonboundary and not text:
            return False
        return not (self._dollar and text[-1:] == "\n")

    def _python(self, run: Callable[[str], object], text: str) -> bool:
        self._runs += 1
        left = TIME_BUDGET + RUN_ALLOWANCE * self._runs - self._spent
        if left <= 0:
            raise PatternTimeout(f"its {TIME_BUDGET:g} s budget for slow matches is spent")
        began = time.perf_counter()
        try:
            return _run_bounded(run, text, min(TIME_LIMIT, left))
        finally:
            self._spent += time.perf_counter() - began

    def search(self, text: str) -> bool:
        """Whether the pattern is found in ``text`` (``re.search``).

        Raises:
            PatternTimeout: a match that Python's ``re`` runs took too long.
        """
        if self.exact(text):
            return self.re2.search(text) is not None  # type: ignore[union-attr]
        return self._python(self.python.search, text)

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches (``re.fullmatch``).

        Raises:
            PatternTimeout: as for :meth:`search`.
        """
        if self.exact(text):
            return self.re2.fullmatch(text) is not None  # type: ignore[union-attr]
        return self._python(self.python.fullmatch, text)

    def search_joined(self, texts: list[str]) -> bool | None:
        """False when the pattern is found in none of ``texts`` (one search of their
        newline-joined text); None when that cannot be told this way (test them one by one).
        True: maybe."""
        if self.joined is None or self._never:
            return None
        joined = "\n".join(texts)
        if self._ascii_only and not joined.isascii():
            return None
        return self.joined.search(joined) is not None


def _decode(exc: BaseException) -> str:
    msg = exc.args[0] if exc.args else exc
    if isinstance(msg, bytes):
        return msg.decode("utf-8", "replace")
    return str(msg)
