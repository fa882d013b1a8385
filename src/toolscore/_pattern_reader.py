"""Reading Python's regular expression syntax and writing the same pattern for RE2:
:func:`translate` and the :class:`Translation` it returns (see :mod:`toolscore.patterns`)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace

from ._pattern_sets import _char, _class_items, _complement, class_ranges

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
