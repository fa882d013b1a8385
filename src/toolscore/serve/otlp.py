"""OTLP/HTTP request bodies in, spans out; and the protocol's responses. No I/O here.

A body is gunzipped within a size limit (:class:`TooLarge` past it), then decoded as an
``ExportTraceServiceRequest`` (protobuf, through ``opentelemetry-proto``) or its JSON mapping.
Each span becomes a :class:`SpanIn`: its attributes as a plain dict (what
:func:`toolscore.sources.otel.attributes` gives for OTLP JSON) and the OTLP JSON fields the
OTel reader reads (times and status), so :meth:`~toolscore.sources.otel.OTelDialect.span`
turns it into calls as it does a span read from a file.

Logs (``/v1/logs``) carry GenAI events with the messages a chat span would carry: an
``gen_ai.client.inference.operation.details`` event's ``gen_ai.input.messages`` and
``gen_ai.output.messages`` attributes are read as they are; the older ``gen_ai.choice`` (the
model's tool calls) and ``gen_ai.tool.message`` (a tool's result) events are rewritten into
those two attributes, so the same reader joins them.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ..sources.otel import any_value, attributes, nanos

__all__ = [
    "JSON",
    "PROTOBUF",
    "BadRequest",
    "SpanIn",
    "TooLarge",
    "decode_logs",
    "decode_traces",
    "response_body",
    "unpack",
]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class BadRequest(ValueError):
    """A body that cannot be read: answered ``400`` with this message."""


class TooLarge(ValueError):
    """A body over the size limit, sent or once decompressed: answered ``413``."""


@dataclass(slots=True)
class SpanIn:
    """One span (or one GenAI log event) as the sessions read it."""

    trace_id: str
    """Lower-case hex."""
    span_id: str
    root: bool
    """No parent span: its arrival is the end of its trace."""
    attrs: dict[str, Any]
    resource: dict[str, Any]
    """The attributes of its resource (shared by the spans of one resource)."""
    fields: dict[str, Any]
    """``startTimeUnixNano``, ``endTimeUnixNano``, ``status``: what the OTel reader reads."""

    @property
    def start(self) -> int:
        start = self.fields.get("startTimeUnixNano")
        return start if isinstance(start, int) else 0


def unpack(body: bytes, encoding: str | None, limit: int) -> bytes:
    """The request body, gunzipped when ``Content-Encoding: gzip``, at most ``limit`` bytes.

    Raises:
        TooLarge: the body is (or inflates to) more than ``limit`` bytes.
        BadRequest: an unknown encoding, or gzip data that is corrupt or truncated.
    """
    if len(body) > limit:
        raise TooLarge(f"request body of {len(body)} bytes is over the limit of {limit}")
    coding = (encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "deflate"):
        raise BadRequest(f"unsupported Content-Encoding {encoding!r} (gzip or identity)")
    inflate = zlib.decompressobj(zlib.MAX_WBITS | (16 if coding == "gzip" else 0))
    try:
        data = inflate.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(f"corrupt {coding} body: {exc}") from None
    if len(data) > limit or inflate.unconsumed_tail:
        raise TooLarge(f"request body inflates to over the limit of {limit} bytes")
    if not inflate.eof:
        raise BadRequest(f"truncated {coding} body: the stream ends at byte {len(body)}")
    return data


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _kv(value.kvlist_value.values)
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return None


def _kv(values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in values:
        entry_value: AnyValue = entry.value
        if entry_value.WhichOneof("value") == "string_value":
            out[entry.key] = entry_value.string_value
        else:
            out[entry.key] = _value(entry_value)
    return out


def _parse(message: Any, data: bytes) -> None:
    try:
        message.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise BadRequest(f"malformed protobuf {type(message).__name__}: {exc}") from None


def _json(data: bytes, top: str) -> list[Any]:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON at byte {exc.pos}: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise BadRequest(f"expected a JSON object with {top!r}, got {type(doc).__name__}")
    found = doc.get(top, [])
    if not isinstance(found, list):
        raise BadRequest(f"{top!r} must be a list")
    return found


def _list(obj: Any, key: str) -> list[Any]:
    """``obj[key]``, a list (missing: empty)."""
    if not isinstance(obj, dict):
        raise BadRequest(f"expected an object with {key!r}, got {type(obj).__name__}")
    found = obj.get(key)
    if found is None:
        return []
    if not isinstance(found, list):
        raise BadRequest(f"{key!r} must be a list, got {type(found).__name__}")
    return found


def _json_items(
    data: bytes, top: str, scopes: str, items: str
) -> Iterator[tuple[dict[str, Any], Any]]:
    """Each item of an OTLP JSON export (a span, a log record) with its resource's
    attributes."""
    for resources in _json(data, top):
        if not isinstance(resources, dict):
            raise BadRequest(f"each of {top!r} must be an object")
        res = resources.get("resource")
        resource = attributes(res.get("attributes")) if isinstance(res, dict) else {}
        for scope in _list(resources, scopes):
            for item in _list(scope, items):
                yield resource, item


def _hex(value: Any) -> str:
    return value.lower() if isinstance(value, str) else ""


def decode_traces(data: bytes, content_type: str) -> tuple[list[SpanIn], int]:
    """The spans of an ``ExportTraceServiceRequest`` body, and how many were rejected (no
    trace or span id).

    Raises:
        BadRequest: the body is not such a request.
    """
    spans: list[SpanIn] = []
    rejected = 0
    if content_type == PROTOBUF:
        request = ExportTraceServiceRequest()
        _parse(request, data)
        for resource_spans in request.resource_spans:
            resource = _kv(resource_spans.resource.attributes)
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    if len(span.trace_id) != 16 or len(span.span_id) != 8:
                        rejected += 1
                        continue
                    fields: dict[str, Any] = {
                        "startTimeUnixNano": span.start_time_unix_nano,
                        "endTimeUnixNano": span.end_time_unix_nano,
                    }
                    if span.status.code or span.status.message:
                        status = span.status
                        fields["status"] = {"code": status.code, "message": status.message}
                    spans.append(
                        SpanIn(
                            span.trace_id.hex(),
                            span.span_id.hex(),
                            not span.parent_span_id,
                            _kv(span.attributes),
                            resource,
                            fields,
                        )
                    )
        return spans, rejected
    for resource, span in _json_items(data, "resourceSpans", "scopeSpans", "spans"):
        if not isinstance(span, dict):
            rejected += 1
            continue
        trace_id, span_id = _hex(span.get("traceId")), _hex(span.get("spanId"))
        if not trace_id or not span_id:
            rejected += 1
            continue
        fields = {
            "startTimeUnixNano": nanos(span.get("startTimeUnixNano")),
            "endTimeUnixNano": nanos(span.get("endTimeUnixNano")),
            "status": span.get("status"),
        }
        attrs = attributes(span.get("attributes"))
        spans.append(
            SpanIn(trace_id, span_id, not span.get("parentSpanId"), attrs, resource, fields)
        )
    return spans, rejected


def _event_attrs(name: str, attrs: dict[str, Any], body: Any) -> dict[str, Any] | None:
    """A GenAI event's messages as a chat span's attributes; None for another event."""
    if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
        return attrs
    if not isinstance(body, dict):
        return None
    if name == "gen_ai.choice":
        message = body.get("message")
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        parts = []
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                parts.append(
                    {
                        "type": "tool_call",
                        "id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": function.get("arguments"),
                    }
                )
        return {"gen_ai.output.messages": [{"role": "assistant", "parts": parts}]}
    if name == "gen_ai.tool.message" and body.get("id") is not None:
        part = {"type": "tool_call_response", "id": body["id"], "response": body.get("content")}
        return {"gen_ai.input.messages": [{"role": "tool", "parts": [part]}]}
    return None


def decode_logs(data: bytes, content_type: str) -> tuple[list[SpanIn], int]:
    """The GenAI events of an ``ExportLogsServiceRequest`` body that carry tool calls or
    results, each as a :class:`SpanIn` of its trace; other records are skipped. Records
    without a trace id are rejected.

    Raises:
        BadRequest: the body is not such a request.
    """
    found: list[SpanIn] = []
    rejected = 0
    records: list[tuple[str, str, str, dict[str, Any], Any, int, dict[str, Any]]] = []
    if content_type == PROTOBUF:
        request = ExportLogsServiceRequest()
        _parse(request, data)
        for resource_logs in request.resource_logs:
            resource = _kv(resource_logs.resource.attributes)
            for scope in resource_logs.scope_logs:
                for rec in scope.log_records:
                    attrs = _kv(rec.attributes)
                    name = rec.event_name or str(attrs.get("event.name", ""))
                    body = _value(rec.body) if rec.HasField("body") else None
                    records.append(
                        (
                            rec.trace_id.hex(),
                            rec.span_id.hex(),
                            name,
                            attrs,
                            body,
                            rec.time_unix_nano,
                            resource,
                        )
                    )
    else:
        for resource, rec in _json_items(data, "resourceLogs", "scopeLogs", "logRecords"):
            if not isinstance(rec, dict):
                rejected += 1
                continue
            attrs = attributes(rec.get("attributes"))
            name = rec.get("eventName") or attrs.get("event.name") or ""
            body = any_value(rec.get("body"))
            time = nanos(rec.get("timeUnixNano")) or 0
            trace_id, span_id = _hex(rec.get("traceId")), _hex(rec.get("spanId"))
            records.append((trace_id, span_id, str(name), attrs, body, time, resource))
    for trace_id, span_id, name, attrs, body, time, resource in records:
        chat = _event_attrs(name, attrs, body)
        if chat is None:
            continue
        if not trace_id.strip("0"):
            rejected += 1
            continue
        fields = {"startTimeUnixNano": time, "endTimeUnixNano": time}
        found.append(SpanIn(trace_id, span_id, False, chat, resource, fields))
    return found, rejected


def response_body(content_type: str, logs: bool, rejected: int, message: str = "") -> bytes:
    """The ``Export*ServiceResponse``, with ``partial_success`` when items were rejected."""
    if content_type == PROTOBUF:
        response: Any = ExportLogsServiceResponse() if logs else ExportTraceServiceResponse()
        if rejected or message:
            partial = response.partial_success
            if logs:
                partial.rejected_log_records = rejected
            else:
                partial.rejected_spans = rejected
            partial.error_message = message
        data: bytes = response.SerializeToString()
        return data
    if not rejected and not message:
        return b"{}"
    key = "rejectedLogRecords" if logs else "rejectedSpans"
    return orjson.dumps({"partialSuccess": {key: rejected, "errorMessage": message}})
