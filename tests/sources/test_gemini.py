from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _streamed import assert_numbered, json_like, streamed
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import Batch, ToolCall
from toolscore.integrations import from_gemini, run_dialect
from toolscore.sources.detect import analyse, detect
from toolscore.sources.gemini import GeminiDialect


def calls(*items: Any) -> list[ToolCall]:
    return run_dialect(GeminiDialect(), items)


RESPONSE = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "let me look"},
                    {"functionCall": {"name": "search", "args": {"q": "x"}}},
                    {"function_call": {"name": "fetch", "arguments": '{"u": 1}'}},
                ],
            }
        }
    ]
}


def test_response_candidates_camel_and_snake() -> None:
    got = calls(RESPONSE)
    assert [(c.tool, c.args) for c in got] == [("search", {"q": "x"}), ("fetch", {"u": 1})]
    assert [c.index for c in got] == [0, 1]
    assert all(c.complete for c in got)
    assert got[0].result is None and not got[0].is_error
    assert got[0].metadata["format"] == "gemini"


def test_bad_json_arguments_and_none() -> None:
    got = calls(
        {"functionCall": {"name": "a", "arguments": "{nope"}}, {"functionCall": {"name": "b"}}
    )
    assert got[0].args == {"raw": "{nope"}
    assert got[1].args == {}


def test_top_level_function_call_items_work() -> None:
    # Toolscore 1.10 crashed on these (it read the name from the item itself).
    got = calls(
        [
            {"functionCall": {"name": "search", "args": {"q": "x"}, "id": "c1"}},
            {"functionResponse": {"name": "search", "id": "c1", "response": {"output": 3}}},
        ]
    )
    assert len(got) == 1
    assert got[0].result == 3 and got[0].metadata["id"] == "c1" and not got[0].is_error


def test_conversation_pairs_by_id_then_by_name_in_order() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get", "args": {"k": 1}}},
                {"functionCall": {"name": "get", "args": {"k": 2}}},
                {"functionCall": {"name": "put", "args": {}, "id": "p"}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "put", "id": "p", "response": {"output": "ok"}}},
                {"functionResponse": {"name": "get", "response": {"value": "first"}}},
                {"functionResponse": {"name": "get", "response": {"error": {"message": "no"}}}},
            ],
        },
    ]
    got = calls({"contents": contents})
    assert [(c.tool, c.args) for c in got] == [("get", {"k": 1}), ("get", {"k": 2}), ("put", {})]
    assert got[0].result == {"value": "first"} and not got[0].is_error
    assert got[1].is_error and got[1].error == "no" and got[1].result is None
    assert got[2].result == "ok"


def test_results_arrive_later_pending_then_done() -> None:
    dialect = GeminiDialect()
    out = Batch()
    dialect.item({"role": "model", "parts": [{"functionCall": {"name": "a", "id": 7}}]}, None, out)
    assert len(out.calls) == 1 and out.done == [] and not out.calls[0].complete
    later = Batch()
    dialect.item(
        {"role": "user", "parts": [{"functionResponse": {"id": 7, "response": {"x": 1}}}]},
        None,
        later,
    )
    assert later.calls == [] and len(later.done) == 1 and later.done[0].result == {"x": 1}
    end = Batch()
    dialect.close(end)
    assert end.done == []


def test_unanswered_calls_complete_at_close() -> None:
    dialect = GeminiDialect()
    out = Batch()
    dialect.item(RESPONSE, None, out)
    assert out.done == []
    dialect.close(out)
    assert [c.tool for c in out.done] == ["search", "fetch"]


def test_orphan_response_and_junk_are_ignored() -> None:
    got = calls(
        {"functionResponse": {"name": "x", "response": {}}},
        {"parts": [{"text": "t"}]},
        {"usageMetadata": {"totalTokenCount": 3}},
        42,
        {"functionCall": {"name": ""}},
    )
    assert got == []


def test_sdk_dump_with_none_fields_and_afc_history() -> None:
    dumped = {
        "automatic_function_calling_history": [
            {"role": "user", "parts": [{"text": "q", "function_call": None}]},
            {
                "role": "model",
                "parts": [{"function_call": {"name": "f", "args": {"a": 1}, "id": None}}],
            },
            {
                "role": "user",
                "parts": [{"function_response": {"name": "f", "response": {"output": 2}}}],
            },
        ],
        "candidates": [{"content": {"role": "model", "parts": [{"text": "done"}]}}],
    }
    assert from_gemini(dumped) == [{"tool": "f", "args": {"a": 1}, "result": 2, "is_error": False}]


def test_from_gemini_reads_model_dump_objects() -> None:
    class Fake:
        def model_dump(self) -> dict[str, Any]:
            return RESPONSE

    assert [c["tool"] for c in from_gemini(Fake())] == ["search", "fetch"]


json_values = json_like(
    [
        "functionCall",
        "function_call",
        "functionResponse",
        "name",
        "args",
        "id",
        "response",
        "parts",
        "content",
        "candidates",
    ]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6))
def test_arbitrary_json_never_raises(items: list[Any]) -> None:
    assert_numbered(calls(*items))


# --- streamed reading agrees with the in-memory helper ---------------------------------------


CONVERSATION = [
    {"role": "user", "parts": [{"text": "weather and time?"}]},
    {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": "w"}},
            {"functionCall": {"name": "time", "args": {}}},
        ],
    },
    {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "time", "response": {"output": "12:00"}}},
            {"functionResponse": {"name": "weather", "id": "w", "response": {"error": "down"}}},
        ],
    },
]


@pytest.mark.parametrize(
    ("layout", "prefix"),
    [("list", "item"), ("contents", "contents.item"), ("jsonl", ""), ("response", "")],
)
def test_streamed_matches_from_gemini(tmp_path: Path, layout: str, prefix: str) -> None:
    data: Any = {
        "list": CONVERSATION,
        "contents": {"contents": CONVERSATION},
        "response": RESPONSE,
        "jsonl": CONVERSATION,
    }[layout]
    path = tmp_path / ("trace.jsonl" if layout == "jsonl" else "trace.json")
    if layout == "jsonl":
        path.write_text("\n".join(json.dumps(c) for c in data) + "\n")
    else:
        path.write_text(json.dumps(data, indent=1))
    found = detect(path.read_bytes(), final=True)
    assert (found.dialect, found.prefix) == ("gemini", prefix)
    expected = from_gemini(data)
    assert expected and streamed(path) == expected
    if layout != "response":
        assert expected[1] == {"tool": "time", "args": {}, "result": "12:00", "is_error": False}
        assert expected[0]["is_error"] and expected[0]["error"] == "down"


def test_openai_legacy_messages_are_not_claimed() -> None:
    from toolscore.sources.gemini import sniff

    legacy = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}},
    ]
    shape = analyse(json.dumps(legacy).encode(), final=True)
    assert shape is not None and sniff(shape) is None
    snake = [{"function_call": {"name": "f", "args": {}}}]
    shape = analyse(json.dumps(snake).encode(), final=True)
    assert shape is not None and sniff(shape) == "item"
