"""Sessions: one stream, many traces, each evaluated on its own as its input arrives.

The one core of ``toolscore watch --trace-key`` (calls naming their trace, routed in
:mod:`toolscore.live`) and ``toolscore serve`` (spans, read in :mod:`toolscore.serve.sessions`).
A :class:`Session` has a pipeline of its own, built by :class:`SessionChecks` (the built-in
checks over its gold, with the rules and the gold's own merged by
:func:`toolscore.api.read_rules`), so rules, budgets and scores are per session.

:class:`Sessions` keeps the open sessions, oldest activity first. One closes when its door says
(end of input, a root span's grace), after ``idle`` seconds without input, or, oldest first,
when more than ``max_open`` are open or ``max_pending`` calls wait over all (an eviction,
counted). Closing finishes its checks, reduces their states
(:func:`toolscore.api.pipeline_result`; without gold: checks only, no score) and judges the
result (:meth:`~toolscore.result.EvaluationResult.verdict`). Input for one of the last
``recent`` sessions closed is counted as late and dropped. Nothing here does I/O or awaits.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .api import GoldInput, builtin_checks, pipeline_result, read_gold, read_rules
from .calls import Batch, Finding, ToolCall
from .hardrules.spec import RuleSet
from .pipeline import Pipeline
from .result import EvaluationResult, normalize_weights
from .verdict import PassCriterion, Verdict

__all__ = ["ClosedSession", "Opener", "Session", "SessionChecks", "SessionFindings", "Sessions"]


class SessionChecks:
    """What every session is evaluated with: the rules, the weights and the options.

    Args:
        rules: the forbidden and hard rules, read once (a session's gold adds its own).
        weights: normalized score weights (None: the defaults).
        strict: compare argument types exactly.
        trajectory: keep trajectory steps (False: a session's memory does not grow with its
            calls; its result has no ``trajectory_metrics`` steps).
    """

    def __init__(
        self,
        *,
        rules: RuleSet | None = None,
        weights: dict[str, float] | None = None,
        strict: bool = False,
        trajectory: bool = True,
    ) -> None:
        self.rules = rules
        self.weights = normalize_weights(None) if weights is None else weights
        self.strict = strict
        self.trajectory = trajectory
        self._golds: OrderedDict[int, tuple[Any, list[ToolCall], RuleSet | None]] = OrderedDict()

    def pipeline(self, gold: GoldInput | None) -> tuple[Pipeline, list[ToolCall]]:
        """A session's pipeline over ``gold`` (None: checks only) and its gold calls.

        One gold's calls and rules are read once and shared by its sessions (and so is its
        plan, :func:`~toolscore.checks.expected.plans.plan_for`); the last 64 golds' are
        kept."""
        key = id(gold)
        cached = self._golds.get(key)
        if cached is None or cached[0] is not gold:
            calls = [] if gold is None else read_gold(gold)
            cached = self._golds[key] = (gold, calls, read_rules(self.rules, None, calls))
            if len(self._golds) > 64:
                self._golds.popitem(last=False)
        _, calls, rules = cached
        checks = builtin_checks(
            calls, rules, strict=self.strict, keep_details=False, weights=self.weights,
            trajectory=self.trajectory,
        )  # fmt: skip
        return Pipeline(checks), calls


class Session:
    """One open session: its pipeline and counters (a door may add its own state)."""

    __slots__ = (
        "calls", "gold", "has_gold", "key", "last", "pending", "pipeline", "weights",
    )  # fmt: skip

    def __init__(self, key: str, checks: SessionChecks, gold: GoldInput | None, now: float):
        self.key = key
        self.pipeline, self.gold = checks.pipeline(gold)
        self.has_gold = gold is not None
        self.weights = checks.weights
        self.last = now
        self.calls = 0
        """Calls read (also those whose result is still to come)."""
        self.pending = 0
        """Calls waiting for their result."""

    def flush(self) -> Batch | None:
        """At close: the calls the door still holds, complete without a result."""
        return None


S = TypeVar("S", bound=Session)
Opener = Callable[[str, Any, float], S]
"""Opens a session: its key, the door's first input for it (a span, a call), and the time."""


@dataclass(frozen=True)
class SessionFindings:
    """Findings of one session, as they happened (call indices are the session's own)."""

    session: str
    findings: list[Finding]


