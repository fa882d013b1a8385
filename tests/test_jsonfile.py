"""Gold and rule files' JSON: the nesting limit and the place of a value by its JSON path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run_cli
from toolscore.errors import GoldFileError, RuleFileError
from toolscore.gold import load_gold
from toolscore.hardrules.spec import load_rules
from toolscore.jsonfile import MAX_DEPTH, check_depth, json_path, locate
from toolscore.rules import load_forbidden_rules

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


_HUGE = "9" * 5000  # past Python's int-string limit (4,300 digits by default)


def _long_number_files(tmp_path: Path) -> dict[str, Path]:
    gold = tmp_path / "gold.json"
    gold.write_text('{"calls": [\n {"tool": "a", "args": {"x": ' + _HUGE + "}}]}")
    rules = tmp_path / "rules.json"
    rules.write_text('[\n {"tool": "a", "args": {"x": -' + _HUGE + "}}]")
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"tool": "a", "args": {"x": 1}}\n')
    return {"gold": gold, "rules": rules, "trace": trace}


def test_a_number_too_long_is_an_input_error_naming_file_and_line(tmp_path: Path) -> None:
    files = _long_number_files(tmp_path)
    with pytest.raises(GoldFileError) as gold_error:
        load_gold(files["gold"])
    assert gold_error.value.path == str(files["gold"]) and gold_error.value.line == 2
    assert "5,000 digits" in str(gold_error.value)
    with pytest.raises(RuleFileError) as rule_error:
        load_forbidden_rules(files["rules"])
    assert rule_error.value.path == str(files["rules"]) and rule_error.value.line == 2
    with pytest.raises(RuleFileError) as hard_error:
        load_rules(files["rules"])
    assert hard_error.value.line == 2


def test_a_number_too_long_through_the_cli(tmp_path: Path) -> None:
    files = _long_number_files(tmp_path)
    run = run_cli("eval", str(files["gold"]), str(files["trace"]))
    assert run.returncode == 2
    assert f"{files['gold']}:2: a number of 5,000 digits" in run.stderr
    run = run_cli("eval", str(files["trace"]), "--forbidden", str(files["rules"]))
    assert run.returncode == 2
    assert f"{files['rules']}:2: a number of 5,000 digits" in run.stderr
