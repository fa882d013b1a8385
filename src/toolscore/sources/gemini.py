"""Google Gemini traces: ``functionCall`` and ``functionResponse`` parts (camelCase or snake_case).

Gemini records a call as a part of a model turn and its result as a part of the next user
turn, so a call is emitted as soon as its ``functionCall`` part is read and completed when the
matching ``functionResponse`` arrives: by ``id`` when both carry one, otherwise by name, oldest
waiting call of that name first. Calls whose response never comes are complete at the end.

Shapes read, at any nesting the decoder hands over: a ``GenerateContentResponse``
(``candidates[*].content`` and, from the SDK's automatic function calling,
``automaticFunctionCallingHistory``), a request (``contents``), a ``Content`` (``parts``), a
candidate or wrapper (``content``), a bare part, and lists of any of these. Unlike Toolscore
1.10, a bare ``{"functionCall": ...}`` item works and ``functionResponse`` parts give results.

A ``functionResponse.response`` is read the way the Gemini API documents it: ``output`` is the
result and ``error`` marks a failure; a response with neither is the result as a whole.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..calls import Batch, Location, ToolCall
from ._base import Dialect
from ._util import parse_arguments
from .detect import Shape

__all__ = ["DIALECT", "GeminiDialect", "looks_like_gemini", "parse_args", "sniff"]

_CALL_KEYS = ("functionCall", "function_call")
_RESPONSE_KEYS = ("functionResponse", "function_response")
_CONTAINER_KEYS = (
    "automaticFunctionCallingHistory",
    "automatic_function_calling_history",
    "candidates",
    "contents",
    "content",
    "parts",
)


def parse_args(value: Any) -> Any:
    """Gemini arguments: a dict as is, a JSON string decoded (invalid: ``{"raw": s}``),
    ``None`` as ``{}``."""
    if value is None:
        return {}
    if isinstance(value, str):
        return parse_arguments(value)
    return value


def _error_text(err: Any) -> str:
    if isinstance(err, str):
        return err
    if isinstance(err, dict):
        msg = err.get("message")
        if isinstance(msg, str) and msg:
            return msg
    try:
        return orjson.dumps(err, default=str).decode()
    except TypeError:
        return str(err)


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


class GeminiDialect(Dialect):
    """Reads Gemini ``Content`` parts into calls, pairing ``functionResponse`` parts."""

    name = "gemini"

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        """Decode one response, content, part, or a list of them."""
        if isinstance(obj, list):
            for element in obj:
                self.item(element, location, out)
            return
        if not isinstance(obj, dict):
            return
        call = _first(obj, _CALL_KEYS)
        if isinstance(call, dict):
            self._call(call, location, out)
            return
        response = _first(obj, _RESPONSE_KEYS)
        if isinstance(response, dict):
            self._response(response, out)
            return
        for key in _CONTAINER_KEYS:
            inner = obj.get(key)
            if isinstance(inner, (dict, list)):
                self.item(inner, location, out)

    def _call(self, fc: dict[str, Any], location: Location | None, out: Batch) -> None:
        name = fc.get("name")
        if not name or not isinstance(name, str):
            return
        args = fc.get("args")
        if args is None:
            args = fc.get("arguments")
        metadata: dict[str, Any] = {"format": "gemini"}
        call_id = fc.get("id")
        if call_id is not None:
            metadata["id"] = call_id
        call = ToolCall(tool=name, args=parse_args(args), metadata=metadata, location=location)
        self.new_call(call, out, complete=False)
        key: Any = call_id
        if not isinstance(key, (str, int, float)) or key in self.pending:
            key = ("#", call.index)
        self.pending[key] = call

    def _response(self, fr: dict[str, Any], out: Batch) -> None:
        call: ToolCall | None = None
        rid = fr.get("id")
        if isinstance(rid, (str, int, float)):
            call = self.pending.pop(rid, None)
        if call is None:
            name = fr.get("name")
            for key, waiting in self.pending.items():
                if waiting.tool == name:
                    call = self.pending.pop(key)
                    break
        if call is None:
            return
        response = fr.get("response")
        is_error = False
        if isinstance(response, dict):
            err = response.get("error")
            if err not in (None, "", {}, [], False):
                is_error = True
                call.metadata["error"] = _error_text(err)
            if "output" in response:
                call.result = response["output"]
            elif not is_error:
                call.result = response
        else:
            call.result = response
        call.metadata["is_error"] = is_error
        self.complete(call, out)


DIALECT = GeminiDialect


_ROLES = ("user", "model", "function", "tool")


def _is_part(value: Any) -> bool:
    """A Gemini function part. An OpenAI legacy message also has a ``function_call`` object,
    but with a ``role`` and JSON-string ``arguments`` (Gemini's snake_case dumps have ``args``)."""
    if not isinstance(value, dict) or "role" in value:
        return False
    if any(isinstance(value.get(key), dict) for key in ("functionCall", *_RESPONSE_KEYS)):
        return True
    call = value.get("function_call")
    return isinstance(call, dict) and "arguments" not in call


def _is_content(value: Any) -> bool:
    """A Gemini ``Content``: ``parts`` with a function part, or a role Gemini uses."""
    if not isinstance(value, dict):
        return False
    parts = value.get("parts")
    if not isinstance(parts, list):
        return False
    role = value.get("role")
    return (isinstance(role, str) and role in _ROLES) or any(_is_part(p) for p in parts[:50])


def looks_like_gemini(value: Any) -> bool:
    """True when ``value`` is clearly Gemini: a function part, a ``Content``, a response
    (``candidates``) or a request (``contents``); what detection claims."""
    if not isinstance(value, dict):
        return False
    if _is_part(value) or _is_content(value):
        return True
    if isinstance(value.get("candidates"), list):
        return True
    content = value.get("content")
    if _is_content(content) or (
        isinstance(content, list) and any(_is_part(p) for p in content[:50])
    ):
        return True
    contents = value.get("contents")
    return isinstance(contents, list) and any(_is_content(c) for c in contents[:50])


def sniff(shape: Shape) -> str | None:
    """``contents.item`` for a request or conversation dict, ``item`` for an array of contents,
    parts or responses, ``""`` for one response or content (or one per line)."""
    if shape.layout == "jsonl":
        return "" if any(looks_like_gemini(v) for v in shape.lines[:50]) else None
    sample = shape.sample
    if isinstance(sample, dict):
        if not looks_like_gemini(sample):
            return None
        if isinstance(sample.get("contents"), list) and "candidates" not in sample:
            return "contents.item"
        return ""
    if isinstance(sample, list) and any(looks_like_gemini(v) for v in sample[:50]):
        return "item"
    return None
