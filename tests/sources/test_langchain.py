from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _streamed import assert_numbered, json_like, streamed
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import ToolCall
from toolscore.integrations import from_langgraph, run_dialect
from toolscore.sources.detect import analyse, detect
from toolscore.sources.langchain import LangChainDialect


def calls(*items: Any) -> list[ToolCall]:
    return run_dialect(LangChainDialect(), items)


def test_reference_example_three_forms() -> None:
    got = calls(
        [
            {"tool": "search", "tool_input": {"query": "Python"}, "log": "Invoking…"},
            {"name": "fetch", "args": {"u": 1}, "id": "c1", "type": "tool_call"},
            {"action": "lookup", "action_input": '{"k": 1}'},
        ]
    )
    assert [(c.tool, c.args) for c in got] == [
        ("search", {"query": "Python"}),
        ("fetch", {"u": 1}),
        ("lookup", {"k": 1}),
    ]
    assert got[0].metadata == {"format": "langchain_legacy", "log": "Invoking…"}
    assert got[1].metadata == {"format": "langchain_modern", "id": "c1", "type": "tool_call"}
    assert got[2].metadata == {"format": "langchain_action"}


def test_tool_input_strings() -> None:
    got = calls(
        {"tool": "a", "tool_input": "plain text"},
        {"tool": "b", "tool_input": "[1, 2]"},
        {"tool": "c", "tool_input": '{"x": 1}', "tool_call_id": "t9"},
    )
    assert [c.args for c in got] == [{"input": "plain text"}, {}, {"x": 1}]
    assert got[2].metadata["id"] == "t9"


def test_intermediate_steps_give_observations() -> None:
    state = {
        "intermediate_steps": [
            [{"tool": "search", "tool_input": "q", "log": ""}, "3 hits"],
            [{"tool": "fetch", "tool_input": {"u": 1}, "log": ""}, {"status": 200}],
        ]
    }
    got = calls(state)
    assert [(c.tool, c.result) for c in got] == [("search", "3 hits"), ("fetch", {"status": 200})]


def test_two_actions_in_a_list_are_two_calls() -> None:
    got = calls([{"tool": "a", "tool_input": {}}, {"tool": "b", "tool_input": {}}])
    assert [c.tool for c in got] == ["a", "b"]
    assert all(c.result is None for c in got)


def test_messages_with_tool_messages_pair_by_id() -> None:
    messages = [
        {"type": "human", "content": "hi", "name": None},
        {
            "type": "ai",
            "content": "",
            "name": None,
            "tool_calls": [
                {"name": "get", "args": {"k": 1}, "id": "a", "type": "tool_call"},
                {"name": "put", "args": {"k": 2}, "id": "b", "type": "tool_call"},
            ],
        },
        {"type": "tool", "name": "put", "tool_call_id": "b", "content": "bad", "status": "error"},
        {
            "type": "tool",
            "name": "get",
            "tool_call_id": "a",
            "content": [{"type": "text", "text": "v1"}],
            "status": "success",
        },
    ]
    got = calls({"messages": messages})
    assert [c.tool for c in got] == ["get", "put"]
    assert got[0].result == "v1" and not got[0].is_error
    assert got[1].is_error and got[1].error == "bad"


def test_openai_style_tool_calls_and_serialized_forms() -> None:
    got = calls(
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "AIMessage"],
            "kwargs": {"content": "", "tool_calls": [{"name": "x", "args": {}, "id": "1"}]},
        },
        {"type": "tool", "data": {"content": "r", "tool_call_id": "1"}},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "o", "type": "function", "function": {"name": "y", "arguments": "{bad"}}
            ],
        },
        {"role": "tool", "tool_call_id": "o", "content": "out"},
    )
    assert [(c.tool, c.args, c.result) for c in got] == [
        ("x", {}, "r"),
        ("y", {"raw": "{bad"}, "out"),
    ]


def test_messages_without_calls_are_skipped() -> None:
    assert calls({"type": "ai", "content": "hello", "name": "bot"}, "text", None) == []


def test_from_langgraph_state_attribute_and_model_dump() -> None:
    class Msg:
        def __init__(self, data: dict[str, Any]) -> None:
            self.data = data

        def model_dump(self) -> dict[str, Any]:
            return self.data

    class State:
        messages = [  # noqa: RUF012
            Msg({"type": "ai", "content": "", "tool_calls": [{"name": "t", "args": {"a": 1}}]})
        ]

    assert from_langgraph(State()) == [{"tool": "t", "args": {"a": 1}}]
    assert from_langgraph({"messages": [State.messages[0]]}) == [{"tool": "t", "args": {"a": 1}}]


json_values = json_like(
    [
        "tool",
        "tool_input",
        "action",
        "name",
        "args",
        "id",
        "type",
        "tool_calls",
        "tool_call_id",
        "messages",
        "content",
        "status",
        "lc",
        "kwargs",
        "data",
    ]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6))
def test_arbitrary_json_never_raises(items: list[Any]) -> None:
    assert_numbered(calls(*items))


# --- streamed reading agrees with the in-memory helper ---------------------------------------


STEPS = [
    {"tool": "search", "tool_input": {"query": "Python"}, "log": "Invoking…"},
    {"name": "fetch", "args": {"u": 1}, "id": "c1", "type": "tool_call"},
    {"action": "lookup", "action_input": '{"k": 1}'},
]
MESSAGES = [
    {"type": "human", "content": "hi"},
    {"type": "ai", "content": "", "tool_calls": [{"name": "get", "args": {"k": 1}, "id": "a"}]},
    {"type": "tool", "tool_call_id": "a", "content": "v", "status": "success"},
]


@pytest.mark.parametrize(
    ("data", "jsonl", "prefix"),
    [
        (STEPS, False, "item"),
        (STEPS, True, ""),
        ({"messages": MESSAGES}, False, "messages.item"),
        (MESSAGES, True, ""),
        ({"intermediate_steps": [[STEPS[0], "3 hits"]]}, False, "intermediate_steps.item"),
    ],
)
def test_streamed_matches_in_memory(tmp_path: Path, data: Any, jsonl: bool, prefix: str) -> None:
    path = tmp_path / ("t.jsonl" if jsonl else "t.json")
    path.write_text("\n".join(map(json.dumps, data)) if jsonl else json.dumps(data, indent=2))
    found = detect(path.read_bytes(), final=True)
    assert (found.dialect, found.prefix) == ("langchain", prefix)
    expected = from_langgraph(data)
    assert expected and streamed(path) == expected


def test_custom_calls_are_not_claimed() -> None:
    from toolscore.sources.langchain import sniff

    sample = json.dumps([{"tool": "a", "args": {}}, {"name": "b", "arguments": {}}]).encode()
    shape = analyse(sample, final=True)
    assert shape is not None and sniff(shape) is None
