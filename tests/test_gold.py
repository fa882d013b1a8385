"""Gold files (Toolscore §5) and the in-memory call dicts (§1.2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolscore.errors import GoldFileError
from toolscore.gold import calls_from_dicts, gold_from_dicts, load_gold


def write(tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "gold.json"
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def test_gold_array_and_calls_object(tmp_path: Path) -> None:
    items = [
        {"tool": "search", "args": {"q": "x"}, "description": "find it", "result": 1},
        {"tool": "fetch", "args": {"u": {"$regex": ".*"}}, "side_effects": {"http_ok": True}},
        {"tool": "summarize", "args": None, "error": "x", "id": "c1"},
    ]
    for value in (items, {"calls": items, "name": "snap"}):
        gold = load_gold(write(tmp_path, value))
        assert [(g.tool, g.args, g.index) for g in gold] == [
            ("search", {"q": "x"}, 0),
            ("fetch", {"u": {"$regex": ".*"}}, 1),
            ("summarize", None, 2),
        ]
        assert gold[0].metadata == {"side_effects": {}, "description": "find it"}
        assert gold[1].metadata == {"side_effects": {"http_ok": True}}
        assert gold[2].metadata == {"side_effects": {}}
        assert gold[0].result is None and not gold[2].is_error


def test_gold_errors(tmp_path: Path) -> None:
    with pytest.raises(GoldFileError, match="not found") as info:
        load_gold(tmp_path / "missing.json")
    assert info.value.path.endswith("missing.json")
    with pytest.raises(GoldFileError) as info:
        load_gold(write(tmp_path, '[\n  {"tool": "a"},\n  {"tool": }\n]'))
    assert info.value.line == 3 and "not valid JSON" in str(info.value)
    assert str(info.value).startswith(f"{tmp_path / 'gold.json'}:3:")
    with pytest.raises(GoldFileError, match="must be a JSON array"):
        load_gold(write(tmp_path, {"tool": "a"}))
    with pytest.raises(GoldFileError, match="must be a JSON array"):
        load_gold(write(tmp_path, {"calls": "x"}))
    with pytest.raises(GoldFileError, match="item 0: 'tool' must be a non-empty string"):
        load_gold(write(tmp_path, [{"tool": {"name": "a"}}]))
    path = tmp_path / "bad.json"
    path.write_bytes(b'[{"tool": "\xff"}]')
    with pytest.raises(GoldFileError, match="not UTF-8 text"):
        load_gold(path)


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (
            "[1, 2]",
            1,
            "item 0 is not a call: expected an object like "
            '{"tool": "name", "args": {...}}, got a JSON number 1 (at $[0])',
        ),
        (
            '[\n  {"tool": "a"},\n  {"args": {}}\n]',
            3,
            "item 1 has no 'tool': expected an object like "
            '{"tool": "name", "args": {...}} (at $[1])',
        ),
        (
            '{"calls": [\n {"tool": "a"},\n {"tool": "b"},\n {"tool": 7}]}',
            4,
            "item 2: 'tool' must be a non-empty string naming the tool, got a JSON number 7 "
            "(at $.calls[2].tool)",
        ),
        (
            '[{"tool": "a",\n  "args": ["x"]}]',
            2,
            "item 0: 'args' must be an object of argument names and values (or null: any "
            'arguments), got a JSON array ["x"] (at $[0].args)',
        ),
        ('[{"tool": ""}]', 1, "item 0: 'tool' must be a non-empty string"),
        ("[" * 1001 + "]" * 1001, 1, "arrays and objects nested deeper than 1,000 levels"),
        (
            '[{"tool": "a", "args": {"x": ' + "[" * 5000 + "]" * 5000 + "}}]",
            1,
            "arrays and objects nested deeper than 1,000 levels (byte 1026)",  # 29 + 997
        ),
    ],
)
def test_gold_items_are_validated_with_their_place(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(GoldFileError) as info:
        load_gold(path)
    assert info.value.line == line
    assert info.value.problem.startswith(problem), info.value.problem
    assert str(info.value).startswith(f"{path}:{line}: {problem}")


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    text = '[{"tool": "a", "args": {"v": ' + "[" * 997 + '"x"' + "]" * 997 + "}}]"
    (call,) = load_gold(write(tmp_path, text))  # 1,000 levels: the limit, read
    assert call.tool == "a"
    with pytest.raises(GoldFileError, match="nested deeper than 1,000 levels"):
        load_gold(write(tmp_path, "[" + text + "]"))


def test_gold_from_dicts() -> None:
    gold = gold_from_dicts(
        [{"tool": "a", "args": None, "result": 1, "duration": 2.0, "cost": 0.1, "x": 1}]
    )
    call = gold[0]
    assert (call.tool, call.args, call.result, call.duration, call.cost) == ("a", None, 1, 2.0, 0.1)
    assert call.metadata == {}
    with pytest.raises(ValueError, match="Item at index 1 is not a dict"):
        gold_from_dicts([{"tool": "a"}, "b"])
    with pytest.raises(ValueError, match="Item at index 0 is missing 'tool' key"):
        gold_from_dicts([{"tool": ""}])


def test_in_memory_calls_are_usage_errors() -> None:
    from toolscore import evaluate
    from toolscore.errors import UsageError

    with pytest.raises(UsageError, match=r"Item at index 0 is not a dict: expected a call like"):
        evaluate(expected=[1, 2], actual=[])
    with pytest.raises(UsageError, match="Item at index 0: 'tool' must be a string"):
        evaluate(expected=[{"tool": 3}], actual=[])
    with pytest.raises(UsageError, match="Item at index 0: 'args' must be a dict"):
        evaluate(expected=[{"tool": "a", "args": [1]}], actual=[])
    with pytest.raises(UsageError, match="Item at index 1 is missing 'tool' key"):
        evaluate(expected=[{"tool": "a"}], actual=[{"tool": "a"}, {"args": {}}])
    with pytest.raises(TypeError, match="calls must be a list of call dicts"):
        gold_from_dicts(5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("item", "is_error", "error", "metadata"),
    [
        ({"error": True}, True, None, {"error": True}),
        ({"error": False}, False, None, {"error": False}),
        ({"error": {"code": 1}}, True, "{'code': 1}", {"error": {"code": 1}}),
        ({"error": ""}, False, None, {"error": ""}),
        ({"error": 0}, False, None, {"error": 0}),
        ({"error": "boom", "is_error": False}, True, "boom", {"error": "boom", "is_error": False}),
        ({"error": True, "is_error": False}, True, None, {"error": True, "is_error": False}),
        ({"is_error": True}, True, None, {"is_error": True}),
        ({"is_error": "true"}, False, None, {"is_error": "true"}),
        ({"id": "c1", "metadata": {"k": 1}}, False, None, {"k": 1, "id": "c1"}),
        ({"id": None, "metadata": "x"}, False, None, {}),
    ],
)
def test_calls_from_dicts_failure_fields(
    item: dict[str, Any], is_error: bool, error: str | None, metadata: dict[str, Any]
) -> None:
    (call,) = calls_from_dicts([{"tool": "t", **item}])
    assert (call.is_error, call.error, call.metadata) == (is_error, error, metadata)


def test_calls_from_dicts_indices() -> None:
    calls = calls_from_dicts([{"tool": "a"}, {"tool": "b", "args": {"x": 1}}])
    assert [(c.index, c.args) for c in calls] == [(0, None), (1, {"x": 1})]
    assert [c.index for c in calls_from_dicts([{"tool": "c"}], start=7)] == [7]
    with pytest.raises(ValueError, match="Item at index 7 is not a dict"):
        calls_from_dicts([1], start=7)
