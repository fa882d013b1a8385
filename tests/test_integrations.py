from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from toolscore.calls import ToolCall
from toolscore.integrations import (
    auto_extract,
    call_to_dict,
    from_anthropic,
    from_claude_agent_sdk,
    from_gemini,
    from_langgraph,
    from_mcp,
    from_openai,
    from_openai_agents,
    from_otel,
    from_pydantic_ai,
)
from toolscore.sources import iter_batches

# --- real SDK objects, built without a network ----------------------------------------------


def chat_completion() -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": json.dumps({"city": "NYC"}),
                                },
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "get_time", "arguments": "{}"},
                            },
                        ],
                    },
                }
            ],
        }
    )


def anthropic_message() -> Any:
    from anthropic.types import Message

    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "tu_1", "name": "search", "input": {"q": "x"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 5},
        }
    )


def test_from_openai_chat_completion_object() -> None:
    got = from_openai(chat_completion())
    assert [(c["tool"], c["args"], c.get("id")) for c in got] == [
        ("get_weather", {"city": "NYC"}, "call_1"),
        ("get_time", {}, "call_2"),
    ]


def test_from_openai_message_list_with_tool_results() -> None:
    completion = chat_completion()
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        completion.choices[0].message,  # the SDK's own message object
        {"role": "tool", "tool_call_id": "call_2", "content": "12:00"},
        {"role": "tool", "tool_call_id": "call_1", "content": "72F"},
    ]
    got = from_openai(messages)
    assert [(c["tool"], c.get("result")) for c in got] == [
        ("get_weather", "72F"),
        ("get_time", "12:00"),
    ]


def test_from_anthropic_message_object() -> None:
    got = from_anthropic(anthropic_message())
    assert [(c["tool"], c["args"], c.get("id")) for c in got] == [("search", {"q": "x"}, "tu_1")]


def test_from_anthropic_message_list_pairs_tool_results() -> None:
    from anthropic.types import MessageParam, ToolResultBlockParam

    result: ToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": "tu_1",
        "is_error": True,
        "content": "boom",
    }
    user: MessageParam = {"role": "user", "content": [result]}
    got = from_anthropic([{"role": "user", "content": "go"}, anthropic_message(), user])
    assert len(got) == 1
    assert got[0]["tool"] == "search" and got[0]["is_error"] is True


def test_auto_extract_routes_sdk_objects() -> None:
    assert [c["tool"] for c in auto_extract(chat_completion())] == ["get_weather", "get_time"]
    assert [c["tool"] for c in auto_extract(anthropic_message())] == ["search"]


# --- the other helpers ------------------------------------------------------------------------


def test_auto_extract_passes_call_dicts_through() -> None:
    calls = [{"tool": "a", "args": {}}, {"tool": "b"}]
    assert auto_extract(calls) is calls
    assert auto_extract([]) == []


@pytest.mark.parametrize("bad", [[{"name": "x"}], {"tool": "x"}, "text", 5])
def test_auto_extract_rejects_unknown_shapes(bad: Any) -> None:
    with pytest.raises(TypeError, match="Cannot auto-detect"):
        auto_extract(bad)


def test_auto_extract_routes_dicts_and_lists() -> None:
    gemini = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "g"}}]}}]}
    assert auto_extract(gemini) == from_gemini(gemini) == [{"tool": "g", "args": {}}]
    mcp = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "m"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "ok"}]}},
    ]
    assert auto_extract(mcp) == from_mcp(mcp)
    assert auto_extract({"messages": mcp})[0]["result"] == "ok"
    graph = {"messages": [{"type": "ai", "tool_calls": [{"name": "l", "args": {"a": 1}}]}]}
    assert auto_extract(graph) == from_langgraph(graph) == [{"tool": "l", "args": {"a": 1}}]
    otel = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "name": "t",
                                "attributes": {
                                    "gen_ai.operation.name": "execute_tool",
                                    "gen_ai.tool.name": "o",
                                },
                            }
                        ]
                    }
                ]
            }
        ]
    }
    assert auto_extract(otel) == from_otel(otel) == [{"tool": "o", "args": {}, "is_error": False}]
    parts = [{"role": "model", "parts": [{"functionCall": {"name": "g2", "args": {"z": 1}}}]}]
    assert auto_extract(parts) == [{"tool": "g2", "args": {"z": 1}}]


def test_langgraph_state_with_no_calls_raises() -> None:
    with pytest.raises(ValueError, match="no tool calls"):
        auto_extract({"messages": [{"type": "ai", "tool_calls": [{"args": {}}]}]})


# Pydantic AI's message classes are dataclasses; these mirror their fields.
@dataclass
class ToolCallPart:
    tool_name: str
    args: str | dict[str, Any] | None = None
    tool_call_id: str = ""
    part_kind: str = "tool-call"


@dataclass
class ToolReturnPart:
    tool_name: str
    content: Any
    tool_call_id: str
    part_kind: str = "tool-return"


@dataclass
class RetryPromptPart:
    content: Any
    tool_name: str | None = None
    tool_call_id: str = ""
    part_kind: str = "retry-prompt"


@dataclass
class ModelResponse:
    parts: list[Any]
    kind: str = "response"


@dataclass
class ModelRequest:
    parts: list[Any]
    kind: str = "request"


@dataclass
class RunResult:
    messages: list[Any] = field(default_factory=list)

    def all_messages(self) -> list[Any]:
        return self.messages


