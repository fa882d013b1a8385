"""Live sessions: one stream of interleaved traces, a session each, as calls arrive.

:func:`watch_sessions` is :func:`toolscore.live.watch` for a stream whose calls name their
trace (``watch --trace-key``): each call goes to its session's pipeline
(:class:`TraceSessions`, on the session core of :mod:`toolscore.sessions`), and the run hands
over each session's findings as they happen and each closed session's result and verdict.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._args import check_rules
from .api import GoldInput, RulesInput, TraceSource, read_gold, read_rules
from .calls import Batch, ToolCall
from .live import _live_source, _Reading, plain_errors
from .result import normalize_weights
from .sessions import ClosedSession, Opener, Session, SessionChecks, SessionFindings, Sessions
from .verdict import PassCriterion

__all__ = ["SessionEvent", "SessionsRun", "TraceSessions", "session_opener", "watch_sessions"]


SessionEvent = SessionFindings | ClosedSession
"""What :func:`watch_sessions` hands over: a session's new findings, or a closed session."""


def session_opener(
    *,
    gold: Any = None,
    gold_for: Callable[[str], Any] | None = None,
    weights: Mapping[str, float] | None = None,
    rules: Any = None,
    strict: bool = False,
) -> Opener[Session]:
    """Opens each session with ``gold`` (or ``gold_for(session)``: a keyed gold's entry; None
    there means no gold, checks only) and the same rules (parsed once, a
    :class:`~toolscore.hardrules.spec.RuleSet`)."""
    checks = SessionChecks(rules=rules, weights=normalize_weights(weights), strict=strict)

    def opener(key: str, first: Any, now: float) -> Session:
        return Session(key, checks, gold_for(key) if gold_for is not None else gold, now)

    return opener


class TraceSessions(Sessions[Session]):
    """The sessions of ``watch --trace-key``: each call goes to the session its ``key`` field
    names (as text; calls naming none to the session ``""``), numbered within it."""

    def __init__(self, key: str, opener: Opener[Session], **options: Any) -> None:
        super().__init__(opener, **options)
        self.key = key
        self.unnamed = 0
        """Calls that named no session."""

    def route(self, batch: Batch) -> tuple[list[SessionFindings], list[ClosedSession]]:
        """Route ``batch``'s calls; returns each session's new findings (in arrival order)
        and the sessions closed to make room."""
        now = self.clock()
        by_session: dict[str, list[ToolCall]] = {}
        for call in batch.done:
            value = call.metadata.get(self.key) if call.metadata else None
            self.unnamed += value is None
            by_session.setdefault("" if value is None else str(value), []).append(call)
        out: list[SessionFindings] = []
        closed: list[ClosedSession] = []
        if batch.findings:  # the reader's own (a malformed line): no session to name
            out.append(SessionFindings("", list(batch.findings)))
        for key, calls in by_session.items():
            session, made_room = self.enter(key, None, now)
            closed += made_room
            if session is None:
                continue
            numbered = [replace(c, index=session.calls + i) for i, c in enumerate(calls)]
            found = self.feed(session, Batch(calls=numbered, done=numbered))
            if found:
                out.append(SessionFindings(key, found))
        return out, closed


class SessionsRun(_Reading):
    """A sessions watch in progress: iterate it for :data:`SessionEvent` values.

    Made by :func:`watch_sessions`. ``sessions`` is the router (open sessions, counts);
    :meth:`stop` stops reading, closes every open session and ends the iteration.
    """

    def __init__(
        self,
        sessions: TraceSessions,
        receive: MemoryObjectReceiveStream[list[SessionEvent]],
        send: MemoryObjectSendStream[list[SessionEvent]],
    ) -> None:
        super().__init__()
        self.sessions = sessions
        self._receive = receive
        self._send = send
        self._buf: list[SessionEvent] = []

    def __aiter__(self) -> SessionsRun:
        return self

    async def __anext__(self) -> SessionEvent:
        while not self._buf:
            try:
                self._buf = list(await self._receive.receive())
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                if self._failure is not None:
                    failure, self._failure = self._failure, None
                    raise failure from None
                raise StopAsyncIteration from None
        return self._buf.pop(0)

    async def _produce(self, source: TraceSource, format: str) -> None:
        async with self._reading(source, format, one_trace=False) as batches:
            async for batch in batches:
                found, closed = self.sessions.route(batch)
                events: list[SessionEvent] = [*closed, *found]
                if events:
                    await self._send.send(events)
                if batch.error is not None:
                    raise batch.error
            await self._send.send(list(self.sessions.close_all()))

    async def _expire(self, every: float) -> None:
        while True:
            await anyio.sleep(every)
            closed = self.sessions.expire()
            if closed:
                await self._send.send(list(closed))


@asynccontextmanager
async def watch_sessions(
    source: TraceSource,
    *,
    trace_key: str,
    gold: GoldInput | None = None,
    gold_for: Callable[[str], Any] | None = None,
    forbidden: RulesInput = None,
    rules: RulesInput = None,
    format: str = "auto",
    weights: Mapping[str, float] | None = None,
    strict: bool = False,
    idle: float | None = None,
    max_open: int = 10_000,
    criterion: PassCriterion | None = None,
    buffer: int = 64,
) -> AsyncIterator[SessionsRun]:
    """Evaluate a stream of interleaved traces live, one session per ``trace_key`` value.

    Each session has its own pipeline (rules, budgets and score per session); iterate the run
    for :class:`~toolscore.sessions.SessionFindings` (each finding as its call is read) and
    :class:`~toolscore.sessions.ClosedSession` (its result and verdict, when the stream ends,
    after ``idle`` seconds without a call, or when more than ``max_open`` are open).

    Args:
        source: as for :func:`watch`.
        trace_key: the call field naming the session (``trace_id``, ``session_id``...).
        gold: the gold of every session; or ``gold_for(session)`` a session's own (None:
            checks only for that session).
        forbidden, rules, format, weights, strict: as for :func:`watch` (the rules are read
            once, for every session).
        idle: seconds without a call after which a session is closed.
        max_open: sessions kept open at most (the oldest is closed past it).
        criterion: what counts as a pass in each session's verdict.
        buffer: event lists the producer may run ahead of the consumer.
    """
    ruleset = read_rules(check_rules(forbidden, "forbidden"), check_rules(rules, "rules"))
    fixed = None if gold is None else read_gold(gold)
    opener = session_opener(
        gold=fixed, gold_for=gold_for, weights=weights, rules=ruleset, strict=strict
    )
    sessions = TraceSessions(trace_key, opener, idle=idle, max_open=max_open, criterion=criterion)
    send, receive = anyio.create_memory_object_stream[list[SessionEvent]](buffer)
    run = SessionsRun(sessions, receive, send)
    try:
        with plain_errors():
            async with anyio.create_task_group() as tg:
                tg.start_soon(run._produce, _live_source(source), format)
                if idle is not None:
                    tg.start_soon(run._expire, max(min(idle / 4, 1.0), 0.01))
                try:
                    yield run
                finally:
                    tg.cancel_scope.cancel()
    finally:
        send.close()
        receive.close()
