"""Small JSON files read whole (gold and rule files): a nesting limit checked before parsing,
and the place of a value named by its JSON path, for error messages.

:func:`check_depth` scans the text once (strings skipped, brackets counted) before
``json.loads`` builds anything, so a file nested 100,000 deep is an input error with its
line and byte offset instead of a ``RecursionError``. :func:`locate` finds where the value at
a JSON path (``("calls", 3, "args")``) starts, so a validation error can name its line: it
runs only when there is an error to report.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from .errors import InputError
from .limits import MAX_DEPTH, ensure_recursion_limit

__all__ = [
    "MAX_DEPTH",
    "check_depth",
    "json_path",
    "loads",
    "locate",
    "read_json",
    "with_position",
]

_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+', re.DOTALL)

JsonPath = Sequence[str | int]


def _line_and_offset(text: str, index: int) -> tuple[int, int]:
    """1-based line and 0-based UTF-8 byte offset of the character at ``index``."""
    return text.count("\n", 0, index) + 1, len(text[:index].encode("utf-8", "surrogatepass"))


def check_depth(text: str, path: str, error: type[InputError]) -> None:
    """Raise ``error`` naming the line and byte offset where ``text`` (JSON) nests arrays and
    objects deeper than :data:`MAX_DEPTH`; a text with fewer brackets in all costs two
    counts."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    for m in _BRACKETS.finditer(text):
        c = m.group()
        if c == "[" or c == "{":
            depth += 1
            if depth > MAX_DEPTH:
                offset = _line_and_offset(text, m.start())[1]
                problem = f"arrays and objects nested deeper than {MAX_DEPTH:,} levels"
                raise _error_at(error, path, text, m.start(), f"{problem} (byte {offset})")
        elif c == "]" or c == "}":
            depth -= 1


def loads(text: str) -> Any:
    """``json.loads(text)`` for a text :func:`check_depth` let through: Python's recursion
    limit is first raised (never lowered) to leave room for :data:`MAX_DEPTH` levels, which
    ``json``'s C scanner counts against it, and for the recursive walks of such values
    afterwards (the limit trace readers use, :func:`~toolscore.limits.ensure_recursion_limit`).
    """
    ensure_recursion_limit()
    return json.loads(text)


def json_path(path: JsonPath) -> str:
    """``("calls", 3, "args")`` as ``$.calls[3].args``."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def locate(text: str, path: JsonPath) -> int | None:
    """The index in ``text`` (valid JSON) where the value at ``path`` starts, or None when
    the path is not there."""
    tokens = _TOKENS.finditer(text)

    def skip(first: str) -> None:
        if first not in "[{":
            return
        depth = 1
        for m in tokens:
            c = m.group()
            if c == "[" or c == "{":
                depth += 1
            elif c == "]" or c == "}":
                depth -= 1
                if depth == 0:
                    return

    current = next(tokens, None)
    for part in path:
        if current is None:
            return None
        opener = current.group()
        if isinstance(part, int):
            if opener != "[":
                return None
            item = next(tokens, None)
            for _ in range(part):
                if item is None or item.group() == "]":
                    return None
                skip(item.group())
                comma = next(tokens, None)
                if comma is None or comma.group() != ",":
                    return None
                item = next(tokens, None)
            if item is None or item.group() == "]":
                return None
            current = item
        else:
            if opener != "{":
                return None
            found = None
            for m in tokens:
                key = m.group()
                if key == "}":
                    break
                if key == ",":
                    continue
                next(tokens, None)  # the colon
                value = next(tokens, None)
                if value is None:
                    break
                if key[:1] == '"' and _key(key) == part:
                    found = value
                    break
                skip(value.group())
            if found is None:
                return None
            current = found
    return None if current is None else current.start()


def _key(token: str) -> str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def with_position(exc: InputError, text: str, path: JsonPath | None) -> InputError:
    """``exc`` again, naming the JSON path and the line and byte offset of the value it is
    about (as found by :func:`locate`); ``exc`` itself when the path is unknown."""
    if path is None:
        return exc
    index = locate(text, path)
    problem = f"{exc.problem} (at {json_path(path)})"
    if index is None:
        located = type(exc)(exc.path, problem, line=exc.line, offset=exc.offset)
    else:
        line, offset = _line_and_offset(text, index)
        located = type(exc)(exc.path, problem, line=line, offset=offset)
    located.json_path = tuple(path)
    return located


def read_json(name: str, what: str, error: type[InputError]) -> tuple[Any, str]:
    """Read a small JSON file whole (a gold or rule file, never a trace): its value and text.

    Raises:
        error: the file cannot be read, is not UTF-8, nests deeper than :data:`MAX_DEPTH`,
            or is not JSON; the message says which ``what`` and where (line or byte).
    """
    try:
        with open(name, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise error(name, f"cannot read the {what}: file not found") from None
    except OSError as exc:
        raise error(name, f"cannot read the {what}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(name, f"not UTF-8 text ({exc.reason})", offset=exc.start) from None
    check_depth(text, name, error)
    try:
        return loads(text), text
    except json.JSONDecodeError as exc:
        raise error(
            name,
            f"not valid JSON: {exc.msg} (column {exc.colno})",
            line=exc.lineno,
            offset=exc.pos,
        ) from None
    except ValueError:  # an integer over Python's int-string limit: json does not say where
        raise _long_number(text, name, error) from None


def _long_number(text: str, name: str, error: type[InputError]) -> InputError:
    """The error for the first number of ``text`` longer than Python converts
    (:func:`sys.get_int_max_str_digits`), naming its line and byte offset."""
    limit = sys.get_int_max_str_digits()
    for m in _TOKENS.finditer(text):
        token = m.group()
        digits = len(token.lstrip("-"))
        if token[:1] != '"' and limit and digits > limit:
            problem = f"a number of {digits:,} digits (at most {limit:,} are read)"
            return _error_at(error, name, text, m.start(), problem)
    return error(name, "a number too long to read")


def _error_at(
    error: type[InputError], path: str, text: str, index: int, problem: str
) -> InputError:
    """``error`` about ``path``, naming the line and byte offset of ``text[index]``."""
    line, offset = _line_and_offset(text, index)
    return error(path, problem, line=line, offset=offset)
