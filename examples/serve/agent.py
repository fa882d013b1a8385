"""A scripted ops agent, instrumented as the OpenTelemetry GenAI conventions say.

It needs no model: its "plan" is fixed (look up the disk usage, then clean a cache with a
destructive shell command), so that `toolscore serve` has something to catch. A real agent
gets the same spans from its SDK's instrumentation (OpenAI Agents SDK, LangChain, ...).

The exporter reads where to send from the standard variables::

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python agent.py
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Tracer


def search(q: str) -> str:
    return "92% full"


def run_shell(command: str) -> str:
    return "(not run: this agent only pretends)"


TOOLS = {"search": search, "run_shell": run_shell}
PLAN = [
    ("search", {"q": "disk usage"}),
    ("run_shell", {"command": "rm -rf /var/cache/app"}),
]


def call_tool(tracer: Tracer, call_id: str, name: str, args: dict[str, Any]) -> Any:
    """Run one tool inside its ``execute_tool`` span."""
    with tracer.start_as_current_span(f"execute_tool {name}") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", name)
        span.set_attribute("gen_ai.tool.call.id", call_id)
        span.set_attribute("gen_ai.tool.call.arguments", json.dumps(args))
        result = TOOLS[name](**args)
        span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        return result


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "ops-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("ops-agent")
    with tracer.start_as_current_span("invoke_agent ops-agent") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "ops-agent")
        for i, (name, args) in enumerate(PLAN, 1):
            call_tool(tracer, f"call_{i}", name, args)
    provider.shutdown()  # sends what is left before the process ends


if __name__ == "__main__":
    main()
