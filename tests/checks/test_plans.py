"""One gold, one plan: the gold content cache and the expected-calls plan cache."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolscore import evaluate
from toolscore.calls import ToolCall
from toolscore.checks.expected.check import expected_check
from toolscore.checks.expected.pairing import gold_groups
from toolscore.checks.expected.plans import plan_for
from toolscore.checks.expected.sequence import SHARED_STEPS_MAX_GOLD, distance_tracker
from toolscore.gold import gold_from_dicts
from toolscore.matchers import ANY

GOLD: list[dict[str, Any]] = [
    {"tool": "search", "args": {"q": "paris", "limit": 3}},
    {"tool": "book", "args": {"id": 7}},
]


def test_same_content_is_one_gold_and_one_plan() -> None:
    first = gold_from_dicts([dict(g) for g in GOLD])
    again = gold_from_dicts([dict(g) for g in GOLD])
    assert first is again
    assert plan_for(first, False, False) is plan_for(again, False, False)
    assert plan_for(first, True, False) is not plan_for(first, False, False)
    assert expected_check(first).plan is expected_check(again).plan


def test_the_cached_gold_is_a_copy_of_the_callers_data() -> None:
    args: dict[str, str] = {"city": "oslo"}
    mine = [{"tool": "lookup", "args": args}]
    before = evaluate(mine, [{"tool": "lookup", "args": {"city": "oslo"}}])
    assert before.score == pytest.approx(1.0)
    args["city"] = "rome"  # changed after the call: the next call sees the change
    after = evaluate(mine, [{"tool": "lookup", "args": {"city": "oslo"}}])
    assert after.score < 0.9
    args["city"] = "oslo"
    assert evaluate(mine, [{"tool": "lookup", "args": {"city": "oslo"}}]).score == pytest.approx(
        1.0
    )


def test_data_that_is_not_plain_json_is_read_each_time() -> None:
    with_tuple = [{"tool": "t", "args": {"xs": (1, 2)}}]
    assert gold_from_dicts(with_tuple) is not gold_from_dicts(with_tuple)
    with_matcher = [{"tool": "t", "args": {"x": ANY}}]
    assert gold_from_dicts(with_matcher) is not gold_from_dicts(with_matcher)
    nan = [{"tool": "t", "args": {"x": float("nan")}}]
    assert gold_from_dicts(nan) is not gold_from_dicts(nan)
    # a tuple stays a tuple, as before the cache: not equal to the trace's list
    as_tuple = evaluate(with_tuple, [{"tool": "t", "args": {"xs": [1, 2]}}])
    assert as_tuple.score == pytest.approx(0.7)
    as_list = evaluate(
        [{"tool": "t", "args": {"xs": [1, 2]}}], [{"tool": "t", "args": {"xs": [1, 2]}}]
    )
    assert as_list.score == pytest.approx(1.0)


def test_a_list_changed_since_its_plan_is_planned_again() -> None:
    gold = [ToolCall(tool="a", args={}), ToolCall(tool="b", args={})]
    plan = plan_for(gold, False, False)
    assert plan_for(gold, False, False) is plan
    gold.append(ToolCall(tool="c", args={}))
    replanned = plan_for(gold, False, False)
    assert replanned is not plan
    assert [g.tool for g in replanned.gold] == ["a", "b", "c"]
    gold[0] = ToolCall(tool="z", args={})
    assert [g.tool for g in plan_for(gold, False, False).gold] == ["z", "b", "c"]


_TWINS = st.sampled_from([None, False, True, 0, 1, 0.0, 1.0, -0.0, "", "1"])
"""Values equal to one another (``True == 1 == 1.0``) but of other types."""
_VALUES = st.recursive(
    _TWINS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.just("a"), inner),
    max_leaves=3,
)
_KEYS = st.sampled_from(["a", 1, True, 1.0])  # (from Python: keys that are not str)


@settings(max_examples=300, deadline=None)
@example([("t", {"a": True}), ("t", {"a": 1})])
@example([("t", {1: "x"}), ("t", {True: "x"})])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["t", "u"]),
            st.none() | st.dictionaries(_KEYS, _VALUES, max_size=1) | st.just([1]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_gold_calls_group_exactly_when_tool_and_args_are_the_same_to_the_type(
    drawn: list[tuple[str, Any]],
) -> None:
    # a group's calls share one candidate list: same tool, and args equal value by value
    # with the same types (1, 1.0 and True apart; a key 1 apart from a key True)
    def exact(value: Any) -> Any:
        if isinstance(value, dict):
            return ("d", tuple((exact(k), exact(v)) for k, v in value.items()))
        if isinstance(value, list):
            return ("l", tuple(exact(v) for v in value))
        return (type(value).__name__, value)

    gold = [ToolCall(tool, args) for tool, args in drawn]
    groups = gold_groups(gold)
    assert sorted(p for g in groups for p in g.members) == list(range(len(gold)))
    group_of = {p: i for i, g in enumerate(groups) for p in g.members}

    def same(i: int, j: int) -> bool:
        a, b = gold[i].args, gold[j].args
        if a is None or b is None:
            return a is b and gold[i].tool == gold[j].tool
        items = [exact(x if isinstance(x, dict) else {}) for x in (a, b)]
        return gold[i].tool == gold[j].tool and items[0] == items[1]

    for i in range(len(gold)):
        for j in range(len(gold)):
            assert (group_of[i] == group_of[j]) == same(i, j), (gold[i], gold[j])


_NAMES = st.sampled_from(["a", "b", "c", "d"])


@settings(max_examples=150, deadline=None)
@example(gold=["a", "b", "c"] * 23, traces=[["c", "a"] * 20, ["d"] * 3])
@given(
    gold=st.lists(_NAMES, max_size=70),
    traces=st.lists(st.lists(_NAMES, max_size=40), min_size=1, max_size=3),
)
def test_a_plans_trackers_start_alike_and_share_no_state(
    gold: list[str], traces: list[list[str]]
) -> None:
    # every check of one plan copies the plan's tracker (golds of 64 names and more too,
    # whose step table is each tracker's own): each measures as a tracker made for it
    plan = plan_for([ToolCall(name) for name in gold], False, False)
    trackers = [plan.tracker() for _ in traces]
    for tracker, names in zip(trackers, traces, strict=True):
        tracker.run(names)
    for tracker, names in zip(trackers, traces, strict=True):
        alone = distance_tracker(gold)
        alone.run(names)
        assert tracker.distance == alone.distance
    assert plan.tracker().snapshot() == distance_tracker(gold).snapshot() == plan.start_column
    if len(gold) > SHARED_STEPS_MAX_GOLD:  # its steps are its own, not kept with the plan
        assert getattr(trackers[0], "table", None) is not getattr(plan.tracker(), "table", 1)
