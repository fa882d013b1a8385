from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _streamed import assert_numbered, json_like, streamed
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import ToolCall
from toolscore.integrations import from_otel, run_dialect
from toolscore.sources.detect import detect
from toolscore.sources.otel import OTelDialect, any_value, attributes, is_tool_span


def calls(*items: Any) -> list[ToolCall]:
    return run_dialect(OTelDialect(), items)


def kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def span(name: str, start: int, end: int, attrs: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": f"execute_tool {name}",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [
            kv("gen_ai.operation.name", "execute_tool"),
            kv("gen_ai.tool.name", name),
            *(kv(k, v) for k, v in (attrs or {}).items()),
        ],
    }


REFERENCE = {
    "resourceSpans": [
        {
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "name": "execute_tool fetch",
                            "startTimeUnixNano": "2000000000",
                            "endTimeUnixNano": "2500000000",
                            "attributes": [
                                kv("gen_ai.operation.name", "execute_tool"),
                                kv("gen_ai.tool.name", "fetch"),
                                kv("gen_ai.tool.call.id", "c1"),
                                kv("gen_ai.tool.call.arguments", '{"u": 1}'),
                                kv("gen_ai.tool.call.result", '{"n": 3}'),
                                kv("error.type", "TimeoutError"),
                            ],
                            "status": {"code": 2, "message": "timed out"},
                        },
                        {"name": "chat", "attributes": [kv("gen_ai.operation.name", "chat")]},
                    ]
                }
            ]
        }
    ]
}


def test_reference_example() -> None:
    (call,) = calls(REFERENCE)
    assert call.tool == "fetch" and call.args == {"u": 1} and call.result == {"n": 3}
    assert call.is_error and call.error == "timed out"
    assert call.duration == pytest.approx(0.5) and call.timestamp == pytest.approx(2.0)
    assert call.metadata["id"] == "c1" and call.metadata["format"] == "otel"


