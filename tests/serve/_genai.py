"""Spans made as the GenAI semantic conventions say, exported by the OpenTelemetry SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer


def exporter(url: str, kind: str = "protobuf", **options: Any) -> SpanExporter:
    """The SDK's OTLP/HTTP span exporter (protobuf or JSON) to ``url``'s ``/v1/traces``."""
    if kind == "json":
        from opentelemetry.exporter.otlp.json.http.trace_exporter import (
            OTLPSpanExporter as JsonExporter,
        )

        return JsonExporter(endpoint=f"{url}/v1/traces", **options)  # type: ignore[no-any-return]
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=f"{url}/v1/traces", **options)


@contextmanager
def tracer(url: str, kind: str = "protobuf", **options: Any) -> Iterator[Tracer]:
    """A tracer whose every span is exported as it ends (one request per span)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "agent-under-test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter(url, kind, **options)))
    try:
        yield provider.get_tracer("tests")
    finally:
        provider.shutdown()


def tool_span(
    tracer: Tracer,
    name: str,
    args: Any,
    result: Any = None,
    *,
    call_id: str | None = None,
    error: str | None = None,
) -> None:
    """An ``execute_tool`` span."""
    with tracer.start_as_current_span(f"execute_tool {name}") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", name)
        span.set_attribute("gen_ai.tool.call.arguments", json.dumps(args))
        if call_id is not None:
            span.set_attribute("gen_ai.tool.call.id", call_id)
        if result is not None:
            span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, error))


def chat_span(
    tracer: Tracer,
    calls: list[tuple[str, str, Any]],
    results: list[tuple[str, Any]] = (),  # type: ignore[assignment]
) -> None:
    """A ``chat`` span whose output asks for ``calls`` (id, name, args) and whose input
    carries ``results`` (id, response)."""
    with tracer.start_as_current_span("chat model") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        inputs = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
        inputs += [
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": i, "response": r}]}
            for i, r in results
        ]
        span.set_attribute("gen_ai.input.messages", json.dumps(inputs))
        parts = [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
        span.set_attribute(
            "gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": parts}])
        )
