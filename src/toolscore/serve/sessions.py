"""Sessions: spans grouped by trace (or by an attribute), each evaluated by its own pipeline.

A session is one agent run: the spans of one trace id, or, with ``key`` set (for example
``gen_ai.conversation.id``), of one value of that span (or resource) attribute. A span
without the attribute joins the session its trace was last seen in, else its trace's own.

Each session holds the OTel reader (:class:`~toolscore.sources.otel.OTelDialect`) and the
project's one pipeline (:func:`toolscore.api.builtin_checks` into a
:class:`~toolscore.pipeline.Pipeline`): the spans of each request are read in start-time
order, and the calls they complete are fed as one :class:`~toolscore.calls.Batch`, so every
check and hard rule fires the moment the span of its call arrives. A chat span's call waits
for its result (a later chat span, or its tool span) in the reader, as in a file.

A session closes ``grace`` seconds after its root span arrives (a span without a parent ends
its trace; spans arriving within the grace still count), after ``idle`` seconds without a
span, when evicted, or at shutdown. Closing finishes the checks, reduces the states into the
session's result (:func:`toolscore.api.pipeline_result`; without gold, checks only: no
score) and hands it to the sink. Spans of a session closed recently are counted as late and
dropped rather than opening a second session.

Memory is bounded: at most ``max_sessions`` open, and ``max_pending`` calls waiting for their
result over all sessions; past either, the session idle longest is closed first (an
eviction, counted). Nothing here does I/O or awaits.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..api import builtin_checks, pipeline_result
from ..calls import Batch, Finding, ToolCall
from ..errors import ToolscoreError
from ..pipeline import Pipeline, feed_sync, finish_sync
from ..sources.otel import OTelDialect
from .otlp import SpanIn

if TYPE_CHECKING:
    from ..dataset.gold import GoldLookup
    from ..hardrules.spec import RuleSet
    from ..result import EvaluationResult

__all__ = ["CLOSE_REASONS", "Limits", "Session", "SessionChecks", "SessionSink", "Sessions"]

CLOSE_REASONS = ("ended", "idle", "evicted", "shutdown")
"""Why a session closed: its root span arrived (and the grace passed), it was idle, it was
evicted to bound memory, or the server stopped."""


@dataclass(frozen=True)
class Limits:
    """How sessions are grouped, closed and bounded."""

    key: str | None = None
    """The attribute that groups spans into sessions; ``None``: the trace id."""
    idle: float = 30.0
    """Seconds without a span after which a session closes."""
    grace: float = 1.0
    """Seconds after the root span's arrival during which late spans still count."""
    max_sessions: int = 20_000
    """Open sessions at most; a new one past it evicts the oldest."""
    max_pending: int = 100_000
    """Calls waiting for their result, over all sessions, at most."""
    recent: int = 20_000
    """Closed sessions remembered, so that their late spans are dropped, not a new session."""


class SessionSink(Protocol):
    """Where a session's events go (:class:`~toolscore.serve.outputs.Outputs`)."""

    def opened(self, session: Session) -> None: ...
    def calls(self, session: Session, calls: list[ToolCall]) -> None: ...
    def findings(self, session: Session, found: list[Finding]) -> None: ...
    def closed(self, session: Session, result: EvaluationResult, reason: str) -> None: ...


