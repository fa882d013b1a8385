"""Small helpers the dialects share: JSON-string arguments, content text, input findings."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ..calls import Finding, Location, Severity

__all__ = ["content_text", "input_finding", "loads_lenient", "parse_arguments"]


def loads_lenient(data: bytes | str) -> Any:
    """Decode JSON as :func:`json.loads` does, fast: msgspec, falling back to :mod:`json` for
    what msgspec rejects (``NaN``/``Infinity``, lone surrogate escapes, numbers out of range).

    msgspec rather than orjson: orjson reads an integer beyond 64 bits as a float
    (``10**20`` becomes ``1e+20``), where :mod:`json` and Toolscore keep the integer.

    Raises:
        ValueError: not JSON (:class:`json.JSONDecodeError`) or not UTF-8
            (:class:`UnicodeDecodeError`).
    """
    try:
        return _decode(data)
    except msgspec.DecodeError:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text)


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
