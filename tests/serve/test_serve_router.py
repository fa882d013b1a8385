"""Two ``serve`` instances behind a router by trace id (what the Collector's load-balancing
exporter does): each session is evaluated whole by exactly one instance."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from _genai import exporter, tool_span
from _http import Quiet, stub_server
from _server import serve
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from toolscore.serve.sessions import Limits


def split(request: ExportTraceServiceRequest, n: int) -> list[ExportTraceServiceRequest]:
    """The request's spans, one request per backend, by trace id (resources kept)."""
    parts = [ExportTraceServiceRequest() for _ in range(n)]
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                part = parts[int.from_bytes(span.trace_id, "big") % n]
                target = part.resource_spans.add()
                target.resource.CopyFrom(resource_spans.resource)
                scope = target.scope_spans.add()
                scope.scope.CopyFrom(scope_spans.scope)
                scope.spans.add().CopyFrom(span)
    return parts


@contextmanager
def router(backends: list[str]) -> Iterator[str]:
    class Handler(Quiet):
        def do_POST(self) -> None:
            request = ExportTraceServiceRequest()
            request.ParseFromString(self.rfile.read(int(self.headers["content-length"])))
            for backend, part in zip(backends, split(request, len(backends)), strict=True):
                if part.resource_spans:
                    forward = urllib.request.Request(
                        f"{backend}/v1/traces",
                        part.SerializeToString(),
                        {"Content-Type": "application/x-protobuf"},
                        method="POST",
                    )
                    with urllib.request.urlopen(forward, timeout=10) as response:
                        response.read()
            self.reply(content_type="application/x-protobuf")

    with stub_server(Handler) as url:
        yield url


class _AlternatingParity(RandomIdGenerator):
    """Random trace ids, odd and even in turn: the router sends each instance half of them
    (eight random ids all of one parity, 1 run in 128, left one instance without a span)."""

    def __init__(self) -> None:
        self._n = 0

    def generate_trace_id(self) -> int:
        self._n += 1
        return (super().generate_trace_id() & ~1) | (self._n % 2)


def test_two_instances_each_evaluate_whole_sessions(tmp_path: Path) -> None:
    records = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    expected: dict[str, int] = {}
    with ExitStack() as stack:
        servers = [
            stack.enter_context(serve(limits=Limits(grace=60), per_trace=str(path)))
            for path in records
        ]
        url = stack.enter_context(router([s.url for s in servers]))
        provider = TracerProvider(id_generator=_AlternatingParity())
        provider.add_span_processor(BatchSpanProcessor(exporter(url), schedule_delay_millis=50))
        tracer = provider.get_tracer("agents")
        for i in range(8):  # the traces' spans interleave in the exporter's batches
            with tracer.start_as_current_span("invoke_agent") as root:
                for _ in range(i % 3 + 1):
                    tool_span(tracer, "search", {"q": i})
                if i % 2:
                    tool_span(tracer, "delete_database", {"db": i})
                expected[f"{root.get_span_context().trace_id:032x}"] = i % 3 + 1 + i % 2
        provider.force_flush()
        provider.shutdown()
        for srv in servers:
            srv.wait(lambda srv=srv: srv.metrics()["toolscore_spans_total"] > 0)
        servers[0].wait(
            lambda: (
                sum(s.metrics()["toolscore_calls_total"] for s in servers) == sum(expected.values())
            )
        )
    seen: dict[str, tuple[int, int]] = {}
    for which, path in enumerate(records):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            assert record["trace_id"] not in seen  # one instance per session
            seen[record["trace_id"]] = (which, record["calls"])
    assert len(seen) == len(expected) == 8
    assert {key: calls for key, (_, calls) in seen.items()} == expected
    assert {which for which, _ in seen.values()} == {0, 1}
    for key, (which, _) in seen.items():
        assert int(key, 16) % 2 == which
