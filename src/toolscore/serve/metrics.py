"""Prometheus metrics of ``toolscore serve`` (``/metrics``), through ``prometheus-client``.

Each server has its own registry, so two servers in one process (a test's) never share a
counter. Label values come from a small closed set (a check's kind, a close reason, an HTTP
status); tool names and session keys are never labels.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ..verdict import Verdict

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The text exposition format's content type."""

_LATENCY = (0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075,
            0.1, 0.25, 0.5, 1.0, 2.5)  # fmt: skip
_SCORES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


class Metrics:
    """The server's counters, gauges and histograms (see each attribute's help text)."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.sessions_open = Gauge(
            "toolscore_sessions_open", "Sessions open now.", registry=registry
        )
        self.sessions_opened = Counter(
            "toolscore_sessions_opened", "Sessions opened.", registry=registry
        )
        self.sessions_closed = Counter(
            "toolscore_sessions_closed",
            "Sessions closed, by reason (ended, idle, evicted, shutdown).",
            ["reason"],
            registry=registry,
        )
        self.sessions_judged = Counter(
            "toolscore_sessions_judged",
            "Closed sessions by verdict (pass, fail; unscored without gold).",
            ["verdict"],
            registry=registry,
        )
        self.evictions = Counter(
            "toolscore_evictions", "Sessions closed early to bound memory.", registry=registry
        )
        self.spans = Counter(
            "toolscore_spans", "Spans (and GenAI log events) received.", registry=registry
        )
        self.spans_rejected = Counter(
            "toolscore_spans_rejected",
            "Spans rejected (no trace or span id), reported as partial success.",
            registry=registry,
        )
        self.late_spans = Counter(
            "toolscore_late_spans", "Spans of a session already closed, dropped.", registry=registry
        )
        self.calls = Counter("toolscore_calls", "Tool calls read.", registry=registry)
        self.findings = Counter(
            "toolscore_findings",
            "Findings, by check, kind and severity.",
            ["check", "kind", "severity"],
            registry=registry,
        )
        self.violations = Counter(
            "toolscore_violations",
            "Violations of closed sessions, by kind.",
            ["kind"],
            registry=registry,
        )
        self.score = Histogram(
            "toolscore_session_score", "Scores of closed sessions with gold.",
            buckets=_SCORES, registry=registry,
        )  # fmt: skip
        self.requests = Counter(
            "toolscore_requests",
            "OTLP requests, by path and HTTP status.",
            ["path", "code"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "toolscore_request_seconds", "Time to answer an OTLP request.",
            ["path"], buckets=_LATENCY, registry=registry,
        )  # fmt: skip
        self.check_seconds = Histogram(
            "toolscore_check_seconds", "Time to run one request's spans through the checks.",
            buckets=_LATENCY, registry=registry,
        )  # fmt: skip
        self.finding_seconds = Histogram(
            "toolscore_finding_latency_seconds",
            "From a request's arrival to each finding its spans gave.",
            buckets=_LATENCY, registry=registry,
        )  # fmt: skip
        self.queued_spans = Gauge(
            "toolscore_queued_spans", "Spans accepted and waiting for the checks.",
            registry=registry,
        )  # fmt: skip
        self.internal_errors = Counter(
            "toolscore_internal_errors",
            "Requests whose spans an internal error stopped (the server goes on).",
            registry=registry,
        )
        self._finding_labels: dict[tuple[str, str, str], Any] = {}
        self._closed_labels: dict[str, Any] = {}

    def finding(self, check: str, kind: str, severity: str, latency: float) -> None:
        key = (check, kind, severity)
        child = self._finding_labels.get(key)
        if child is None:
            child = self._finding_labels[key] = self.findings.labels(*key)
        child.inc()
        self.finding_seconds.observe(latency)

    def closed(self, reason: str, verdict: Verdict) -> None:
        child = self._closed_labels.get(reason)
        if child is None:
            child = self._closed_labels[reason] = self.sessions_closed.labels(reason)
        child.inc()
        self.sessions_open.dec()
        if verdict.score is not None:
            self.score.observe(verdict.score)
        word = "unscored" if verdict.passed is None else ("pass" if verdict.passed else "fail")
        self.sessions_judged.labels(word).inc()
        for kind, count in verdict.violations.to_json().items():
            if count:
                self.violations.labels(kind).inc(count)

    def exposition(self) -> bytes:
        """The text exposition of every metric."""
        data: bytes = generate_latest(self.registry)
        return data