def test_from_pydantic_ai_run_result() -> None:
    run = RunResult(
        [
            ModelResponse(
                [
                    ToolCallPart("weather", '{"city": "Paris"}', "p1"),
                    ToolCallPart("stock", {"sym": "X"}, "p2"),
                ]
            ),
            ModelRequest(
                [
                    ToolReturnPart("weather", {"t": 18}, "p1"),
                    RetryPromptPart([{"msg": "bad sym"}], "stock", "p2"),
                ]
            ),
        ]
    )
    got = from_pydantic_ai(run)
    assert got == [
        {
            "tool": "weather",
            "args": {"city": "Paris"},
            "result": {"t": 18},
            "is_error": False,
            "id": "p1",
        },
        {
            "tool": "stock",
            "args": {"sym": "X"},
            "is_error": True,
            "error": '[{"msg":"bad sym"}]',
            "id": "p2",
        },
    ]
    assert auto_extract(run)[0]["tool"] == "weather"


def test_from_openai_agents_items() -> None:
    from openai.types.responses import ResponseFunctionToolCall

    @dataclass
    class ToolCallItem:
        raw_item: Any
        type: str = "tool_call_item"

    @dataclass
    class ToolCallOutputItem:
        raw_item: Any
        output: Any
        type: str = "tool_call_output_item"

    @dataclass
    class AgentRun:
        new_items: list[Any]

    raw = ResponseFunctionToolCall(
        type="function_call", call_id="fc_1", name="lookup", arguments='{"k": 2}'
    )
    run = AgentRun(
        [
            ToolCallItem(raw),
            ToolCallOutputItem(
                {"type": "function_call_output", "call_id": "fc_1", "output": "v"}, "v"
            ),
        ]
    )
    expected = [{"tool": "lookup", "args": {"k": 2}, "result": "v", "id": "fc_1"}]
    assert from_openai_agents(run) == expected
    assert auto_extract(run) == expected
    response_output = {
        "output": [
            {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{bad"},
            {"type": "function_call_output", "call_id": "c", "output": "o"},
        ]
    }
    assert from_openai_agents(response_output) == [
        {"tool": "n", "args": {"raw": "{bad"}, "result": "o", "id": "c"}
    ]


def test_from_claude_agent_sdk_dataclasses_and_stream_json() -> None:
    @dataclass
    class ToolUseBlock:
        id: str
        name: str
        input: dict[str, Any]

    @dataclass
    class ToolResultBlock:
        tool_use_id: str
        content: Any = None
        is_error: bool | None = None

    @dataclass
    class TextBlock:
        text: str

    @dataclass
    class AssistantMessage:
        content: list[Any]
        model: str = "claude"

    @dataclass
    class UserMessage:
        content: Any

    messages = [
        AssistantMessage([TextBlock("hi"), ToolUseBlock("t1", "Read", {"path": "a"})]),
        UserMessage([ToolResultBlock("t1", "contents", False)]),
    ]
    got = from_claude_agent_sdk(messages)
    assert [(c["tool"], c["args"]) for c in got] == [("Read", {"path": "a"})]
    stream = [
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t2", "is_error": True, "content": "x"}
                ],
            },
        },
    ]
    got = from_claude_agent_sdk(stream)
    assert [(c["tool"], c.get("is_error")) for c in got] == [("Bash", True)]


def test_evaluate_accepts_sdk_responses() -> None:
    from toolscore.api import evaluate

    expected: list[dict[str, Any]] = [
        {"tool": "get_weather", "args": {"city": "NYC"}},
        {"tool": "get_time"},
    ]
    result = evaluate(expected, chat_completion())
    assert result.score == pytest.approx(0.9999999999999999, abs=1e-9)
    result = evaluate([{"tool": "search", "args": {"q": "x"}}], anthropic_message())
    assert result.score == pytest.approx(0.9999999999999999, abs=1e-9)


# --- the file readers and the helpers agree ---------------------------------------------------


def streamed(path: Path) -> list[dict[str, Any]]:
    found: list[ToolCall] = []
    for batch in iter_batches(path, chunk_size=11):
        assert batch.error is None
        found.extend(batch.calls)
    return [call_to_dict(c) for c in found]


def test_openai_response_file_matches_from_openai(tmp_path: Path) -> None:
    completion = chat_completion()
    path = tmp_path / "completion.json"
    path.write_text(completion.model_dump_json(indent=2))
    assert streamed(path) == from_openai(completion)
    messages = [
        {"role": "system", "content": "be brief"},
        completion.choices[0].message.model_dump(),
        {"role": "tool", "tool_call_id": "call_1", "content": "72F"},
    ]
    path = tmp_path / "messages.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in messages))
    got = streamed(path)
    assert got == from_openai(messages) and got[0]["result"] == "72F"


def test_anthropic_message_files_match_from_anthropic(tmp_path: Path) -> None:
    message = anthropic_message()
    path = tmp_path / "message.json"
    path.write_text(message.model_dump_json())
    assert streamed(path) == from_anthropic(message)
    conversation = [
        {"role": "user", "content": "go"},
        message.model_dump(),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "is_error": True, "content": "no"}
            ],
        },
    ]
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps({"messages": conversation}))
    got = streamed(path)
    assert got == from_anthropic(conversation) and got[0]["is_error"] is True


def test_auto_extract_openai_message_lists_use_the_openai_reader() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "function_call": {"name": "legacy", "arguments": '{"a": 1}'}},
        {"role": "function", "name": "legacy", "content": "done"},
    ]
    assert auto_extract(messages) == from_openai(messages)
    assert auto_extract(messages)[0]["tool"] == "legacy"
    assert auto_extract({"messages": messages}) == from_openai(messages)
