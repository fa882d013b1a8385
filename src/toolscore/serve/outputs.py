"""Where a session's events go: console lines, ``--findings``, ``--per-trace``, Prometheus,
and the evaluation events.

Console lines (plain text, one per event, flushed at once)::

    [session 4bf92f35 | calls 3] ERROR    call 3 run_shell matches forbidden rule 1: ...
    [session 4bf92f35] closed (ended): 4 calls, score 0.873 (B), failed, violations: ...

Finding messages are already redacted by the pipeline; they are shown with control
characters escaped (:func:`toolscore.sanitize.shown`). ``--findings`` appends each finding
as a JSON line with its time and session (``{"time": ..., "session": ..., "check": ...}``);
``--per-trace`` appends each closed session's record as the dataset writes it
(:class:`~toolscore.dataset.records.TraceRecord`, its ``trace_id`` the session's key, its
``task`` the gold's name). The verdict
(score, grade, violations, pass) is :meth:`~toolscore.result.EvaluationResult.verdict`'s.
"""

from __future__ import annotations

import os
import time
from typing import IO, TYPE_CHECKING, Any

from ..outputs import open_append
from ..reports.json import findings_lines
from ..sanitize import shown
from .metrics import Metrics

if TYPE_CHECKING:
    from ..calls import Finding, ToolCall
    from ..result import EvaluationResult
    from ..verdict import Verdict
    from .events import Events
    from .sessions import Session

__all__ = ["Outputs", "session_line"]


def _short(key: str) -> str:
    return key[:16]


def session_line(session: Session, verdict: Verdict, reason: str) -> str:
    """A closed session's line: its calls, verdict and violations."""
    parts = [f"{session.calls} call{'s' if session.calls != 1 else ''}"]
    if verdict.score is None:
        parts.append("checks only")
    else:
        parts.append(f"score {verdict.score:.3f} ({verdict.grade})")
        parts.append("passed" if verdict.passed else "failed")
    parts.append(f"violations: {verdict.violations.describe()}")
    return f"[session {shown(_short(session.key))}] closed ({reason}): " + ", ".join(parts)


class Outputs:
    """The sessions' sink (:class:`~toolscore.serve.sessions.SessionSink`).

    Args:
        console: the text stream for live lines (None: no lines).
        findings: a path to append findings to, as JSON lines.
        per_trace: a path to append closed sessions' records to, as JSON lines.
        events: the evaluation-events exporter (``--export-otlp``).
        show_calls: also print a line per call.
    """

    def __init__(
        self,
        *,
        console: IO[str] | None = None,
        findings: str | None = None,
        per_trace: str | None = None,
        events: Events | None = None,
        show_calls: bool = False,
    ) -> None:
        self.metrics = Metrics()
        self.console = console
        self.events = events
        self.show_calls = show_calls
        self._findings = None if findings is None else open_append(findings)
        self._records = None if per_trace is None else open_append(per_trace)
        self.closed_count = 0
        self._config: Any = None

    def _write(self, lines: list[str]) -> None:
        if self.console is not None and lines:
            self.console.write("\n".join(lines) + "\n")
            self.console.flush()

    def opened(self, session: Session) -> None:
        self.metrics.sessions_opened.inc()
        self.metrics.sessions_open.inc()
        if self.show_calls:
            gold = f", gold {session.task!r}" if session.has_gold else ", no gold"
            self._write([f"[session {shown(_short(session.key))}] opened{shown(gold)}"])

    def calls(self, session: Session, calls: list[ToolCall]) -> None:
        self.metrics.calls.inc(len(calls))
        if self.show_calls:
            prefix = f"[session {shown(_short(session.key))} | call "
            self._write([f"{prefix}{c.index + 1}] {shown(c.tool)}" for c in calls])

    def findings(self, session: Session, found: list[Finding]) -> None:
        latency = time.perf_counter() - session.arrival
        metrics = self.metrics
        for finding in found:
            metrics.finding(finding.check, finding.kind, finding.severity, latency)
        if self._findings is not None:
            os.write(self._findings, findings_lines(found, session.key))
        if self.events is not None:
            for finding in found:
                index = finding.call_index
                where = session.span_of.get(index) if index is not None else None
                self.events.finding(session.key, where or session.root or session.first, finding)
        if self.console is not None:
            prefix = f"[session {shown(_short(session.key))} | calls {session.calls}] "
            self._write([f"{prefix}{f.severity.upper():<7}  {shown(f.message)}" for f in found])

    def closed(self, session: Session, result: EvaluationResult, reason: str) -> None:
        verdict = result.verdict()
        self.closed_count += 1
        self.metrics.closed(reason, verdict)
        if reason == "evicted":
            self.metrics.evictions.inc()
        if self._records is not None:
            os.write(self._records, self._record(session, result))
        if self.events is not None:
            self.events.session(session.key, session.root or session.first, result, verdict)
        self._write([session_line(session, verdict, reason)])

    def _record(self, session: Session, result: EvaluationResult) -> bytes:
        # the dataset's record, filled as a dataset run fills it (imported with --per-trace)
        from ..dataset.gold import GoldSpec
        from ..dataset.records import TraceRecord, record_line
        from ..dataset.worker import Config
        from ..dataset.worker import _fill as fill_record

        if self._config is None:
            self._config = Config(gold=GoldSpec("one"))
        record = TraceRecord(trace_id=session.key, task=session.task, source="otlp")
        fill_record(record, result, session.tools, self._config, session.has_gold, "otlp", None)
        return record_line(record)

    def close(self) -> None:
        """Flush and close the files and the events exporter."""
        for fd in (self._findings, self._records):
            if fd is not None:
                os.close(fd)
        self._findings = self._records = None
        if self.events is not None:
            self.events.close()
            self.events = None
        if self.console is not None:
            self.console.flush()
