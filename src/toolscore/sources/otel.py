"""OpenTelemetry traces exported as OTLP JSON: one tool call per tool span.

A *tool span* is either a GenAI semantic-conventions span (a truthy ``gen_ai.tool.name`` with
``gen_ai.operation.name == "execute_tool"`` or ``mcp.method.name == "tools/call"``; the OpenAI
Agents SDK's function spans are such spans in both its OpenTelemetry instrumentations) or an
OpenInference span (``openinference.span.kind == "TOOL"``, named by ``tool.name``).

A *chat span* carries the model's messages (``gen_ai.output.messages``,
``gen_ai.input.messages``: JSON lists of ``{"role", "parts": [...]}``). Each ``tool_call`` part
of its output is a call, pending until a ``tool_call_response`` part with the same id comes in
a later chat span's input (its result) or a tool span with the same ``gen_ai.tool.call.id``
(its result, error and timing: the call is then counted once; a tool span without an id is
the execution of the oldest such call to its tool). Other spans are skipped.

Input is an OTLP export ``{"resourceSpans": [...]}`` (``scopeSpans`` or the older
``instrumentationLibrarySpans``), read span by span, or OTLP JSON Lines with one export per
line; attributes may be the OTLP ``[{key, value: AnyValue}]`` list or a plain mapping.

Order: Toolscore 1.10 sorts all tool spans by start time, which needs the whole trace. In a
stream, calls come out in read order; within one item the decoder hands over (one export of a
JSON Lines file, or an in-memory export) the tool spans are sorted by start time, ties and
spans without a start keeping their order. For one streamed OTLP document the item is a span,
so its calls keep document order.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..calls import Batch, Location, ToolCall
from ._base import Dialect
from .detect import Shape

__all__ = [
    "DIALECT",
    "OTelDialect",
    "any_value",
    "attributes",
    "is_tool_span",
    "nanos",
    "sniff",
]

_ERROR_CODES = frozenset({2, "2", "STATUS_CODE_ERROR", "ERROR"})
_SCOPE_KEYS = ("scopeSpans", "instrumentationLibrarySpans", "scope_spans")


def any_value(value: Any) -> Any:
    """Decode an OTLP JSON ``AnyValue`` (camelCase or proto field names) to a Python value."""
    if not isinstance(value, dict):
        return value
    if not value:
        return None
    if len(value) != 1:
        return value
    ((key, inner),) = value.items()
    if key in ("stringValue", "string_value", "boolValue", "bool_value"):
        return inner
    if key in ("intValue", "int_value"):
        try:
            return int(inner)
        except (TypeError, ValueError):
            return inner
    if key in ("doubleValue", "double_value"):
        try:
            return float(inner)
        except (TypeError, ValueError):
            return inner
    if key in ("bytesValue", "bytes_value"):
        return inner
    if key in ("arrayValue", "array_value"):
        values = inner.get("values", []) if isinstance(inner, dict) else []
        return [any_value(v) for v in values]
    if key in ("kvlistValue", "kvlist_value"):
        values = inner.get("values", []) if isinstance(inner, dict) else []
        return attributes(values)
    return value


def attributes(raw: Any) -> dict[str, Any]:
    """A span's attributes as a dict: an OTLP ``[{key, value}]`` list decoded, a mapping as is."""
    if isinstance(raw, dict):
        return raw
    result: dict[str, Any] = {}
    if isinstance(raw, list):
        for entry in raw:
            if not isinstance(entry, dict):
                continue
            key = entry.get("key")
            if not isinstance(key, str):
                continue
            value = entry.get("value")
            if type(value) is dict and len(value) == 1:
                text = value.get("stringValue")
                if text is not None:  # the common case, without a call
                    result[key] = text
                    continue
            result[key] = any_value(value)
    return result


def is_tool_span(span: Any) -> bool:
    """True when ``span`` (an OTLP JSON span dict) is a tool span, as defined above."""
    return isinstance(span, dict) and _tool_name(attributes(span.get("attributes"))) is not None


def _tool_name(attrs: dict[str, Any]) -> str | None:
    name = attrs.get("gen_ai.tool.name")
    if name and (
        attrs.get("gen_ai.operation.name") == "execute_tool"
        or attrs.get("mcp.method.name") == "tools/call"
    ):
        return str(name)
    if attrs.get("openinference.span.kind") == "TOOL":
        name = attrs.get("tool.name") or attrs.get("tool_call.function.name")
        if name:
            return str(name)
    return None


_JSON_STARTS = frozenset('{["-0123456789tfn \t\r\n')


