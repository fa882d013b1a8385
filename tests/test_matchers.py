from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from toolscore.matchers import (
    ANY,
    Approx,
    Contains,
    IsType,
    OneOf,
    Regex,
    Search,
    compare_values,
)


def test_any_matches_everything_including_none() -> None:
    assert ANY == None  # noqa: E711 - the matcher's == is the point
    assert compare_values(ANY, {"x": 1})
    assert repr(ANY) == "ANY"


def test_regex_is_a_full_match_without_dotall() -> None:
    assert Regex(r"weather.*").matches("weather NYC")
    assert not Regex(r"abc").matches("abc\n")
    assert not Regex(r".*rm -rf.*").matches("ls\nrm -rf /")
    assert Regex(r".*rm -rf.*", re.DOTALL).matches("ls\nrm -rf /")
    assert not Regex(r"\d+").matches(123)
    assert repr(Regex("p")) == "Regex('p')"
    assert repr(Regex("p", re.IGNORECASE)) == "Regex('p', flags=re.IGNORECASE)"


def test_search_finds_anywhere_and_joins_lists() -> None:
    rule = Search("rm -rf")
    assert rule.matches("sudo rm -rf /")
    assert rule.matches("ls\nrm -rf /")
    assert rule.matches(["rm", "-rf", "/"])
    assert not rule.matches(None)
    assert Search("5").matches({"a": 5})
    assert repr(rule) == "$regex('rm -rf')"


def test_approx() -> None:
    assert Approx(1.5).matches(1.5000001)
    assert not Approx(1.5).matches(True)
    assert not Approx(0).matches(1e-12)
    assert Approx(10, rel=0.1).matches(10.9)
    assert not Approx(1.0).matches("1.0")
    assert repr(Approx(1.5, rel=0.1, abs=0.2)) == "Approx(1.5, rel=0.1, abs=0.2)"
    assert repr(Approx(1.5)) == "Approx(1.5)"


def test_contains() -> None:
    assert Contains("rm -rf").matches("a\nrm -rf /")
    assert Contains(2).matches([1, 2.0])
    assert Contains("k").matches({"k": 1})
    assert not Contains(1).matches("123")  # TypeError -> False
    assert not Contains("x").matches(5)


def test_one_of_and_is_type() -> None:
    assert OneOf("prod", "production").matches("prod")
    assert OneOf(1).matches(True) and OneOf(1).matches(1.0)
    assert OneOf(Regex("p.*")).matches("prod")
    assert not IsType(int).matches(True)
    assert IsType(int, bool).matches(True)
    assert not IsType(float).matches(3)


def test_lenient_compare_top_level_only() -> None:
    assert compare_values(1, 1.0)
    assert compare_values(True, 1)
    assert compare_values(" NYC ", "NYC")
    assert not compare_values({"c": " NYC"}, {"c": "NYC"})
    assert not compare_values("nyc", "NYC")
    assert compare_values([1, 2], [1.0, 2.0])


def test_strict_compare_needs_identical_types() -> None:
    assert not compare_values(1, 1.0, strict=True)
    assert not compare_values(True, 1, strict=True)
    assert compare_values({"a": [1, {"b": ANY}]}, {"a": [1, {"b": "x"}]}, strict=True)
    assert not compare_values({"a": 1}, {"a": 1, "b": 2}, strict=True)
    assert not compare_values(" a", "a", strict=True)


@given(st.integers(-(2**53), 2**53), st.floats(allow_nan=False))
def test_lenient_numbers_compare_as_floats(i: int, f: float) -> None:
    assert compare_values(i, f) == (float(i) == f)