@dataclass(frozen=True)
class ClosedSession:
    """A session that ended, with its result and verdict."""

    session: str
    result: EvaluationResult
    verdict: Verdict
    findings: list[Finding]
    """The findings only the whole session shows (at its end)."""
    why: str
    """Why it closed: ``idle``, ``evicted``, or the door's own reasons (the end of input,
    a root span, a shutdown)."""
    state: Session
    """The session itself (its counters, and the door's state)."""


class Sessions(Generic[S]):
    """The open sessions, by key, oldest activity first (see the module docstring).

    Args:
        opener: opens a new session.
        idle: seconds without input after which :meth:`expire` closes a session (None: never).
        max_open: sessions open at most; a new one past it evicts the oldest.
        max_pending: calls waiting for their result, over all sessions, at most (None: no cap).
        recent: closed sessions remembered, so that their late input is dropped.
        criterion: what counts as a pass in each session's verdict.
        clock: seconds, monotonic (a test may drive it).
    """

    def __init__(
        self,
        opener: Opener[S],
        *,
        idle: float | None = None,
        max_open: int = 10_000,
        max_pending: int | None = None,
        recent: int = 0,
        criterion: PassCriterion | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {max_open}")
        self.idle = idle
        self.max_open = max_open
        self.max_pending = max_pending
        self.recent = recent
        self.criterion = criterion
        self.clock = clock
        self._opener = opener
        self.open: OrderedDict[str, S] = OrderedDict()
        self.opened = 0
        """Sessions opened so far."""
        self.evicted = 0
        """Sessions closed early to bound memory."""
        self.pending = 0
        """Calls waiting for their result, over all open sessions."""
        self.late = 0
        """Inputs dropped because their session had closed."""
        self._recent: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self.open)

    def enter(
        self, key: str, first: Any, now: float, inputs: int = 1
    ) -> tuple[S | None, list[ClosedSession]]:
        """The open session ``key``, marked active at ``now`` (opened for ``first`` if new,
        the oldest closed first past ``max_open``), and the sessions closed to make room;
        None when ``key`` closed recently (its ``inputs`` are counted as late)."""
        if key in self._recent:
            self.late += inputs
            return None, []
        session = self.open.get(key)
        closed: list[ClosedSession] = []
        if session is None:
            while len(self.open) >= self.max_open:
                closed.append(self._evict())
            session = self.open[key] = self._opener(key, first, now)
            self.opened += 1
        else:
            self.open.move_to_end(key)
        session.last = now
        return session, closed

    def feed(self, session: S, batch: Batch, pending: int = 0) -> list[Finding]:
        """Run ``batch`` through ``session``'s checks (``pending``: its calls now waiting for
        a result, see :meth:`bound`); returns the findings."""
        session.calls += len(batch.calls)
        self.pending += pending - session.pending
        session.pending = pending
        return session.pipeline.process(batch) if (batch.calls or batch.done) else []

    def bound(self) -> list[ClosedSession]:
        """Close sessions, oldest first, while more than ``max_pending`` calls wait."""
        closed: list[ClosedSession] = []
        while self.max_pending is not None and self.pending > self.max_pending and self.open:
            closed.append(self._evict())
        return closed

    def expire(self, now: float | None = None) -> list[ClosedSession]:
        """Close the sessions idle for ``idle`` seconds or more, oldest first."""
        idle = self.idle
        if idle is None:
            return []
        now = self.clock() if now is None else now
        closed: list[ClosedSession] = []
        while self.open:
            key, session = next(iter(self.open.items()))
            if now - session.last < idle:
                break
            closed.append(self.close(key, "idle"))
        return closed

    def close_all(self, why: str = "end") -> list[ClosedSession]:
        """Close every open session, oldest first."""
        return [self.close(key, why) for key in list(self.open)]

    def close(self, key: str, why: str) -> ClosedSession:
        """Close the open session ``key``: the calls its door holds complete without a
        result, its checks finish, their states are reduced and judged."""
        session = self.open.pop(key)
        self.pending -= session.pending
        session.pending = 0
        if self.recent:
            self._recent[key] = None
            if len(self._recent) > self.recent:
                self._recent.popitem(last=False)
        pipeline = session.pipeline
        held = session.flush()
        found = pipeline.process(held) if held is not None and held.done else []
        found += pipeline.finish()
        result = pipeline_result(
            pipeline, session.gold, session.weights, include_extras=True,
            has_gold=session.has_gold,
        )  # fmt: skip
        return ClosedSession(key, result, result.verdict(self.criterion), found, why, session)

    def _evict(self) -> ClosedSession:
        self.evicted += 1
        return self.close(next(iter(self.open)), "evicted")
