"""An exact, streaming check of a JSON byte stream's nesting depth and string lengths.

ijson's yajl parser has no depth limit and keeps one prefix string per open level (100,000
levels of ``[`` cost gigabytes), and it buffers a string token whole. :class:`DepthGuard` is
fed the same bytes first and says where the input first goes deeper than
:data:`~toolscore.limits.MAX_DEPTH` or opens a string longer than the value limit, so the
parser is only ever given the bytes before that point.

It reads a chunk with a few passes in C instead of byte by byte: escaped backslashes and
quotes are dropped (``\\\\`` and ``\\"``; no other escape can hide a quote), every byte but
``"[]{}`` is deleted, and of what is left the parts between quotes (strings) are dropped; the
brackets that remain are outside strings, and their running sum is the depth. Only a chunk
that goes too deep is walked byte by byte, to find the exact offset. Bytes that are not valid
JSON may be misread after their position, but the parser stops there anyway.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import accumulate
from typing import TypeVar

from ..limits import MARGIN, MAX_DEPTH, bounded_depth, decode_limit_exact

__all__ = ["DepthGuard", "TooDeep", "decode_checked"]

T = TypeVar("T")
D = TypeVar("D", bound="bytes | str")

_DELETE = bytes(range(256)).translate(None, b'"[]{}')
_DELTA = [0] * 256
for _c in b"[{":
    _DELTA[_c] = 1
for _c in b"]}":
    _DELTA[_c] = -1
_DQ = ord('"')
_STRING_STOP = re.compile(rb'["\\]')
_TOKEN = re.compile(rb'["\[\]{}]')
_BS = ord("\\")


class DepthGuard:
    """Feed it the bytes of one JSON text, in order; it tells where a limit is passed.

    Args:
        max_depth: the deepest nesting allowed.
        max_string: the longest string allowed, in bytes (approximate to a chunk's length
            for a string that spans chunks: the count starts at the chunk where it opens).
    """

    __slots__ = ("_depth", "_escape", "_in_string", "_string_bytes", "max_depth", "max_string")

    def __init__(self, max_depth: int = MAX_DEPTH, max_string: int | None = None) -> None:
        self.max_depth = max_depth
        self.max_string = max_string
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._string_bytes = 0

    @property
    def string_run(self) -> int:
        """Bytes of the string still open at the end of what was fed (0 outside strings):
        yajl re-reads a token that spans the chunks it is given from its start, so a reader
        gives it bigger chunks while a long string is open (:func:`coalesce_size`)."""
        return self._string_bytes if self._in_string else 0

    @property
    def depth(self) -> int:
        """The nesting depth after the bytes fed so far."""
        return self._depth

    def feed(self, chunk: bytes) -> tuple[int, str] | None:
        """Check ``chunk``; None when it is within the limits, else ``(index, problem)``: the
        index in ``chunk`` of the first byte past a limit and what the limit is."""
        if not chunk:
            return None
        start_in_string = self._in_string
        data = chunk
        if self._escape:  # the chunk's first byte is escaped
            data = data[1:]
        tail = len(data) - len(data.rstrip(b"\\"))
        if b"\\" in data:
            if b"\\\\" in data:
                data = data.replace(b"\\\\", b"")
            if b'\\"' in data:
                data = data.replace(b'\\"', b"")
        brackets = data.translate(None, _DELETE)
        if start_in_string:
            brackets = b'"' + brackets
        brackets = brackets.replace(b'""', b"")
        in_string = False
        if b'"' in brackets:
            parts = brackets.split(b'"')
            in_string = len(parts) % 2 == 0
            brackets = b"".join(parts[0::2])
        opens = brackets.count(b"[") + brackets.count(b"{")
        depth = self._depth
        if depth + opens > self.max_depth and brackets:
            deepest = max(accumulate(map(_DELTA.__getitem__, brackets), initial=depth))
            if deepest > self.max_depth:
                return self._locate(chunk)
        if self.max_string is not None and in_string:
            if start_in_string and b'"' not in chunk:
                run = self._string_bytes + len(chunk)
            else:  # opened in this chunk, at or before its last quote
                run = len(chunk) - chunk.rfind(b'"')
            if run > self.max_string:
                return self._locate(chunk)
            self._string_bytes = run
        elif in_string:
            self._string_bytes = (
                self._string_bytes + len(chunk)
                if start_in_string and b'"' not in chunk
                else len(chunk) - chunk.rfind(b'"')
            )
        self._depth = depth + 2 * opens - len(brackets)
        self._in_string = in_string
        self._escape = in_string and tail % 2 == 1
        return None

    def _locate(self, chunk: bytes) -> tuple[int, str] | None:
        """Walk ``chunk`` from the state before it, a token at a time (a string in one
        search): where a limit is passed (None when the fast pass's string count was an
        over-estimate)."""
        depth = self._depth
        in_string = self._in_string
        escape = self._escape
        run = self._string_bytes if in_string else 0
        limit = self.max_string
        i = 0
        n = len(chunk)
        while i < n:
            if in_string:
                if escape:
                    escape = False
                    i += 1
                    run += 1
                    continue
                m = _STRING_STOP.search(chunk, i)
                end = m.start() if m else n
                run += end - i
                if limit is not None and run > limit:
                    return end - (run - limit), (
                        f"a string longer than the limit of {limit:,} bytes"
                    )
                if m is None:
                    i = n
                    break
                i = end + 1
                run += 1
                if chunk[end] == _BS:
                    escape = True
                else:
                    in_string = False
                continue
            m = _TOKEN.search(chunk, i)
            if m is None:
                break
            i = m.start()
            c = chunk[i]
            i += 1
            if c == _DQ:
                in_string = True
                run = 0
                continue
            depth += _DELTA[c]
            if depth > self.max_depth:
                return i - 1, f"nested deeper than {self.max_depth:,} levels"
        self._depth = depth
        self._in_string = in_string
        self._escape = escape
        self._string_bytes = run
        return None


class TooDeep(Exception):
    """Raised by :func:`decode_checked`: the text nests deeper than allowed at ``index``."""

    def __init__(self, index: int, problem: str) -> None:
        super().__init__(problem)
        self.index = index
        self.problem = problem


def decode_checked(
    decode: Callable[[D], T], data: D, levels: int = MAX_DEPTH, kind: str = "msgspec"
) -> T:
    """``decode(data)`` for a whole JSON text ``data``, refusing nesting deeper than
    ``levels`` exactly.

    The decode runs under :class:`~toolscore.limits.bounded_depth` with a margin below
    ``levels`` (msgspec's count of its nesting against the recursion limit can be off by a
    few levels); only when that refuses is the text walked by :class:`DepthGuard`, and
    decoded again with room to spare when it is in fact within ``levels``.

    Raises:
        TooDeep: the text nests deeper than ``levels`` (with the index where it does).
    """
    if decode_limit_exact():
        try:
            with bounded_depth(levels - MARGIN, kind):
                return decode(data)
        except RecursionError:
            pass
    text = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    passed = DepthGuard(levels).feed(text)
    if passed is not None:
        raise TooDeep(*passed)
    with bounded_depth(levels + MARGIN, kind):
        return decode(data)
