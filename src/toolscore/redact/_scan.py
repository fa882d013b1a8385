"""Finding credentials (and personal data) in one text: every pattern that may match is tried
in order, each accepted match claiming its span; a text with percent escapes is scanned
decoded and the spans mapped back onto it."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Collection, Iterator
from typing import Any

from ._patterns import _PREFILTER, _compiled, _has_literal, _Row, _table

# a percent escape of an ASCII character: decoded before a scan
_PERCENT = re.compile(r"%([0-7][0-9A-Fa-f])")

SecretMatch = tuple[int, int, str, str]
"""``(start, end, kind, matched text)`` of one accepted match."""


def _decode_percent(text: str) -> tuple[str, list[int]] | None:
    """``text`` with its ASCII percent escapes decoded, and where each decoded character sits
    in it; None when it has none."""
    first = _PERCENT.search(text)
    if first is None:
        return None
    parts: list[str] = []
    marks: list[int] = []
    pos = 0
    shift = 0
    for m in _PERCENT.finditer(text, first.start()):
        parts.append(text[pos : m.start()])
        marks.append(m.start() - shift)
        parts.append(chr(int(m.group(1), 16)))
        shift += 2
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts), marks


def _matches(pattern: Any, text: str, retry: bool) -> Iterator[Any]:
    """``pattern.finditer(text)``; with ``retry`` (the personal-data patterns, all of bounded
    length), a match its check rejects or that overlaps a claimed span is tried again one
    character on, so that a rejected candidate (``0958 4111 1111 1111``) does not hide the
    valid one inside it (``4111 1111 1111 1111``)."""
    if not retry:
        yield from pattern.finditer(text)
        return
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        yield m
        pos = m.start() + 1


# a lone surrogate (from a JSON "\\ud800"): RE2 reads UTF-8, which cannot hold one
_SURROGATE = re.compile("[\ud800-\udfff]")


def _scan(text: str, rows: tuple[_Row, ...], overlaps: bool = False) -> list[SecretMatch]:
    """The accepted matches in ``text``; with ``overlaps`` (redaction), also those that
    overlap a span claimed before them, so that a key inside another one's text (``sk-...``
    in a vault token's) is redacted with it, never left half shown."""
    found: list[SecretMatch] = []
    starts: list[int] = []  # claimed spans, sorted and disjoint
    ends: list[int] = []
    present = set(_PREFILTER.findall(text))
    if not text.isascii() and _SURROGATE.search(text) is not None:
        text = _SURROGATE.sub("\ufffd", text)  # one character for one: the spans stay
    for kind, pattern, check, group, gates in rows:
        if gates is not None and present.isdisjoint(gates):
            continue
        reach = -1  # with retry: the end of the last accepted match
        for m in _matches(pattern, text, gates is None):
            start, end = m.span(group)
            if start < reach:
                continue
            i = bisect_left(ends, start + 1)  # first claimed span ending after ``start``
            clash = i < len(starts) and starts[i] < end
            if clash and not overlaps:
                continue
            secret = text[start:end]
            if check is not None and not check(secret):
                continue
            if not clash:
                starts.insert(i, start)
                ends.insert(i, end)
            found.append((start, end, kind, secret))
            reach = end
    return found


def _scan_decoded(
    text: str, rows: tuple[_Row, ...], overlaps: bool = False
) -> tuple[list[SecretMatch], str, list[int] | None]:
    """The matches in ``text`` (percent escapes decoded), the text they index, and the
    decoded characters' places (None when nothing was decoded)."""
    decoded = _decode_percent(text) if "%" in text else None
    if decoded is None:
        return _scan(text, rows, overlaps), text, None
    plain, marks = decoded
    return _scan(plain, rows, overlaps), plain, marks


def _unmap(pos: int, marks: list[int]) -> int:
    """A position in a decoded text as a position in the text as written."""
    return pos + 2 * bisect_left(marks, pos)


def _wanted(text: str, pii: frozenset[str]) -> tuple[tuple[_Row, ...], bool]:
    """The rows to try on ``text``, and whether any pattern may match it at all."""
    if not pii:
        if not _has_literal(text):
            return (), False
        return _compiled().table, True
    rows, pii_filter = _table(pii)
    if _has_literal(text):
        return rows, True
    return rows, pii_filter is not None and pii_filter.search(text) is not None


def scan_text(text: str, pii: Collection[str] = ()) -> list[SecretMatch]:
    """Every accepted match in ``text``, in pattern order, then position (Toolscore's order).

    Args:
        text: one string.
        pii: the personal-data kinds to look for too (see :func:`pii_kinds`).

    Returns:
        ``(start, end, kind, matched)`` tuples; empty when the prefilter rules the text out.
        A text with percent escapes is scanned decoded: the spans are then those of the text
        as written, ``matched`` the decoded credential.
    """
    rows, maybe = _wanted(text, frozenset(pii))
    if not maybe:
        return []
    found, _, marks = _scan_decoded(text, rows)
    if marks is None or not found:
        return found
    return [(_unmap(s, marks), _unmap(e, marks), kind, secret) for s, e, kind, secret in found]
