"""An OpenAI Agents SDK agent, its model a local stub, its spans exported by its
OpenTelemetry instrumentation: the forbidden call's finding is on the console and in
``/metrics`` within 100 ms of the span's export, and the session's score when it ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from _genai import exporter
from _model_stub import model_stub
from _server import Running, serve

from toolscore.serve.sessions import Limits

FOUND = "toolscore_findings_total{check=policy,kind=forbidden_call,severity=error}"


class Timed:
    """The SDK's exporter, noting when the forbidden call's span was exported and when the
    finding showed on the console and in ``/metrics``."""

    def __init__(self, inner: Any, srv: Running) -> None:
        self.inner = inner
        self.srv = srv
        self.delays: list[float] = []

    def export(self, spans: Sequence[Any]) -> Any:
        started = time.perf_counter()
        result = self.inner.export(spans)
        if any(s.name == "execute_tool delete_database" for s in spans):
            srv = self.srv
            srv.wait(
                lambda: (
                    "delete_database matches forbidden rule 1" in srv.console.getvalue()
                    and srv.metrics().get(FOUND) == 1
                ),
                timeout=2,
            )
            self.delays.append(time.perf_counter() - started)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def test_agents_sdk_forbidden_call_within_100_ms() -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    @agents.function_tool
    def search(q: str) -> str:
        """Search the documents."""
        return f"found {q}"

    @agents.function_tool
    def delete_database(name: str) -> str:
        """Delete a database."""
        return "deleted"

    gold = {"*": [{"tool": "search", "args": {"q": "x"}}]}
    turns = [[("search", {"q": "x"})], [("delete_database", {"name": "prod"})]]
    with serve(gold=gold, limits=Limits(grace=0.05)) as srv, model_stub(turns) as base:
        provider = TracerProvider()
        timed = Timed(exporter(srv.url), srv)
        provider.add_span_processor(SimpleSpanProcessor(timed))  # type: ignore[arg-type]
        agents.set_trace_processors([])  # nothing sent to OpenAI's own trace backend
        instrumentor = OpenAIAgentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider)
        try:
            model = agents.OpenAIChatCompletionsModel(
                model="stub-model", openai_client=AsyncOpenAI(base_url=base, api_key="stub")
            )
            agent = agents.Agent(
                name="ops", instructions="help", tools=[search, delete_database], model=model
            )
            result = asyncio.run(agents.Runner.run(agent, "clean up"))
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
        assert result.final_output == "done"
        srv.wait(lambda: srv.receiver.outputs.closed_count == 1)
        metrics = srv.metrics()
    (delay,) = timed.delays
    assert delay < 0.1, f"the finding took {delay * 1000:.1f} ms"
    closed = srv.console.getvalue().splitlines()[-1]
    assert "closed (ended): 2 calls, score" in closed and "1 forbidden call(s)" in closed
    assert metrics["toolscore_session_score_count"] == 1
