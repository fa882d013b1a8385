"""Gold and rule files' JSON: the nesting limit and the place of a value by its JSON path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.errors import RuleFileError
from toolscore.jsonfile import MAX_DEPTH, check_depth, json_path, locate

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(alphabet='ab"\\[]{}:, \n\u00e9', max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet='ab"\\.[]', max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [prefix]
    if isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    return out


@settings(max_examples=300, deadline=None)
@given(values, st.integers(0, 2), st.data())
def test_locate_finds_the_value_at_each_path(value: Any, indent: int, data: st.DataObject) -> None:
    text = json.dumps(value, indent=indent or None, ensure_ascii=False)
    path = data.draw(st.sampled_from(_paths(value)))
    index = locate(text, path)
    assert index is not None, (text, path)
    found, _ = json.JSONDecoder().raw_decode(text, index)
    expected = value
    for part in path:
        expected = expected[part]
    assert found == expected
    assert locate(text, (*path, "no such key")) is None
    assert locate(text, (*path, 99)) is None


def test_json_path_text() -> None:
    assert json_path(()) == "$"
    assert json_path(("calls", 3, "args")) == "$.calls[3].args"


def test_depth_limit_counts_brackets_outside_strings() -> None:
    inside = '["' + "[" * 5000 + '"]'  # brackets in a string are text
    check_depth(inside, "f", RuleFileError)
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    check_depth(at_limit, "f", RuleFileError)
    with pytest.raises(RuleFileError) as info:
        check_depth('{"a":\n' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}", "f", RuleFileError)
    assert info.value.line == 2 and info.value.offset == 6 + MAX_DEPTH - 1
