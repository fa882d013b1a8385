"""Sessions without a server: grouping, closing, bounds, with a clock the test drives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolscore.api import read_rules
from toolscore.calls import Finding, ToolCall
from toolscore.gold import Gold, gold_from_dicts
from toolscore.hardrules.spec import ruleset
from toolscore.result import EvaluationResult, normalize_weights
from toolscore.serve.otlp import SpanIn
from toolscore.serve.sessions import Limits, Session, SessionChecks, Sessions


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def opened(self, session: Session) -> None:
        self.events.append(("opened", session.key, None))

    def calls(self, session: Session, calls: list[ToolCall]) -> None:
        self.events.append(("calls", session.key, [c.tool for c in calls]))

    def findings(self, session: Session, found: list[Finding]) -> None:
        self.events.append(("findings", session.key, [f.kind for f in found]))

    def closed(self, session: Session, result: EvaluationResult, reason: str) -> None:
        self.events.append(("closed", session.key, (reason, result.verdict())))

    def of(self, kind: str) -> list[tuple[str, Any]]:
        return [(key, value) for k, key, value in self.events if k == kind]


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def tool(trace: str, name: str, *, root: bool = False, **attrs: Any) -> SpanIn:
    base = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps({"q": 1}),
    }
    return SpanIn(trace, "ab" * 4, root, {**base, **attrs}, {}, {"startTimeUnixNano": 1})


def root(trace: str, **attrs: Any) -> SpanIn:
    return SpanIn(trace, "cd" * 4, True, dict(attrs), {}, {"startTimeUnixNano": 0})


def make(limits: Limits, gold: list[Any] | None = None) -> tuple[Sessions, Sink, Clock]:
    """Sessions over one gold (dicts, or a :class:`~toolscore.gold.Gold` as it is)."""

    class Lookup:
        def get(self, trace_id: str | None, name: str | None) -> Any:
            return gold if gold is None or isinstance(gold, Gold) else gold_from_dicts(gold)

    checks = SessionChecks(
        gold=Lookup(),  # type: ignore[arg-type]
        gold_by=None,
        rules=read_rules([{"tool": "rm"}]),
        weights=normalize_weights(None),
        strict=False,
    )
    sink, clock = Sink(), Clock()
    return Sessions(limits, checks, sink, clock), sink, clock


def test_a_forbidden_call_is_found_as_its_span_is_read_and_the_root_closes_after_grace() -> None:
    sessions, sink, clock = make(Limits(grace=1.0), gold=[{"tool": "search", "args": {"q": 1}}])
    sessions.add([tool("t1", "search"), tool("t1", "rm")], 0.0)
    assert sink.of("findings") == [("t1", ["forbidden_call"])]
    sessions.add([root("t1")], 0.0)
    assert not sink.of("closed")
    clock.now += 0.5
    sessions.add([tool("t1", "search")], 0.0)  # late, within the grace: counted
    clock.now += 0.6
    assert sessions.sweep() == 1
    ((key, (reason, verdict)),) = sink.of("closed")
    assert key == "t1" and reason == "ended"
    assert verdict.violations.forbidden == 1 and verdict.score is not None
    sessions.add([tool("t1", "search")], 0.0)  # after closing: late, dropped
    assert sessions.late == 1 and len(sessions) == 0


def test_without_gold_a_session_is_checks_only() -> None:
    sessions, sink, _ = make(Limits())
    sessions.add([tool("t", "rm")], 0.0)
    sessions.close_all()
    ((_, (reason, verdict)),) = sink.of("closed")
    assert reason == "shutdown" and verdict.score is None and verdict.passed is None
    assert verdict.violations.forbidden == 1


def test_idle_sessions_close_oldest_first() -> None:
    sessions, sink, clock = make(Limits(idle=5.0))
    sessions.add([tool("a", "x")], 0.0)
    clock.now += 3
    sessions.add([tool("b", "x")], 0.0)
    clock.now += 3
    sessions.sweep()
    assert [k for k, _ in sink.of("closed")] == ["a"]
    clock.now += 3
    sessions.sweep()
    assert [k for k, _ in sink.of("closed")] == ["a", "b"]


def test_the_cap_on_open_sessions_evicts_the_oldest() -> None:
    sessions, sink, _ = make(Limits(max_sessions=2))
    for trace in ("a", "b", "a", "c", "d"):
        sessions.add([tool(trace, "x")], 0.0)
    assert [(k, v[0]) for k, v in sink.of("closed")] == [("b", "evicted"), ("a", "evicted")]
    assert sessions.evicted == 2 and list(sessions.open) == ["c", "d"]


def test_the_cap_on_pending_calls_evicts() -> None:
    sessions, sink, _ = make(Limits(max_pending=2))
    parts = [{"type": "tool_call", "id": f"c{i}", "name": "x", "arguments": {}} for i in range(2)]
    chat = {"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])}
    sessions.add([SpanIn("a", "11" * 8, False, chat, {}, {})], 0.0)
    assert sessions.pending == 2 and not sink.of("closed")
    sessions.add([SpanIn("b", "22" * 8, False, chat, {}, {})], 0.0)
    assert [k for k, _ in sink.of("closed")] == ["a"] and sessions.pending == 2


def test_grouping_by_an_attribute_follows_the_trace() -> None:
    sessions, sink, _ = make(Limits(key="gen_ai.conversation.id"))
    sessions.add([tool("t1", "x", **{"gen_ai.conversation.id": "conv"})], 0.0)
    sessions.add([tool("t1", "y")], 0.0)  # no attribute: its trace's session
    sessions.add([tool("t2", "z", **{"gen_ai.conversation.id": "conv"}), root("t2")], 0.0)
    assert [k for k, _ in sink.of("opened")] == ["conv"]
    assert [v for _, v in sink.of("calls")] == [["x"], ["y"], ["z"]]
    assert not sessions.closing  # a root ends a trace, not a conversation


@pytest.mark.parametrize("order", [0, 1])
def test_calls_of_one_request_are_read_in_start_time_order(order: int) -> None:
    sessions, sink, _ = make(Limits())
    early = tool("t", "first")
    early.fields["startTimeUnixNano"] = 5
    late = tool("t", "second")
    late.fields["startTimeUnixNano"] = 9
    sessions.add([early, late] if order else [late, early], 0.0)
    assert sink.of("calls") == [("t", ["first", "second"])]


def test_a_sessions_gold_adds_its_own_rules_once() -> None:
    """A keyed gold line's own rules (here a budget of one call) apply to its session, on top
    of the rule file, and once: the second call is one broken rule, not two."""
    gold = Gold(gold_from_dicts([{"tool": "x", "args": {"q": 1}}]), ruleset({"max_calls": 1}))
    sessions, sink, _ = make(Limits(), gold=gold)
    for trace in ("a", "b"):  # two sessions of one gold (its plan shared)
        sessions.add([tool(trace, "x"), tool(trace, "x"), tool(trace, "rm")], 0.0)
    sessions.close_all()
    assert [f for _, f in sink.of("findings")] == [["step_budget_exceeded", "forbidden_call"]] * 2
    for _, (_, verdict) in sink.of("closed"):
        assert (verdict.violations.rules, verdict.violations.forbidden) == (1, 1)
