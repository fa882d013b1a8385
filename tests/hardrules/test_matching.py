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
