"""Argument modes, one call and a column at a time."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore import Regex
from toolscore.hardrules import args_match, value_match
from toolscore.hardrules.matching import column_match


@pytest.mark.parametrize(
    ("mode", "actual", "matched"),
    [
        ("exact", {"q": "x"}, True),
        ("exact", {"q": "x", "page": 2}, False),  # one extra argument
        ("exact", {}, False),
        ("subset", {"q": "x", "page": 2}, True),  # extra actual arguments do not cost
        ("subset", {}, False),
        ("superset", {}, True),  # missing ones do not
        ("superset", {"q": "x", "page": 2}, False),
        ("superset", {"q": "y"}, False),
        ("ignore", {"anything": 1}, True),
    ],
)
def test_argument_modes_from_the_spec(mode: Any, actual: Any, matched: bool) -> None:
    assert args_match({"q": "x"}, actual, mode) is matched


def test_per_argument_modes() -> None:
    expected = {"q": "x", "tags": ["a"], "opts": {"n": 1}}
    actual = {"q": "x", "tags": ["a", "b"], "opts": {"n": 1, "m": 2}, "trace_id": "t"}
    per_arg = {"tags": "subset", "opts": "subset", "trace_id": "ignore"}
    assert args_match(expected, actual, "exact", per_arg)
    assert not args_match(expected, actual, "exact", {"trace_id": "ignore"})
    assert value_match(["a", "b"], ["a"], "superset") and not value_match(["a"], ["b"], "superset")
    assert args_match({"q": Regex(r"wea.*")}, {"q": "weather"}, "exact")


values = st.sampled_from(["x", " x ", "y", 1, 1.0, True, None, ["a"], ["a", "b"], {"n": 1}])
args_st = st.none() | st.dictionaries(st.sampled_from(["q", "page", "tags"]), values, max_size=3)


@settings(max_examples=500, deadline=None)
@given(
    expected=st.none() | st.dictionaries(st.sampled_from(["q", "page", "tags"]), values,
                                         max_size=3),
    column=st.lists(args_st, max_size=6),
    mode=st.sampled_from(["exact", "subset", "superset", "ignore"]),
    per_arg=st.sampled_from([{}, {"page": "ignore"}, {"tags": "subset"}]),
    strict=st.booleans(),
)  # fmt: skip
def test_a_column_gives_what_each_call_gives(
    expected: Any, column: list[Any], mode: Any, per_arg: Any, strict: bool
) -> None:
    one_by_one = [args_match(expected, a, mode, per_arg, strict) for a in column]
    assert column_match(expected, column, mode, per_arg, strict) == one_by_one


# -- argument modes in the graded score: only when a user opts in ----------------------------

GOLD = [{"tool": "search", "args": {"q": "x"}}]
EXTRA = [{"tool": "search", "args": {"q": "x", "page": 2}}]


def test_one_extra_argument_costs_only_without_the_opt_in() -> None:
    from toolscore import evaluate

    plain = evaluate(GOLD, EXTRA)
    assert plain.argument_f1 == pytest.approx(2 / 3)  # 1 extra of 2: precision 0.5
    modes_only = evaluate(GOLD, EXTRA, rules={"arguments": "subset", "match": "strict"})
    assert modes_only.argument_f1 == plain.argument_f1 and modes_only.score == plain.score
    assert modes_only.match_verdicts == {"strict": True}
    opted = evaluate(GOLD, EXTRA, rules={"arguments": {"mode": "subset", "score": True}})
    assert opted.argument_f1 == 1.0 and opted.score > plain.score


def test_ignored_arguments_and_tools_leave_the_score_when_opted_in() -> None:
    from toolscore import evaluate

    gold = [{"tool": "search", "args": {"q": "x", "ts": 1}}, {"tool": "fetch", "args": {"u": 1}}]
    trace = [{"tool": "search", "args": {"q": "x", "ts": 2}}, {"tool": "fetch", "args": {"u": 2}}]
    assert evaluate(gold, trace).argument_f1 == pytest.approx(1 / 3)
    rules = {"arguments": {"tools": {"search": {"args": {"ts": "ignore"}}, "fetch": "ignore"},
                           "score": True}}  # fmt: skip
    assert evaluate(gold, trace, rules=rules).argument_f1 == 1.0
    assert evaluate(gold, trace).argument_f1 == pytest.approx(1 / 3)  # nothing kept


def test_superset_cannot_be_opted_into_the_score() -> None:
    from toolscore.errors import RuleFileError
    from toolscore.hardrules import ruleset

    with pytest.raises(RuleFileError, match="'superset' mode cannot change the graded score"):
        ruleset({"arguments": {"mode": "superset", "score": True}})
