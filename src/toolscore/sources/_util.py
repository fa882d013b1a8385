"""Small helpers the dialects share: JSON-string arguments, content text, input findings."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ..calls import Finding, Location, Severity
from ..errors import InputError
from ..limits import MAX_DEPTH
from ._depth import TooDeep, decode_checked

__all__ = [
    "content_text",
    "count_newlines",
    "error_finding",
    "input_finding",
    "loads_lenient",
    "located_finding",
    "parse_arguments",
]


def count_newlines(data: bytes, end: int | None = None) -> int:
    """The newlines in ``data``, or in ``data[:end]``: the length less the length without
    them (less those of the tail past ``end``, a short one where this is used).

    ``bytes.replace`` finds each newline with ``memchr``, where ``bytes.count`` of one byte
    compares every byte in a plain loop: on 256 KiB of a JSON array 10 us against 99 (a
    newline a call), 58 against 92 on indented JSON (a newline every 48 bytes). Every chunk
    of a JSON document is counted, for the line numbers of its errors."""
    total = len(data) - len(data.replace(b"\n", b""))
    return total if end is None else total - data.count(b"\n", end)


def loads_lenient(data: bytes | str) -> Any:
    """Decode JSON as :func:`json.loads` does, fast: msgspec, falling back to :mod:`json` for
    what msgspec rejects (``NaN``/``Infinity``, lone surrogate escapes, numbers out of range).

    msgspec rather than orjson: orjson reads an integer beyond 64 bits as a float
    (``10**20`` becomes ``1e+20``), where :mod:`json` and Toolscore keep the integer.

    Raises:
        ValueError: not JSON (:class:`json.JSONDecodeError`), not UTF-8
            (:class:`UnicodeDecodeError`), or nested deeper than
            :data:`~toolscore.limits.MAX_DEPTH`.
    """
    try:
        try:
            return decode_checked(_decode, data)
        except msgspec.DecodeError:
            return decode_checked(_json_loads, data, kind="json")
    except TooDeep:
        raise ValueError(f"nested deeper than {MAX_DEPTH:,} levels") from None


def _json_loads(data: bytes | str) -> Any:
    return json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)


_decode = msgspec.json.Decoder().decode


def parse_arguments(value: str) -> Any:
    """Tool-call arguments recorded as a JSON string: decoded, or ``{"raw": value}`` when the
    string is not JSON (Toolscore's OpenAI reader does the same)."""
    try:
        return loads_lenient(value)
    except ValueError:
        return {"raw": value}


def content_text(content: Any) -> Any:
    """A tool result's content: a string as is; a list of content blocks as the text of its
    ``text`` blocks joined with newlines; anything else as is."""
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type", "text") == "text"
            and isinstance(block.get("text"), str)
        ]
        return "\n".join(texts)
    return content


def input_finding(
    kind: str, message: str, location: Location | None, *, severity: Severity = "error"
) -> Finding:
    """A finding of the ``input`` check (a line or item that could not be read)."""
    return Finding(check="input", kind=kind, severity=severity, message=message, location=location)


_AT = "{location}: {detail}"


def located_finding(
    kind: str, problem: str, location: Location | None, *, severity: Severity = "error"
) -> Finding:
    """A finding of the ``input`` check about a place in the input: ``"{location}: problem"``
    (rendered from the location, so it moves with it), or ``problem`` where there is none."""
    if location is None:
        return input_finding(kind, problem, None, severity=severity)
    return Finding(
        "input", kind, severity, None, None, None, location, detail=problem, template=_AT
    )


def error_finding(kind: str, exc: InputError, location: Location | None) -> Finding:
    """A finding of the ``input`` check for an error raised at ``location``: its message,
    with the location as a field when the error names that place."""
    if (
        location is not None
        and exc.path == location.source
        and exc.line == location.line
        and exc.offset == location.offset
    ):
        return located_finding(kind, exc.problem, location)
    return input_finding(kind, str(exc), location)
