"""``--export-otlp URL``: evaluation results sent back as OpenTelemetry events.

One ``gen_ai.evaluation.result`` event (a log record, as the GenAI semantic conventions
define it) per finding, parented to the span of the call it is about, and one per session
metric (score, selection accuracy, argument F1, sequence accuracy, required-call recall,
violations, pass) parented to the session's root span (else its first). They are sent with
the OpenTelemetry SDK's OTLP/HTTP log exporter in batches, off the event loop (the SDK's
batch processor has its own thread), and flushed at shutdown. Messages are redacted: they
are the findings' own words, which the pipeline redacted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

if TYPE_CHECKING:
    from ..calls import Finding
    from ..result import EvaluationResult
    from ..verdict import Verdict

__all__ = ["EVENT_NAME", "Events"]

EVENT_NAME = "gen_ai.evaluation.result"


def _context(where: tuple[str, str] | None) -> Any:
    if where is None:
        return None
    try:
        trace_id, span_id = int(where[0], 16), int(where[1], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(1))
    return trace.set_span_in_context(NonRecordingSpan(parent))


class Events:
    """The exporter of evaluation events.

    Args:
        url: the OTLP/HTTP endpoint, ``/v1/logs`` added unless it is there.
        headers: extra request headers (a token).
    """

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        endpoint = url if url.rstrip("/").endswith("/v1/logs") else url.rstrip("/") + "/v1/logs"
        self.provider = LoggerProvider(resource=Resource.create({"service.name": "toolscore"}))
        self.processor = BatchLogRecordProcessor(
            OTLPLogExporter(endpoint=endpoint, headers=headers), schedule_delay_millis=200
        )
        self.provider.add_log_record_processor(self.processor)
        self.logger = self.provider.get_logger("toolscore.serve")

    def _emit(self, where: tuple[str, str] | None, attrs: dict[str, Any]) -> None:
        self.logger.emit(
            LogRecord(context=_context(where), event_name=EVENT_NAME, attributes=attrs)
        )

    def finding(self, session: str, where: tuple[str, str] | None, finding: Finding) -> None:
        """One finding's event."""
        attrs: dict[str, Any] = {
            "gen_ai.evaluation.name": f"toolscore.{finding.check}.{finding.kind}",
            "gen_ai.evaluation.score.label": finding.severity,
            "gen_ai.evaluation.explanation": finding.message,
            "toolscore.session": session,
        }
        if finding.tool is not None:
            attrs["gen_ai.tool.name"] = finding.tool
        if finding.call_index is not None:
            attrs["toolscore.call_index"] = finding.call_index
        self._emit(where, attrs)

    def session(
        self,
        session: str,
        where: tuple[str, str] | None,
        result: EvaluationResult,
        verdict: Verdict,
    ) -> None:
        """One event per session metric."""
        values: list[tuple[str, float, str | None]] = [
            ("violations", float(verdict.violations.total), verdict.violations.describe())
        ]
        if verdict.score is not None:
            values += [
                ("score", verdict.score, verdict.grade),
                ("selection_accuracy", float(result.selection_accuracy), None),
                ("argument_f1", float(result.argument_f1), None),
                ("sequence_accuracy", float(result.sequence_accuracy), None),
            ]
            if verdict.required_call_recall is not None:
                values.append(("required_call_recall", verdict.required_call_recall, None))
            passed = "pass" if verdict.passed else "fail"
            values.append(("passed", 1.0 if verdict.passed else 0.0, passed))
        for name, value, label in values:
            attrs: dict[str, Any] = {
                "gen_ai.evaluation.name": f"toolscore.{name}",
                "gen_ai.evaluation.score.value": value,
                "toolscore.session": session,
                "toolscore.calls": result.trace_calls_count,
            }
            if label is not None:
                attrs["gen_ai.evaluation.score.label"] = label
            self._emit(where, attrs)

    def close(self) -> None:
        """Send what is batched and stop the exporter."""
        self.provider.force_flush()
        self.provider.shutdown()
