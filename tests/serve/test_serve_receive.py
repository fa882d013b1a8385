"""A real receiver fed by the OpenTelemetry SDK's OTLP/HTTP exporters (protobuf and JSON)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from _genai import chat_span, tool_span, tracer
from _http import Quiet, stub_server
from _server import get, post, serve
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from _cli import assert_stamped
from toolscore.serve.app import ServeConfig
from toolscore.serve.events import Events
from toolscore.serve.sessions import Limits

GOLD = {"*": [{"tool": "search", "args": {"q": "x"}}, {"tool": "fetch", "args": {"u": 1}}]}
SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"


def run_agent(url: str, kind: str) -> None:
    with tracer(url, kind) as t, t.start_as_current_span("invoke_agent") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        tool_span(t, "search", {"q": "x", "key": SECRET}, {"hits": 3})
        chat_span(t, [("c1", "fetch", {"u": 1}), ("c2", "delete_database", {"db": "prod"})])
        tool_span(t, "fetch", {"u": 1}, call_id="c1", error="Timeout")
        tool_span(t, "delete_database", {"db": "prod"}, "ok", call_id="c2")


@pytest.mark.parametrize("kind", ["protobuf", "json"])
def test_sdk_exporter_findings_live_and_the_score_at_the_end(kind: str, tmp_path: Path) -> None:
    findings, records = tmp_path / "findings.jsonl", tmp_path / "sessions.jsonl"
    limits = Limits(grace=0.05)
    since = datetime.now(timezone.utc)
    with serve(gold=GOLD, limits=limits, findings=str(findings), per_trace=str(records)) as srv:
        run_agent(srv.url, kind)
        srv.wait(lambda: srv.receiver.outputs.closed_count == 1)
        metrics = srv.metrics()
        console = srv.console.getvalue()
    lines = console.splitlines()
    assert any("ERROR" in x and "delete_database matches forbidden rule 1" in x for x in lines)
    assert any("fetch failed" in x for x in lines)
    assert SECRET not in console and SECRET not in findings.read_text()
    closed = lines[-1]
    assert "closed (ended): 3 calls" in closed and "score" in closed and "failed" in closed
    found = [json.loads(x) for x in findings.read_text().splitlines()]
    assert {(f["check"], f["kind"]) for f in found} >= {("policy", "forbidden_call")}
    assert len({f["session"] for f in found}) == 1
    assert_stamped(found, since)  # each with the time it was written
    (record,) = [json.loads(x) for x in records.read_text().splitlines()]
    assert record["calls"] == 3 and record["expected_calls"] == 2 and record["passed"] is False
    assert record["violations"] >= 2 and record["tools"]["fetch"] == [1, 1, 0]
    assert metrics["toolscore_calls_total"] == 3
    assert metrics["toolscore_spans_total"] == 5
    assert metrics["toolscore_findings_total{check=policy,kind=forbidden_call,severity=error}"] == 1
    assert metrics["toolscore_sessions_closed_total{reason=ended}"] == 1
    assert metrics["toolscore_session_score_count"] == 1
    assert metrics["toolscore_session_score_sum"] == pytest.approx(record["score"])
    assert metrics["toolscore_violations_total{kind=forbidden}"] == 1
    assert metrics["toolscore_sessions_open"] == 0


def test_without_gold_sessions_are_checks_only_and_close_at_shutdown(tmp_path: Path) -> None:
    with serve(limits=Limits(grace=60)) as srv:
        run_agent(srv.url, "protobuf")
        srv.wait(lambda: srv.metrics()["toolscore_calls_total"] == 3)
        assert srv.receiver.outputs.closed_count == 0
    last = srv.console.getvalue().splitlines()[-1]
    assert "closed (shutdown): 3 calls, checks only" in last and "score" not in last


def test_partial_success_gzip_and_the_protocols_responses() -> None:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
    }
    export = {"resourceSpans": [{"scopeSpans": [{"spans": [span, {"spanId": "00"}]}]}]}
    with serve() as srv:
        status, body, _ = post(
            f"{srv.url}/v1/traces",
            gzip.compress(json.dumps(export).encode()),
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
        assert status == 200
        partial = json.loads(body)["partialSuccess"]
        assert (
            partial["rejectedSpans"] == 1
            and "without a trace or span id" in partial["errorMessage"]
        )
        status, body, headers = post(
            f"{srv.url}/v1/traces",
            ExportTraceServiceRequest().SerializeToString(),
            {"Content-Type": "application/x-protobuf"},
        )
        assert status == 200 and headers["content-type"] == "application/x-protobuf"
        response = ExportTraceServiceResponse()
        response.ParseFromString(body)
        assert not response.HasField("partial_success")
        status, body = get(f"{srv.url}/healthz")
        assert status == 200 and json.loads(body)["status"] == "ok"
        assert post(f"{srv.url}/v1/traces", b"{}", {"Content-Type": "text/plain"})[0] == 415


def test_a_token_is_required_when_configured() -> None:
    with serve(config=ServeConfig(token="s3cret")) as srv:
        headers = {"Content-Type": "application/json"}
        assert post(f"{srv.url}/v1/traces", b"{}", headers)[0] == 401
        wrong = {**headers, "Authorization": "Bearer nope"}
        assert post(f"{srv.url}/v1/traces", b"{}", wrong)[0] == 401
        right = {**headers, "Authorization": "Bearer s3cret"}
        assert post(f"{srv.url}/v1/traces", b"{}", right)[0] == 200
        with tracer(srv.url, headers={"Authorization": "Bearer s3cret"}) as t:
            tool_span(t, "delete_database", {})
        srv.wait(lambda: srv.metrics()["toolscore_calls_total"] == 1)


@contextmanager
def collector() -> Iterator[tuple[str, list[ExportLogsServiceRequest]]]:
    """A stub OTLP collector on 127.0.0.1 keeping the log requests it receives."""
    received: list[ExportLogsServiceRequest] = []

    class Handler(Quiet):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers["content-length"]))
            if self.headers.get("content-encoding") == "gzip":
                data = gzip.decompress(data)
            request = ExportLogsServiceRequest()
            request.ParseFromString(data)
            received.append(request)
            self.reply()

    with stub_server(Handler) as url:
        yield url, received


def test_evaluation_events_are_sent_parented_to_the_evaluated_spans() -> None:
    with collector() as (url, received):
        with serve(gold=GOLD, limits=Limits(grace=0.05), events=Events(url)) as srv:
            with tracer(srv.url) as t, t.start_as_current_span("invoke_agent") as root:
                root_context = root.get_span_context()
                with t.start_as_current_span("execute_tool delete_database") as span:
                    span.set_attribute("gen_ai.operation.name", "execute_tool")
                    span.set_attribute("gen_ai.tool.name", "delete_database")
                    tool_context = span.get_span_context()
            srv.wait(lambda: srv.receiver.outputs.closed_count == 1)
        # the server's shutdown flushed the events
    records = [
        r
        for req in received
        for rl in req.resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    ]
    assert {r.event_name for r in records} == {"gen_ai.evaluation.result"}
    by_name = {
        next(a.value.string_value for a in r.attributes if a.key == "gen_ai.evaluation.name"): r
        for r in records
    }
    finding = by_name["toolscore.policy.forbidden_call"]
    assert int.from_bytes(finding.span_id, "big") == tool_context.span_id
    assert int.from_bytes(finding.trace_id, "big") == tool_context.trace_id
    score = by_name["toolscore.score"]
    assert int.from_bytes(score.span_id, "big") == root_context.span_id
    assert {"toolscore.violations", "toolscore.passed", "toolscore.argument_f1"} <= set(by_name)


def test_genai_log_events_of_the_instrumented_openai_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from _genai import exporter
    from _model_stub import model_stub
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    # the messages as gen_ai.client.inference.operation.details events (logs), not on spans
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    with (
        serve(limits=Limits(grace=60)) as srv,
        model_stub([[("delete_database", {"db": "x"})]]) as base,
    ):
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter(srv.url)))
        logger_provider = LoggerProvider()
        logger_provider.add_log_record_processor(
            SimpleLogRecordProcessor(OTLPLogExporter(endpoint=f"{srv.url}/v1/logs"))
        )
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        try:
            client = OpenAI(base_url=base, api_key="stub")
            tracer_ = tracer_provider.get_tracer("agent")
            with tracer_.start_as_current_span("invoke_agent"):
                first = client.chat.completions.create(
                    model="stub-model", messages=[{"role": "user", "content": "go"}]
                )
                call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
                client.chat.completions.create(
                    model="stub-model",
                    messages=[
                        {"role": "user", "content": "go"},
                        first.choices[0].message.model_dump(exclude_none=True),  # type: ignore[list-item]
                        {"role": "tool", "tool_call_id": call.id, "content": "dropped"},
                    ],
                )
        finally:
            instrumentor.uninstrument()
            tracer_provider.shutdown()
            logger_provider.shutdown()
        srv.wait(lambda: srv.metrics()["toolscore_calls_total"] == 1)
        metrics = srv.metrics()
    assert metrics["toolscore_findings_total{check=policy,kind=forbidden_call,severity=error}"] == 1
    assert "delete_database matches forbidden rule 1" in srv.console.getvalue()
    # its result came in the second chat's input: the call completed, once
    assert srv.console.getvalue().count("ERROR") == 1


def any_value(value: Any) -> dict[str, Any]:
    """A Python value as OTLP JSON's AnyValue."""
    if isinstance(value, dict):
        kv = [{"key": k, "value": any_value(v)} for k, v in value.items()]
        return {"kvlistValue": {"values": kv}}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def test_older_genai_events_choice_and_tool_message() -> None:
    def record(name: str, body: Any) -> dict[str, Any]:
        return {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": "b7ad6b7169203331",
            "eventName": name,
            "body": any_value(body),
        }

    function = {"name": "delete_database", "arguments": '{"db": "x"}'}
    choice = {
        "index": 0,
        "message": {
            "role": "assistant",
            "tool_calls": [{"id": "c9", "type": "function", "function": function}],
        },
    }
    records = [
        record("gen_ai.choice", choice),
        record("gen_ai.tool.message", {"id": "c9", "content": "gone"}),
    ]
    export = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
    with serve(limits=Limits(grace=60)) as srv:
        status, body, _ = post(
            f"{srv.url}/v1/logs", json.dumps(export).encode(), {"Content-Type": "application/json"}
        )
        assert status == 200 and body == b"{}"
        srv.wait(lambda: srv.metrics()["toolscore_calls_total"] == 1)
    assert "delete_database matches forbidden rule 1" in srv.console.getvalue()
