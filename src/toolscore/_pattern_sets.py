"""The character sets of Python's ``re`` (``\\d``, ``\\w``, ``\\s``) as code point ranges, read
from ``re`` itself (or :mod:`toolscore._classes`' table), and written as RE2 class items (see
:mod:`toolscore.patterns`)."""

from __future__ import annotations

import array
import functools
import re

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
        # a 500-line table (~1 ms to load), read only by a pattern using \d, \w or \s
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
