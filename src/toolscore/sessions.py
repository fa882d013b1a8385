"""Sessions: one stream, many traces, each evaluated on its own as its calls arrive.

A live stream (``toolscore watch --trace-key trace_id``, an agent fleet's log) interleaves the
calls of several traces. :class:`Sessions` routes each call to the session its id names, and
each session is a pipeline of its own (built by :func:`toolscore.api.open_run`: the same
checks, rules and reducer as every other door), so rules, budgets (``max_calls``) and scores
are per session, and a finding carries its session. A session closes when the stream ends, or
after ``idle`` seconds without a call, or (oldest first) when more than ``max_open`` are
open; closing finishes its checks and gives its result and verdict.

The class does no I/O and knows no event loop: a driver feeds it batches and asks it to
expire idle sessions (:func:`toolscore.live.watch_sessions` is the async one).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .api import open_run, pipeline_result
from .calls import Batch, Finding, ToolCall
from .pipeline import Pipeline
from .result import EvaluationResult
from .verdict import PassCriterion, Verdict, judge

__all__ = ["ClosedSession", "SessionFindings", "Sessions", "call_session", "session_opener"]

Opener = Callable[[str], tuple[Pipeline, list[ToolCall], dict[str, float], bool]]
"""Builds a session's pipeline: ``(pipeline, gold, weights, has_gold)`` for a session id."""


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
    """``end`` (the stream ended), ``idle`` or ``evicted`` (too many open)."""


def call_session(call: ToolCall, key: str) -> str | None:
    """The session id a call names under ``key`` (as text), or None."""
    value = call.metadata.get(key) if call.metadata else None
    return None if value is None else str(value)


@dataclass
class _Open:
    pipeline: Pipeline
    gold: list[ToolCall]
    weights: dict[str, float]
    has_gold: bool
    calls: int = 0
    last: float = 0.0


class Sessions:
    """Routes calls to their session's pipeline (see the module docstring).

    Args:
        key: the call field naming the session (``trace_id``, ``session_id``...).
        opener: builds a new session's pipeline.
        idle: seconds without a call after which :meth:`expire` closes a session (None: never).
        max_open: sessions kept open at most; past it the oldest is closed (``evicted``).
        criterion: what counts as a pass in each session's verdict.
        clock: the time source (for tests).
    """

    def __init__(
        self,
        key: str,
        opener: Opener,
        *,
        idle: float | None = None,
        max_open: int = 10_000,
        criterion: PassCriterion | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {max_open}")
        self.key = key
        self.idle = idle
        self.max_open = max_open
        self.criterion = criterion
        self._opener = opener
        self._clock = clock
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self.opened = 0
        """Sessions opened so far."""
        self.evicted = 0
        """Sessions closed because too many were open."""
        self.unnamed = 0
        """Calls that named no session (they go to the session ``""``)."""

    @property
    def open_count(self) -> int:
        """Sessions open now."""
        return len(self._open)

    def __contains__(self, session: str) -> bool:
        return session in self._open

    def calls_read(self, session: str) -> int:
        """Calls the open ``session`` has read."""
        return self._open[session].calls

    def feed(self, batch: Batch) -> tuple[list[SessionFindings], list[ClosedSession]]:
        """Route ``batch``'s calls; returns each session's new findings (in arrival order)
        and the sessions closed to make room."""
        now = self._clock()
        by_session: OrderedDict[str, list[ToolCall]] = OrderedDict()
        for call in batch.done:
            session = call_session(call, self.key)
            if session is None:
                self.unnamed += 1
                session = ""
            by_session.setdefault(session, []).append(call)
        out: list[SessionFindings] = []
        closed: list[ClosedSession] = []
        if batch.findings:  # the reader's own (a malformed line): no session to name
            out.append(SessionFindings("", list(batch.findings)))
        for session, calls in by_session.items():
            state = self._open.get(session)
            if state is None:
                closed += self._make_room()
                state = self._start(session)
            else:
                self._open.move_to_end(session)
            numbered = [replace(c, index=state.calls + i) for i, c in enumerate(calls)]
            state.calls += len(numbered)
            state.last = now
            found = state.pipeline.process(Batch(calls=numbered, done=numbered))
            if found:
                out.append(SessionFindings(session, found))
        return out, closed

    def expire(self) -> list[ClosedSession]:
        """Close the sessions idle for longer than ``idle`` seconds."""
        if self.idle is None:
            return []
        cutoff = self._clock() - self.idle
        stale = [s for s, state in self._open.items() if state.last <= cutoff]
        return [self._close(s, "idle") for s in stale]

    def close_all(self) -> list[ClosedSession]:
        """Close every open session (the stream ended), oldest first."""
        return [self._close(s, "end") for s in list(self._open)]

    def snapshot(self, session: str) -> EvaluationResult:
        """The result the open ``session`` would give now."""
        state = self._open[session]
        return pipeline_result(
            state.pipeline,
            state.gold,
            state.weights,
            include_extras=False,
            has_gold=state.has_gold,
            score_only=True,
        )

    def _start(self, session: str) -> _Open:
        pipeline, gold, weights, has_gold = self._opener(session)
        state = _Open(pipeline, gold, weights, has_gold, last=self._clock())
        self._open[session] = state
        self.opened += 1
        return state

    def _make_room(self) -> list[ClosedSession]:
        out: list[ClosedSession] = []
        while len(self._open) >= self.max_open:
            oldest = next(iter(self._open))
            self.evicted += 1
            out.append(self._close(oldest, "evicted"))
        return out

    def _close(self, session: str, why: str) -> ClosedSession:
        state = self._open.pop(session)
        found = state.pipeline.finish()
        result = pipeline_result(
            state.pipeline,
            state.gold,
            state.weights,
            include_extras=True,
            has_gold=state.has_gold,
        )
        return ClosedSession(session, result, judge(result, self.criterion), found, why)


def session_opener(
    *,
    gold: Any = None,
    gold_for: Callable[[str], Any] | None = None,
    weights: Mapping[str, float] | None = None,
    rules: Any = None,
    strict: bool = False,
) -> Opener:
    """An :data:`Opener` over :func:`toolscore.api.open_run`: every session gets ``gold`` (or
    ``gold_for(session)``: a keyed gold's entry; None there means no gold, checks only) and
    the same rules (parsed once, a :class:`~toolscore.hardrules.spec.RuleSet`)."""

    def opener(session: str) -> tuple[Pipeline, list[ToolCall], dict[str, float], bool]:
        mine = gold_for(session) if gold_for is not None else gold
        pipeline, calls, norm = open_run(mine, weights, rules, strict=strict, keep_calls=False)
        return pipeline, calls, norm, mine is not None

    return opener
