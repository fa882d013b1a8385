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
        {"tool": ""},
        "junk",
        {"args": {}},
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
    assert info.value.line == 3 and "invalid JSON" in str(info.value)
    assert str(info.value).startswith(f"{tmp_path / 'gold.json'}:3:")
    with pytest.raises(GoldFileError, match="must be a JSON array"):
        load_gold(write(tmp_path, {"tool": "a"}))
    with pytest.raises(GoldFileError, match="must be a JSON array"):
        load_gold(write(tmp_path, {"calls": "x"}))
    with pytest.raises(GoldFileError, match="item 0: tool must be a string"):
        load_gold(write(tmp_path, [{"tool": {"name": "a"}}]))
    path = tmp_path / "bad.json"
    path.write_bytes(b'[{"tool": "\xff"}]')
    with pytest.raises(GoldFileError, match="invalid UTF-8"):
        load_gold(path)


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


@pytest.mark.parametrize(
    ("item", "is_error", "error", "metadata"),
    [
        ({"error": True}, True, None, {"is_error": True}),
        ({"error": False}, False, None, {"is_error": False}),
        ({"error": {"code": 1}}, True, "{'code': 1}", {"error": "{'code': 1}", "is_error": True}),
        ({"error": ""}, False, None, {}),
        ({"error": 0}, False, None, {}),
        ({"error": "boom", "is_error": False}, True, "boom", {"error": "boom", "is_error": False}),
        ({"is_error": True}, True, None, {"is_error": True}),
        ({"is_error": "true"}, False, None, {}),
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