def test_any_value_decoding() -> None:
    assert any_value({"intValue": "12"}) == 12
    assert any_value({"doubleValue": 1.5}) == 1.5
    assert any_value({"boolValue": False}) is False
    assert any_value({"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "a"}]}}) == [
        1,
        "a",
    ]
    assert any_value({"kvlistValue": {"values": [kv("k", "v")]}}) == {"k": "v"}
    assert any_value({}) is None
    assert attributes({"a": 1}) == {"a": 1}


def test_args_result_and_error_type_forms() -> None:
    got = calls(
        span("a", 1, 2),
        span("b", 3, 4, {"gen_ai.tool.call.arguments": "[1]", "gen_ai.tool.call.result": "plain"}),
        span("c", 5, 6, {"error.type": "ValueError"}),
        {
            "name": "mcp",
            "attributes": {
                "gen_ai.tool.name": "d",
                "mcp.method.name": "tools/call",
                "jsonrpc.request.id": 7,
            },
            "status": {"code": "STATUS_CODE_ERROR"},
        },
    )
    assert [c.tool for c in got] == ["a", "b", "c", "d"]
    assert got[0].args == {} and got[0].result is None and not got[0].is_error
    assert got[1].args == {"value": [1]} and got[1].result == "plain"
    assert got[2].is_error and got[2].error == "ValueError"
    assert got[3].is_error and got[3].error is None and got[3].metadata["id"] == "7"
    assert got[3].duration is None


def test_non_tool_spans_are_skipped() -> None:
    assert not is_tool_span({"attributes": [kv("gen_ai.tool.name", "x")]})
    assert calls({"name": "x", "attributes": [kv("gen_ai.operation.name", "execute_tool")]}) == []


def test_openinference_tool_span() -> None:
    got = calls(
        {
            "name": "get_weather",
            "attributes": [
                kv("openinference.span.kind", "TOOL"),
                kv("tool.name", "get_weather"),
                kv("tool.parameters", '{"type": "object", "properties": {"c": {}}}'),
                kv("input.value", '{"city": "Paris"}'),
                kv("output.value", '{"t": 18}'),
            ],
        },
        {
            "name": "calc",
            "attributes": {
                "openinference.span.kind": "TOOL",
                "tool.name": "calc",
                "tool.parameters": '{"schema": "no"}',
                "tool_call.id": "x1",
            },
        },
        {"name": "llm", "attributes": {"openinference.span.kind": "LLM", "tool.name": "z"}},
    )
    assert [(c.tool, c.args, c.result) for c in got] == [
        ("get_weather", {"city": "Paris"}, {"t": 18}),
        ("calc", {"schema": "no"}, None),
    ]
    assert got[0].metadata["format"] == "openinference" and got[1].metadata["id"] == "x1"


def test_instrumentation_library_spans_and_sorting_within_an_export() -> None:
    export = {
        "resourceSpans": [
            {
                "instrumentationLibrarySpans": [
                    {"spans": [span("late", 50, 60), span("early", 10, 20)]},
                ]
            }
        ]
    }
    assert [c.tool for c in calls(export)] == ["early", "late"]
    # Across items (streamed spans, JSON Lines exports), read order is kept.
    assert [c.tool for c in calls(span("late", 50, 60), span("early", 10, 20))] == [
        "late",
        "early",
    ]


# --- spans made by the OpenTelemetry SDK, encoded by its own OTLP encoder --------------------


def _sdk_spans() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("toolscore-test")
    with tracer.start_as_current_span("invoke_agent"):
        with tracer.start_as_current_span("execute_tool search") as s:
            s.set_attribute("gen_ai.operation.name", "execute_tool")
            s.set_attribute("gen_ai.tool.name", "search")
            s.set_attribute("gen_ai.tool.call.id", "call_1")
            s.set_attribute("gen_ai.tool.call.arguments", json.dumps({"q": "x", "n": 3}))
            s.set_attribute("gen_ai.tool.call.result", json.dumps(["r1"]))
        with tracer.start_as_current_span("execute_tool fetch") as s:
            s.set_attribute("gen_ai.operation.name", "execute_tool")
            s.set_attribute("gen_ai.tool.name", "fetch")
            s.set_attribute("gen_ai.tool.call.id", "call_2")
            s.set_attribute("error.type", "TimeoutError")
            s.set_status(Status(StatusCode.ERROR, "timed out"))
        with tracer.start_as_current_span("lookup") as s:
            s.set_attribute("openinference.span.kind", "TOOL")
            s.set_attribute("tool.name", "lookup")
            s.set_attribute("input.value", json.dumps({"k": 1}))
            s.set_attribute("output.value", "v")
    return exporter.get_finished_spans()


def _otlp_json(spans: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToJson  # type: ignore[import-untyped]
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    result: dict[str, Any] = json.loads(MessageToJson(encode_spans(spans)))
    return result


def _check_sdk_calls(got: list[dict[str, Any]], spans: Any) -> None:
    assert [c["tool"] for c in got] == ["search", "fetch", "lookup"]
    assert got[0]["args"] == {"q": "x", "n": 3} and got[0]["result"] == ["r1"]
    assert got[0]["is_error"] is False and got[0]["id"] == "call_1"
    assert got[1]["is_error"] is True and got[1]["error"] == "timed out"
    assert got[2]["args"] == {"k": 1} and got[2]["result"] == "v"
    by_name = {s.name: s for s in spans}
    expected = by_name["execute_tool search"].end_time - by_name["execute_tool search"].start_time
    assert got[0]["duration"] == pytest.approx(expected / 1e9)


def test_sdk_spans_through_the_otlp_encoder() -> None:
    spans = _sdk_spans()
    export = _otlp_json(spans)
    assert "resourceSpans" in export  # protobuf's JSON mapping, int64 as strings
    got = from_otel(export)
    _check_sdk_calls(got, spans)
    assert from_otel(spans) == from_otel(export)


def test_from_otel_reads_the_protobuf_request_itself() -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = _sdk_spans()
    assert from_otel(encode_spans(spans)) == from_otel(_otlp_json(spans))


json_values = json_like(
    [
        "resourceSpans",
        "scopeSpans",
        "spans",
        "attributes",
        "key",
        "value",
        "stringValue",
        "intValue",
        "status",
        "code",
        "startTimeUnixNano",
    ]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6))
def test_arbitrary_json_never_raises(items: list[Any]) -> None:
    assert_numbered(calls(*items))


# --- streamed reading agrees with the in-memory helper ---------------------------------------


def test_streamed_otlp_document_matches_from_otel(tmp_path: Path) -> None:
    spans = _sdk_spans()
    export = _otlp_json(spans)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(export, indent=2))
    found = detect(path.read_bytes(), final=True)
    assert (found.dialect, found.prefix) == (
        "otel",
        "resourceSpans.item.scopeSpans.item.spans.item",
    )
    expected = from_otel(spans)
    assert len(expected) == 3 and streamed(path) == expected == from_otel(export)