class SessionChecks:
    """What every session is evaluated with: the rules, weights and its gold.

    Args:
        gold: the gold lookup (one gold for all, keyed, or a directory); None: checks only.
        gold_by: the span or resource attribute whose value names a session's gold (read on
            the session's first span); None: the session's key.
        rules: the forbidden and hard rules, read once.
        weights: normalized weights.
        strict: compare argument types exactly.
    """

    def __init__(
        self,
        *,
        gold: GoldLookup | None,
        gold_by: str | None,
        rules: RuleSet | None,
        weights: dict[str, float],
        strict: bool,
    ) -> None:
        self.gold = gold
        self.gold_by = gold_by
        self.rules = rules
        self.weights = weights
        self.strict = strict
        self._plans: dict[int, tuple[list[ToolCall], Any]] = {}
        self.gold_errors = 0
        """Sessions whose gold file could not be read (evaluated without gold)."""

    def gold_for(self, key: str, first: SpanIn) -> tuple[str, list[ToolCall] | None]:
        """The gold's name for a session, and its calls (None: the session has no gold)."""
        name = key
        if self.gold_by is not None:
            value = first.attrs.get(self.gold_by, first.resource.get(self.gold_by))
            name = "" if value is None else str(value)
        if self.gold is None or not name:
            return name, None
        try:
            return name, self.gold.get(name, name)
        except ToolscoreError:
            self.gold_errors += 1
            return name, None

    def pipeline(self, gold: list[ToolCall]) -> Pipeline:
        """A session's pipeline: the built-in checks (and hard rules) over ``gold``, reading
        no trajectory steps (the score, the verdict and the record do not read them), so a
        session's memory does not grow with its calls."""
        cached = self._plans.get(id(gold))
        plan = cached[1] if cached is not None and cached[0] is gold else None
        checks = builtin_checks(
            gold, self.rules, strict=self.strict, keep_details=False, plan=plan, trajectory=False
        )
        if plan is None:
            # one gold's plan (its calls' signatures...), shared by its sessions as by the
            # traces of a dataset; the last few golds' kept
            self._plans[id(gold)] = (gold, getattr(checks[0], "plan", None))
            if len(self._plans) > 64:
                del self._plans[next(iter(self._plans))]
        return Pipeline(checks)


class Session:
    """One open session: its reader, its pipeline, and what the outputs need to know."""

    __slots__ = (
        "arrival",
        "calls",
        "dialect",
        "first",
        "gold",
        "has_gold",
        "key",
        "last",
        "opened",
        "pending",
        "pipeline",
        "root",
        "span_of",
        "spans",
        "task",
        "tools",
    )

    def __init__(
        self, key: str, task: str, pipeline: Pipeline, gold: list[ToolCall] | None, now: float
    ) -> None:
        self.key = key
        self.task = task
        """The gold's name (see :meth:`SessionChecks.gold_for`)."""
        self.pipeline = pipeline
        self.gold = gold or []
        self.has_gold = gold is not None
        self.dialect = OTelDialect(key)
        self.opened = self.last = now
        self.arrival = now
        """When the request being read arrived (``time.perf_counter()``)."""
        self.spans = 0
        self.calls = 0
        self.pending = 0
        """Calls waiting for their result."""
        self.tools: Counter[str] = Counter()
        self.first: tuple[str, str] | None = None
        """(trace id, span id) of the first span read."""
        self.root: tuple[str, str] | None = None
        """(trace id, span id) of the root span, once it came."""
        self.span_of: dict[int, tuple[str, str]] = {}
        """The span of each call not yet released to the checks (for the evaluation events)."""

    def feed(self, spans: list[SpanIn], arrival: float) -> list[ToolCall]:
        """Read ``spans`` (one request's, in start-time order) and run the calls they
        complete through the checks; returns the new calls."""
        if len(spans) > 1:
            spans.sort(key=_start)
        out = Batch()
        dialect = self.dialect
        span_of = self.span_of
        for span in spans:
            where = (span.trace_id, span.span_id)
            if self.first is None:
                self.first = where
            if span.root:
                self.root = where
            before = len(out.calls)
            dialect.span(span.fields, span.attrs, None, out)
            for call in out.calls[before:]:
                span_of[call.index] = where
                self.tools[call.tool] += 1
        self.spans += len(spans)
        self.calls += len(out.calls)
        self.pending = len(dialect.pending)
        if out.calls or out.done:
            self.arrival = arrival
            feed_sync(self.pipeline, [out])
            for call in out.done:
                span_of.pop(call.index, None)
        return out.calls

    def close(self, weights: dict[str, float]) -> EvaluationResult:
        """End of the session: calls still waiting complete without a result, the checks
        finish, and their states are reduced into the session's result."""
        out = Batch()
        self.dialect.close(out)
        self.pending = 0
        if out.done:
            feed_sync(self.pipeline, [out])
        finish_sync(self.pipeline)
        return pipeline_result(
            self.pipeline, self.gold, weights, include_extras=True, has_gold=self.has_gold
        )


def _start(span: SpanIn) -> int:
    return span.start


