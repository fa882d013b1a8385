"""Sessions of ``toolscore serve``: spans grouped by trace (or by an attribute), each session
read by its own OTel reader and evaluated through the session core (:mod:`toolscore.sessions`).

A session is one agent run: the spans of one trace id, or, with ``key`` set (for example
``gen_ai.conversation.id``), of one value of that span (or resource) attribute. A span
without the attribute joins the session its trace was last seen in, else its trace's own.

Each session holds the OTel reader (:class:`~toolscore.sources.otel.OTelDialect`): the spans
of each request are read in start-time order, and the calls they complete are fed to its
pipeline as one :class:`~toolscore.calls.Batch`, so every check and hard rule fires the moment
the span of its call arrives. A chat span's call waits for its result (a later chat span, or
its tool span) in the reader, as in a file. A session's gold is named by the session's key,
or by the ``gold_by`` attribute of its first span.

Here a session also closes (``ended``) ``grace`` seconds after its root span arrives (a span
without a parent ends its trace; spans arriving within the grace still count); the core closes
it when ``idle``, ``evicted`` (past ``max_sessions`` or ``max_pending``) or at ``shutdown``.
Spans of a session closed recently are counted as late and dropped. Nothing here does I/O.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

from .. import sessions as core
from ..calls import Batch, Finding, ToolCall
from ..errors import ToolscoreError
from ..sources.otel import OTelDialect
from .otlp import SpanIn

if TYPE_CHECKING:
    from ..dataset.gold import GoldLookup
    from ..hardrules.spec import RuleSet
    from ..result import EvaluationResult

__all__ = ["Limits", "Session", "SessionChecks", "SessionSink", "Sessions"]


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


class SessionChecks(core.SessionChecks):
    """The core's checks (no trajectory steps kept), with each session's gold.

    Args:
        gold: the gold lookup (one gold for all, keyed, or a directory); None: checks only.
        gold_by: the span or resource attribute whose value names a session's gold (read on
            the session's first span); None: the session's key.
        rules, weights, strict: as for :class:`toolscore.sessions.SessionChecks`.
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
        super().__init__(rules=rules, weights=weights, strict=strict, trajectory=False)
        self.gold = gold
        self.gold_by = gold_by
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


class Session(core.Session):
    """One open session: the core's, with its reader and what the outputs need to know."""

    __slots__ = ("arrival", "dialect", "first", "root", "span_of", "task", "tools")

    def __init__(self, key: str, checks: SessionChecks, first: SpanIn, now: float) -> None:
        self.task, gold = checks.gold_for(key, first)
        """The gold's name (see :meth:`SessionChecks.gold_for`)."""
        super().__init__(key, checks, gold, now)
        self.dialect = OTelDialect(key)
        self.arrival = now
        """When the request being read arrived (``time.perf_counter()``)."""
        self.tools: Counter[str] = Counter()
        self.first: tuple[str, str] | None = None
        """(trace id, span id) of the first span read."""
        self.root: tuple[str, str] | None = None
        """(trace id, span id) of the root span, once it came."""
        self.span_of: dict[int, tuple[str, str]] = {}
        """The span of each call not yet released to the checks (for the evaluation events)."""

    def read(self, spans: list[SpanIn], arrival: float) -> Batch:
        """Read ``spans`` (one request's) in start-time order: the calls they read and
        complete."""
        if len(spans) > 1:
            spans.sort(key=attrgetter("start"))
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
        if out.calls or out.done:
            self.arrival = arrival
        return out

    def flush(self) -> Batch:
        """Calls still waiting for their result complete without one."""
        out = Batch()
        self.dialect.close(out)
        return out


class Sessions(core.Sessions[Session]):
    """The open sessions of a server, whose events go to ``sink``.

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
        super().__init__(
            self._start, idle=limits.idle, max_open=limits.max_sessions,
            max_pending=limits.max_pending, recent=limits.recent, clock=clock,
        )  # fmt: skip
        self.limits = limits
        self.checks = checks
        self.sink = sink
        self.closing: dict[str, float] = {}
        """Sessions whose root span came: when they close."""
        self._traces: OrderedDict[str, str] = OrderedDict()
        """Trace id -> session key, when sessions are grouped by an attribute."""

    def _start(self, key: str, first: SpanIn, now: float) -> Session:
        session = Session(key, self.checks, first, now)
        self.sink.opened(session)
        return session

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
        for span in spans:
            key = self._key(span)
            group = groups.get(key)
            if group is None:
                groups[key] = [span]
            else:
                group.append(span)
        now = self.clock()
        sink = self.sink
        for key, group in groups.items():
            session, _ = self.enter(key, group[0], now, len(group))
            if session is None:
                continue
            batch = session.read(group, arrival)
            found = self.feed(session, batch, len(session.dialect.pending))
            if found:
                sink.findings(session, found)
            for call in batch.done:
                session.span_of.pop(call.index, None)
            if batch.calls:
                sink.calls(session, batch.calls)
            if self.limits.key is None and key not in self.closing:
                if any(span.root for span in group):
                    self.closing[key] = now + self.limits.grace
        self.bound()
        if self.closing and self.limits.grace <= 0:
            self.sweep(now)

    def close(self, key: str, why: str) -> core.ClosedSession:
        """Close one open session and hand its end to the sink."""
        session = self.open[key]
        self.closing.pop(key, None)
        done = super().close(key, why)
        if done.findings:
            self.sink.findings(session, done.findings)
        self.sink.closed(session, done.result, why)
        return done

    def close_all(self, why: str = "shutdown") -> list[core.ClosedSession]:
        return super().close_all(why)

    def sweep(self, now: float | None = None) -> int:
        """Close the sessions whose grace or idle time is over; returns how many."""
        now = self.clock() if now is None else now
        closed = 0
        for key, at in list(self.closing.items()):
            if at <= now and key in self.open:
                self.close(key, "ended")
                closed += 1
        return closed + len(self.expire(now))

    def stats(self) -> dict[str, Any]:
        """Counters for ``/healthz``."""
        return {
            "open": len(self.open),
            "pending_calls": self.pending,
            "late_spans": self.late,
            "evicted": self.evicted,
        }