def test_streamed_otlp_json_lines_one_export_per_line(tmp_path: Path) -> None:
    first, second = _otlp_json(_sdk_spans()), _otlp_json(_sdk_spans())
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    found = detect(path.read_bytes(), final=True)
    assert (found.layout, found.dialect) == ("jsonl", "otel")
    got = streamed(path)
    assert [c["tool"] for c in got] == ["search", "fetch", "lookup"] * 2
    assert got == from_otel(first) + from_otel(second)


def test_older_instrumentation_library_spans_document(tmp_path: Path) -> None:
    export = {
        "resourceSpans": [
            {"instrumentationLibrarySpans": [{"spans": [span("a", 1, 2), span("b", 3, 4)]}]}
        ]
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(export))
    assert detect(path.read_bytes(), final=True).prefix == (
        "resourceSpans.item.instrumentationLibrarySpans.item.spans.item"
    )
    assert streamed(path) == from_otel(export)


def test_array_of_spans_is_detected(tmp_path: Path) -> None:
    spans = [{"name": "chat", "attributes": []}, span("a", 1, 2)]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans))
    assert detect(path.read_bytes(), final=True).dialect == "otel"
    assert [c["tool"] for c in streamed(path)] == ["a"] == [c["tool"] for c in from_otel(spans)]


def chat(start: int, end: int, inputs: Any = None, outputs: Any = None) -> dict[str, Any]:
    attrs = [kv("gen_ai.operation.name", "chat")]
    if inputs is not None:
        attrs.append(kv("gen_ai.input.messages", json.dumps(inputs)))
    if outputs is not None:
        attrs.append(kv("gen_ai.output.messages", json.dumps(outputs)))
    return {
        "name": "chat",
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attrs,
    }


def tool_call(call_id: str, name: str, args: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": args}],
    }


def tool_response(call_id: str, response: Any) -> dict[str, Any]:
    return {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
    }


def test_chat_spans_calls_and_their_results() -> None:
    first = chat(
        1,
        2,
        inputs=[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
        outputs=[tool_call("a", "search", {"q": "x"}), tool_call("b", "fetch", "{}")],
    )
    # the next chat repeats the calls as history: they are not counted again
    second = chat(
        5,
        6,
        inputs=[
            tool_call("a", "search", {"q": "x"}),
            tool_response("a", "found"),
            tool_response("b", '{"n": 1}'),
        ],
    )
    got = calls({"resourceSpans": [{"scopeSpans": [{"spans": [second, first]}]}]})
    assert [(c.tool, c.args, c.result) for c in got] == [
        ("search", {"q": "x"}, "found"),
        ("fetch", {}, {"n": 1}),
    ]
    assert got[0].timestamp == pytest.approx(2e-9) and got[0].metadata["id"] == "a"


def test_a_chat_call_and_its_tool_span_are_one_call_in_either_order() -> None:
    chat_span = chat(1, 2, outputs=[tool_call("c1", "fetch", {"u": 1})])
    tool = span(
        "fetch",
        3,
        4,
        {"gen_ai.tool.call.id": "c1", "gen_ai.tool.call.result": "ok", "error.type": "Timeout"},
    )
    for order in ([chat_span, tool], [tool, chat_span]):
        (call,) = calls(*order)  # one span per item: arrival order
        assert call.tool == "fetch" and call.result == "ok" and call.is_error
    # a chat span's call whose result came first, then its tool span: still one call
    later = chat(5, 6, inputs=[tool_response("c1", "ok")])
    assert len(calls(chat_span, later, tool)) == 1


def test_a_chat_call_without_result_completes_at_end_of_stream() -> None:
    (call,) = calls(chat(1, 2, outputs=[tool_call("z", "rm", {"path": "/"})]))
    assert call.tool == "rm" and call.result is None and call.complete


def test_chat_spans_are_detected_in_an_otlp_file(tmp_path: Path) -> None:
    from toolscore.api import evaluate_trace

    path = tmp_path / "chat.json"
    export = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {"spans": [chat(1, 2, outputs=[tool_call("a", "search", {"q": "x"})])]}
                ]
            }
        ]
    }
    path.write_text(json.dumps(export))
    result = evaluate_trace([{"tool": "search", "args": {"q": "x"}}], str(path))
    assert result.score == pytest.approx(1.0)
