"""Every built-in check conforms to the state protocol: parts merged equal the whole."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import Batch, Finding, ToolCall
from toolscore.checks._base import BaseCheck, State
from toolscore.checks.errors import errors_check
from toolscore.checks.expected import expected_check
from toolscore.checks.policy import policy_check
from toolscore.checks.secrets import secrets_check
from toolscore.testing import assert_parts_merge, check_conformance

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
GOLD = [
    ToolCall("search", {"q": "a"}),
    ToolCall("fetch", {"url": "u"}),
    ToolCall("search", {"q": "b"}),
    ToolCall("write", None),
]
RULES = [{"tool": "run_shell", "args": {"cmd": "rm"}, "reason": "destructive"}]

calls = st.builds(
    lambda tool, args, failed, duration, cost: ToolCall(
        tool,
        args,
        metadata={"is_error": True, "error": "boom"} if failed else {},
        duration=duration,
        cost=cost,
    ),
    st.sampled_from(["search", "fetch", "write", "run_shell", "other"]),
    st.one_of(
        st.none(),
        st.fixed_dictionaries({"q": st.sampled_from(["a", "b", " a "])}),
        st.fixed_dictionaries({"url": st.sampled_from(["u", KEY])}),
        st.fixed_dictionaries({"cmd": st.sampled_from(["rm", "ls"])}),
    ),
    st.booleans(),
    st.one_of(st.none(), st.floats(0, 10, allow_nan=False), st.integers(0, 3)),
    st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
)

MAKERS: dict[str, Any] = {
    "expected": lambda: expected_check(GOLD),
    "expected-details": lambda: expected_check(GOLD, keep_details=True),
    "errors": errors_check,
    "secrets": secrets_check,
    "policy": lambda: policy_check(RULES),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
@settings(max_examples=60, deadline=None)
@given(trace=st.lists(calls, max_size=14), data=st.data())
def test_every_built_in_check_conforms(name: str, trace: list[ToolCall], data: Any) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(trace)), max_size=4))
    batch = data.draw(st.integers(1, 8))
    assert_parts_merge(MAKERS[name], trace, sorted(cuts), batch=batch)


FIXED = [
    ToolCall("search", {"q": "a"}, duration=0.5),
    ToolCall("fetch", {"url": KEY}, metadata={"is_error": True, "error": "boom"}),
    ToolCall("fetch", {"url": KEY}, cost=0.25),
    ToolCall("run_shell", {"cmd": "rm"}),
    ToolCall("search", {"q": " b "}, duration=2),
    ToolCall("write"),
    ToolCall("other", [1, 2]),
    ToolCall("search", {"q": "a"}, metadata={"is_error": True}),
    ToolCall("search", {"q": "a"}),
]


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_check_conformance_on_a_fixed_trace(name: str) -> None:
    check_conformance(MAKERS[name], FIXED)


def test_a_retry_across_the_boundary_is_found_at_the_merge() -> None:
    failed = ToolCall("fetch", {"url": "u"}, metadata={"is_error": True})
    trace = [ToolCall("search", {"q": "a"}), failed, ToolCall("fetch", {"url": "u"})]
    for cut in range(4):
        assert_parts_merge(errors_check, trace, [cut], batch=1)


def test_a_long_trace_past_the_tail_and_the_spill_conforms() -> None:
    # past MAX_TAIL_DETAILS trace-only steps, and past the distinct counter's memory
    trace = [ToolCall("search", {"q": str(i % 50_000)}, duration=0.1) for i in range(40_000)]
    for cuts in ([], [1], [20_000], [5, 1_003, 39_999]):
        assert_parts_merge(lambda: expected_check(GOLD), trace, cuts, batch=4096)
        assert_parts_merge(errors_check, trace, cuts, batch=4096)


def test_latency_sums_are_exact_whatever_the_split() -> None:
    values = [0.1, 0.2, 0.3, 1e-9, 2.503, 0.083] * 7
    trace = [ToolCall("search", duration=d, cost=d) for d in values]
    for cuts in ([], [1], [10, 20], [3, 17, 30]):
        assert_parts_merge(lambda: expected_check(GOLD), trace, cuts)
    check = expected_check(GOLD)
    assert_parts_merge(lambda: check.__class__(GOLD), trace, [5])
    check.feed(Batch(calls=trace, done=trace))
    extra = check.extra_metrics()
    assert extra["latency_metrics"]["total_duration"] == math.fsum(values)
    assert extra["cost_metrics"]["cost_by_tool"] == {"search": math.fsum(values)}


@dataclass(frozen=True)
class Count(State):
    calls: int = 0

    def merge(self, later: Count) -> Count:
        return Count(max(self.calls, later.calls))  # wrong: not a sum


class Counting(BaseCheck):
    def __init__(self) -> None:
        self.calls = 0

    def feed(self, batch: Batch) -> list[Finding]:
        self.calls += batch.n_calls
        return []

    def state(self) -> Count:
        return Count(self.calls)


def test_conformance_catches_a_state_that_does_not_merge() -> None:
    trace = [ToolCall("a"), ToolCall("b"), ToolCall("c")]
    assert_parts_merge(Counting, trace, [])
    with pytest.raises(AssertionError, match="merged state"):
        assert_parts_merge(Counting, trace, [1])