def _decoded(value: Any) -> Any:
    """A JSON-encoded attribute decoded; a plain string (or anything else) as it is."""
    if isinstance(value, str) and value[:1] in _JSON_STARTS:
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _as_args(value: Any) -> Any:
    if value is None:
        return {}
    return value if isinstance(value, dict) else {"value": value}


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict) and "properties" in value and "type" in value


def nanos(value: Any) -> int | None:
    """An OTLP time (an int, or a string of one, in JSON) in nanoseconds; None if not one."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _has_messages(attrs: dict[str, Any]) -> bool:
    return "gen_ai.output.messages" in attrs or "gen_ai.input.messages" in attrs


def _parts(messages: Any, kind: str) -> list[dict[str, Any]]:
    """The parts of type ``kind`` in a chat span's messages (a JSON string or a list)."""
    found: list[dict[str, Any]] = []
    messages = _decoded(messages)
    if isinstance(messages, list):
        for message in messages:
            parts = message.get("parts") if isinstance(message, dict) else None
            if isinstance(parts, list):
                found.extend(p for p in parts if isinstance(p, dict) and p.get("type") == kind)
    return found


def _id(part: dict[str, Any]) -> str | None:
    key = part.get("id")
    return None if key is None or isinstance(key, (dict, list)) else str(key)


class OTelDialect(Dialect):
    """Reads OTLP JSON spans (or whole exports) into calls; spans without calls are skipped."""

    name = "otel"

    def __init__(self, source: str = "<memory>") -> None:
        super().__init__(source)
        self._counted: dict[str, bool] = {}
        """Ids of calls already counted (True: from a tool span; False: a chat span's call
        whose result came), so that a later span with the same id is not counted again;
        the last :attr:`max_pending` kept."""

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        """Decode one span, scope, resource, export, or a list of them."""
        if type(obj) is dict and "attributes" in obj:  # one span: the streamed case
            self.span(obj, attributes(obj["attributes"]), location, out)
            return
        found: list[tuple[int, int, dict[str, Any], dict[str, Any]]] = []
        self._collect(obj, location, found)
        if len(found) > 1:
            found.sort(key=lambda entry: (entry[0], entry[1]))
        for _start, _pos, span, attrs in found:
            self.span(span, attrs, location, out)

    def _collect(
        self,
        obj: Any,
        location: Location | None,
        found: list[tuple[int, int, dict[str, Any], dict[str, Any]]],
    ) -> None:
        if isinstance(obj, list):
            for element in obj:
                self._collect(element, location, found)
            return
        if not isinstance(obj, dict):
            return
        for key in ("resourceSpans", "resource_spans"):
            if key in obj:
                self._collect(obj[key], location, found)
                return
        for key in _SCOPE_KEYS:
            if key in obj:
                self._collect(obj[key], location, found)
                return
        spans = obj.get("spans")
        if isinstance(spans, list) and "attributes" not in obj:
            self._collect(spans, location, found)
            return
        attrs = attributes(obj.get("attributes"))
        if _tool_name(attrs) is not None or _has_messages(attrs):
            start = nanos(obj.get("startTimeUnixNano", obj.get("start_time_unix_nano")))
            found.append((start or 0, len(found), obj, attrs))

    def span(
        self, span: dict[str, Any], attrs: dict[str, Any], location: Location | None, out: Batch
    ) -> None:
        """Decode one span whose attributes are ``attrs`` (as :func:`attributes` gives them):
        a tool span's call (or the result of a chat span's call with its id), a chat span's
        results and calls; nothing for another span."""
        name = _tool_name(attrs)
        if name is not None:
            call = self._tool_call(span, attrs, name, location)
            key = call.metadata.get("id")
            if key is None and self.pending:
                # no id: the execution of the oldest chat span's call to this tool, if any
                key = next((k for k, c in self.pending.items() if c.tool == name), None)
            if key is not None:
                waiting = self.pending.pop(key, None)
                if waiting is not None:  # a chat span's call: this span is its execution
                    waiting.result = call.result
                    waiting.duration = call.duration
                    waiting.metadata.update(call.metadata)
                    self._count(key, True)
                    self.complete(waiting, out)
                    return
                if self._counted.get(key) is False:
                    return
                self._count(key, True)
            self.new_call(call, out)
            return
        inputs = attrs.get("gen_ai.input.messages")
        if inputs is not None and self.pending:
            for part in _parts(inputs, "tool_call_response"):
                key = _id(part)
                waiting = self.pending.pop(key, None) if key is not None else None
                if waiting is not None and key is not None:
                    waiting.result = _decoded(part.get("response", part.get("result")))
                    self._count(key, False)
                    self.complete(waiting, out)
        outputs = attrs.get("gen_ai.output.messages")
        if outputs is not None:
            for part in _parts(outputs, "tool_call"):
                self._chat_call(part, span, location, out)

    def _count(self, key: str, from_tool_span: bool) -> None:
        counted = self._counted
        counted[key] = from_tool_span
        if len(counted) > self.max_pending:
            del counted[next(iter(counted))]

    def _chat_call(
        self, part: dict[str, Any], span: dict[str, Any], location: Location | None, out: Batch
    ) -> None:
        name = part.get("name")
        if not isinstance(name, str) or not name:
            return
        key = _id(part)
        if key is not None and (key in self.pending or key in self._counted):
            return
        end = nanos(span.get("endTimeUnixNano", span.get("end_time_unix_nano")))
        metadata: dict[str, Any] = {"format": "otel", "is_error": False}
        if key is not None:
            metadata["id"] = key
        call = ToolCall(
            tool=name,
            args=_as_args(_decoded(part.get("arguments"))),
            timestamp=None if end is None else end / 1e9,
            metadata=metadata,
            location=location,
        )
        if key is None:
            self.new_call(call, out)
            return
        self.new_call(call, out, complete=False)
        self.pending[key] = call

    def _tool_call(
        self, span: dict[str, Any], attrs: dict[str, Any], name: str, location: Location | None
    ) -> ToolCall:
        if "gen_ai.tool.name" in attrs and attrs.get("openinference.span.kind") != "TOOL":
            args = _decoded(attrs.get("gen_ai.tool.call.arguments"))
            result = _decoded(attrs.get("gen_ai.tool.call.result"))
            call_id = attrs.get("gen_ai.tool.call.id", attrs.get("jsonrpc.request.id"))
            fmt = "otel"
        else:
            args = _decoded(attrs.get("input.value"))
            if args is None:
                args = _decoded(attrs.get("tool_call.function.arguments"))
            if args is None:
                params = _decoded(attrs.get("tool.parameters"))
                args = None if _is_schema(params) else params
            result = _decoded(attrs.get("output.value"))
            call_id = attrs.get("tool_call.id", attrs.get("tool.id"))
            fmt = "openinference"
        status = span.get("status")
        code = message = None
        if isinstance(status, dict):
            code = status.get("code")
            message = status.get("message")
        error_type = attrs.get("error.type")
        failed = (isinstance(code, (int, str)) and code in _ERROR_CODES) or bool(error_type)
        metadata: dict[str, Any] = {"format": fmt, "is_error": failed}
        if failed and (message or error_type):
            metadata["error"] = message if message else str(error_type)
        if call_id is not None:
            metadata["id"] = str(call_id)
        start = nanos(span.get("startTimeUnixNano", span.get("start_time_unix_nano")))
        end = nanos(span.get("endTimeUnixNano", span.get("end_time_unix_nano")))
        return ToolCall(
            tool=name,
            args=_as_args(args),
            result=result,
            timestamp=None if start is None else start / 1e9,
            duration=None if start is None or end is None else (end - start) / 1e9,
            metadata=metadata,
            location=location,
        )