class Sessions:
    """The open sessions, by key, oldest activity first.

    Args:
        limits: grouping, closing and bounds.
        checks: what each session is evaluated with.
        sink: receives each session's events.
        clock: seconds, monotonic (a test may drive it).
    """

    def __init__(
        self,
        limits: Limits,
        checks: SessionChecks,
        sink: SessionSink,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.checks = checks
        self.sink = sink
        self.clock = clock
        self.open: OrderedDict[str, Session] = OrderedDict()
        self.closing: dict[str, float] = {}
        """Sessions whose root span came: when they close."""
        self.pending = 0
        """Calls waiting for their result, over all open sessions."""
        self.late = 0
        """Spans dropped because their session had closed."""
        self.evicted = 0
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._traces: OrderedDict[str, str] = OrderedDict()
        """Trace id -> session key, when sessions are grouped by an attribute."""

    def __len__(self) -> int:
        return len(self.open)

    def _key(self, span: SpanIn) -> str:
        attr = self.limits.key
        if attr is None:
            return span.trace_id
        value = span.attrs.get(attr, span.resource.get(attr))
        traces = self._traces
        if value is None or value == "":
            return traces.get(span.trace_id, span.trace_id)
        key = str(value)
        if traces.get(span.trace_id) != key:
            traces[span.trace_id] = key
            if len(traces) > self.limits.recent:
                traces.popitem(last=False)
        return key

    def add(self, spans: list[SpanIn], arrival: float) -> None:
        """Read one request's spans into their sessions (opening those that are new)."""
        groups: dict[str, list[SpanIn]] = {}
        recent = self._recent
        for span in spans:
            key = self._key(span)
            if key in recent:
                self.late += 1
                continue
            group = groups.get(key)
            if group is None:
                groups[key] = [span]
            else:
                group.append(span)
        now = self.clock()
        for key, group in groups.items():
            session = self.open.get(key)
            if session is None:
                session = self._open(key, group[0], now)
            else:
                self.open.move_to_end(key)
            session.last = now
            before = session.pending
            calls = session.feed(group, arrival)
            self.pending += session.pending - before
            if calls:
                self.sink.calls(session, calls)
            if self.limits.key is None and key not in self.closing:
                if any(span.root for span in group):
                    self.closing[key] = now + self.limits.grace
        while self.pending > self.limits.max_pending and self.open:
            self._evict()
        if self.closing and self.limits.grace <= 0:
            self.sweep(now)

    def _open(self, key: str, first: SpanIn, now: float) -> Session:
        while len(self.open) >= self.limits.max_sessions:
            self._evict()
        task, gold = self.checks.gold_for(key, first)
        pipeline = self.checks.pipeline(gold or [])
        session = Session(key, task, pipeline, gold, now)
        sink = self.sink

        def found(findings: list[Finding]) -> None:
            sink.findings(session, findings)

        pipeline.on_finding = found
        self.open[key] = session
        sink.opened(session)
        return session

    def _evict(self) -> None:
        key = next(iter(self.open))
        self.evicted += 1
        self.close(key, "evicted")

    def close(self, key: str, reason: str) -> None:
        """Close one open session (see the module's doc)."""
        session = self.open.pop(key)
        self.closing.pop(key, None)
        self.pending -= session.pending
        recent = self._recent
        recent[key] = None
        if len(recent) > self.limits.recent:
            recent.popitem(last=False)
        result = session.close(self.checks.weights)
        self.sink.closed(session, result, reason)

    def sweep(self, now: float | None = None) -> int:
        """Close the sessions whose grace or idle time is over; returns how many."""
        now = self.clock() if now is None else now
        closed = 0
        if self.closing:
            for key, at in list(self.closing.items()):
                if at <= now and key in self.open:
                    self.close(key, "ended")
                    closed += 1
        idle = self.limits.idle
        while self.open:
            key, session = next(iter(self.open.items()))
            if now - session.last < idle:
                break
            self.close(key, "idle")
            closed += 1
        return closed

    def close_all(self, reason: str = "shutdown") -> None:
        """Close every open session, oldest first."""
        while self.open:
            self.close(next(iter(self.open)), reason)

    def stats(self) -> dict[str, Any]:
        """Counters for ``/healthz``."""
        return {
            "open": len(self.open),
            "pending_calls": self.pending,
            "late_spans": self.late,
            "evicted": self.evicted,
        }