DIALECT = OTelDialect


def _has_calls(span: Any) -> bool:
    """A tool span, or a chat span with messages."""
    if not isinstance(span, dict):
        return False
    attrs = attributes(span.get("attributes"))
    return _tool_name(attrs) is not None or _has_messages(attrs)


def _is_export(value: Any) -> bool:
    return isinstance(value, dict) and ("resourceSpans" in value or "resource_spans" in value)


def sniff(shape: Shape) -> str | None:
    """The prefix of the spans in an OTLP export (span by span), ``item`` for an array of
    spans or exports, ``""`` for OTLP JSON Lines (one export, or one span, per line)."""
    if shape.layout == "jsonl":
        lines = shape.lines[:50]
        if any(_is_export(v) or _has_calls(v) for v in lines):
            return ""
        return None
    sample = shape.sample
    if isinstance(sample, dict):
        for top, scopes in (
            ("resourceSpans", ("scopeSpans", "instrumentationLibrarySpans")),
            ("resource_spans", ("scope_spans", "instrumentation_library_spans")),
        ):
            if top in sample:
                keys = shape.paths.get(f"{top}.item", ())
                scope = scopes[1] if scopes[1] in keys and scopes[0] not in keys else scopes[0]
                return f"{top}.item.{scope}.item.spans.item"
        return None
    if isinstance(sample, list):
        head = sample[:50]
        if any(_is_export(v) or _has_calls(v) for v in head):
            return "item"
    return None
