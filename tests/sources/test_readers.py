"""The custom, OpenAI and Anthropic readers in both layouts, fed in any chunking."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _streamed import fed as read
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import ToolCall
from toolscore.errors import InputError, MalformedTrace, TruncatedTrace
from toolscore.sources import Session


def summary(calls: list[ToolCall]) -> list[tuple[Any, ...]]:
    return [(c.tool, c.args, c.result, c.is_error, c.error) for c in calls]


def dumps(value: Any, pretty: bool = False) -> bytes:
    return json.dumps(value, indent=2 if pretty else None).encode()


def lines(values: list[Any]) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in values)


CUSTOM = [
    {"tool": "search", "args": {"q": "x"}, "result": {"n": 3}, "duration": 0.2, "id": "c1"},
    {"name": "fetch", "arguments": {"url": "u"}, "error": "timeout"},
    {"function": "calc", "input": 5, "is_error": True},
    {"tool": "s2", "args": {}, "arguments": '{"u": 1}', "output": "o", "elapsed": 1.5},
    {"args": {"no": "name"}},
    "not a dict",
]
CUSTOM_EXPECTED = [
    ("search", {"q": "x"}, {"n": 3}, False, None),
    ("fetch", {"url": "u"}, None, True, "timeout"),
    ("calc", {"value": 5}, None, True, None),
    ("s2", {"value": '{"u": 1}'}, "o", False, None),
]

OPENAI = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "weather?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "NYC"}'},
            },
            {"id": "call_2", "function": {"name": "get_time", "arguments": "not json"}},
            {"id": "call_x", "type": "code_interpreter", "code_interpreter": {}},
        ],
    },
    {"role": "assistant", "content": "thinking", "tool_calls": None},
    {"role": "tool", "tool_call_id": "call_2", "content": "Error: no clock"},
    {"role": "tool", "tool_call_id": "call_1", "content": "72F", "is_error": True},
    {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_3", "type": "function", "function": {"name": "never_answered"}}
        ],
    },
]
OPENAI_EXPECTED = [
    ("get_weather", {"city": "NYC"}, "72F", True, None),
    # a result that starts with "Error:" is a failed call (toolscore.failed's defaults)
    ("get_time", {"raw": "not json"}, "Error: no clock", True, None),
    ("never_answered", None, None, False, None),
]

ANTHROPIC = [
    {"role": "user", "content": "find x"},
    {
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "…"},
            {"type": "tool_use", "id": "tu_1", "name": "search", "input": {"q": "x"}},
            {"type": "tool_use", "id": "tu_2", "name": "fetch", "input": "odd"},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu_2",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {"type": "tool_result", "tool_use_id": "tu_1", "is_error": True, "content": "boom"},
        ],
    },
]
ANTHROPIC_EXPECTED = [
    ("search", {"q": "x"}, "boom", True, "boom"),
    ("fetch", {}, "a\nb", False, None),
]

CASES = [
    ("custom", {"calls": CUSTOM}, CUSTOM, CUSTOM_EXPECTED, "calls.item"),
    ("openai", {"messages": OPENAI}, OPENAI, OPENAI_EXPECTED, "messages.item"),
    ("anthropic", {"messages": ANTHROPIC}, ANTHROPIC, ANTHROPIC_EXPECTED, "messages.item"),
]


@pytest.mark.parametrize(("dialect", "container", "items", "expected", "prefix"), CASES)
@pytest.mark.parametrize("pretty", [False, True])
def test_json_layouts(
    dialect: str, container: Any, items: list[Any], expected: Any, prefix: str, pretty: bool
) -> None:
    for doc in (container, items):
        calls, _, error, name = read(dumps(doc, pretty))
        assert error is None
        assert name == f"json/{dialect}"
        assert summary(calls) == expected


@pytest.mark.parametrize(("dialect", "container", "items", "expected", "prefix"), CASES)
def test_jsonl_layout(
    dialect: str, container: Any, items: list[Any], expected: Any, prefix: str
) -> None:
    data = lines([i for i in items if isinstance(i, dict)])
    calls, _, error, name = read(data)
    assert error is None
    assert name == f"jsonl/{dialect}"
    assert summary(calls) == expected
    assert all(c.location is not None and c.location.line for c in calls)
    # one whole conversation (or container) per line works too
    calls, _, error, _ = read(lines([container, container]))
    assert error is None
    assert summary(calls) == expected * 2


@pytest.mark.parametrize(("dialect", "container", "items", "expected", "prefix"), CASES)
def test_explicit_format(
    dialect: str, container: Any, items: list[Any], expected: Any, prefix: str
) -> None:
    calls, _, error, name = read(dumps(container), dialect)
    assert error is None and name == f"json/{dialect}"
    assert summary(calls) == expected


def test_openai_metadata_and_pending() -> None:
    calls, _, _, _ = read(dumps(OPENAI))
    assert calls[0].metadata["id"] == "call_1"
    assert calls[0].metadata["format"] == "tool_calls"
    assert [c.complete for c in calls] == [True] * 3


def test_openai_result_in_later_chunk_is_released_then() -> None:
    data = lines(OPENAI)
    session = Session("auto", "t")
    first_line_end = data.index(b"\n", data.index(b"get_weather")) + 1
    batch = session.feed(data[:first_line_end])
    assert [c.tool for c in batch.calls] == ["get_weather", "get_time"]
    assert batch.done == []
    rest = session.feed(data[first_line_end:])
    assert [c.tool for c in rest.done][:2] == ["get_time", "get_weather"]


LEGACY = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "function_call": {"name": "legacy", "arguments": '{"a": 1}'}},
    {"role": "function", "name": "legacy", "content": "done"},
    {"role": "assistant", "function_call": {"name": "legacy", "arguments": "{}"}},
    {"role": "assistant", "function_call": {"name": "legacy", "arguments": '{"b": 2}'}},
    {"role": "function", "name": "legacy", "content": "second"},
]


def test_openai_legacy_function_call() -> None:
    for data in (dumps(LEGACY), lines(LEGACY)):
        calls, _, error, _ = read(data, "openai")
        assert error is None
        assert summary(calls) == [
            ("legacy", {"a": 1}, "done", False, None),
            ("legacy", {}, None, False, None),
            ("legacy", {"b": 2}, "second", False, None),
        ]
        assert calls[0].metadata == {"format": "function_call"}


def test_openai_legacy_function_call_is_detected() -> None:
    assert read(dumps(LEGACY))[3] == "json/openai"
    assert read(lines(LEGACY))[3] == "jsonl/openai"


def test_chat_completion_response() -> None:
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": OPENAI[2], "finish_reason": "tool_calls"}],
    }
    calls, _, error, name = read(dumps(response, True))
    assert error is None and name == "json/openai"
    assert [c.tool for c in calls] == ["get_weather", "get_time"]


def test_single_anthropic_message() -> None:
    message = {"id": "msg_1", "type": "message", **ANTHROPIC[1]}
    calls, _, error, name = read(dumps(message))
    assert error is None and name == "json/anthropic"
    assert [(c.tool, c.metadata["stop_reason"]) for c in calls] == [
        ("search", "tool_use"),
        ("fetch", "tool_use"),
    ]


def test_custom_non_string_name_is_a_finding() -> None:
    data = lines([{"tool": "ok"}, {"function": {"name": "x"}}, {"tool": "ok2"}])
    calls, findings, error, _ = read(data, "jsonl")
    assert error is None
    assert [c.tool for c in calls] == ["ok", "ok2"]
    assert [(f.kind, f.location.line if f.location else None) for f in findings] == [
        ("bad_tool_name", 2)
    ]


def test_custom_metadata_and_numbers() -> None:
    calls, _, _, _ = read(
        lines([{"tool": "a", "id": "c1", "metadata": {"k": 1}, "duration": "slow", "cost": 0.5}])
    )
    call = calls[0]
    assert call.metadata == {"id": "c1", "metadata": {"k": 1}, "duration": "slow"}
    assert call.duration is None and call.cost == 0.5


# ---------------------------------------------------------------------------------------------
# Chunking


def _docs() -> list[bytes]:
    out = []
    for _, container, items, _, _ in CASES:
        out += [
            dumps(container),
            dumps(items, True),
            lines([i for i in items if isinstance(i, dict)]),
        ]
    return out


DOCS = _docs()


@pytest.mark.parametrize("data", DOCS)
def test_one_byte_at_a_time(data: bytes) -> None:
    whole = summary(read(data)[0])
    assert whole
    assert summary(read(data, step=1)[0]) == whole


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(DOCS), st.lists(st.floats(0, 1), max_size=8))
def test_random_split_points(data: bytes, fractions: list[float]) -> None:
    cuts = [int(f * len(data)) for f in fractions]
    assert summary(read(data, cuts=cuts)[0]) == summary(read(data)[0])


# ---------------------------------------------------------------------------------------------
# Faults


def test_malformed_line_is_one_finding_and_the_rest_goes_on() -> None:
    data = b'{"tool": "a"}\n{"tool": bad}\n\n   \n{"tool": "b", "x": NaN}\n'
    calls, findings, error, _ = read(data)
    assert error is None
    assert [c.tool for c in calls] == ["a", "b"]
    assert len(findings) == 1
    finding = findings[0]
    assert (finding.check, finding.kind, finding.severity) == ("input", "malformed_line", "error")
    assert finding.message.startswith("t:2: malformed JSON")
    assert calls[1].location is not None and calls[1].location.line == 5


def test_last_line_without_newline() -> None:
    calls, findings, error, _ = read(b'{"tool": "a"}\n{"tool": "b"}')
    assert [c.tool for c in calls] == ["a", "b"] and not findings and error is None
    calls, findings, error, _ = read(b'{"tool": "a"}\n{"tool": "b", "ar')
    assert [c.tool for c in calls] == ["a"] and error is None
    assert [(f.kind, f.location.line if f.location else 0) for f in findings] == [
        ("truncated_line", 2)
    ]
    assert "truncated last line" in findings[0].message


def test_truncated_document() -> None:
    data = dumps({"calls": CUSTOM[:3]}, True)
    cut = data[: data.rindex(b'"calc"') + 3]
    for step in (0, 1, 7):
        calls, _, error, _ = read(cut, step=step)
        assert [c.tool for c in calls] == ["search", "fetch"]
        assert isinstance(error, TruncatedTrace)
        assert error.offset == len(cut)
        assert f"byte {len(cut)}" in str(error)


def test_malformed_document_names_offset_and_line() -> None:
    data = b'[\n {"tool": "a"},\n {"tool": "b"} x\n]'
    for step in (0, 1, 3):
        calls, _, error, _ = read(data, step=step)
        assert [c.tool for c in calls] == ["a", "b"]
        assert isinstance(error, MalformedTrace)
        assert error.offset == data.index(b"x")
        assert error.line == 3
        assert "expected a JSON value" in str(error)


def test_invalid_utf8_in_both_layouts() -> None:
    data = b'[{"tool": "a"}, {"tool": "b\xff"}]'
    calls, _, error, _ = read(data)
    assert [c.tool for c in calls] == ["a"]
    assert isinstance(error, MalformedTrace) and "invalid UTF-8" in str(error)
    assert error.offset == data.index(b"\xff")
    calls, findings, error, _ = read(b'{"tool": "a"}\n{"tool": "b\xff"}\n{"tool": "c"}\n')
    assert error is None and [c.tool for c in calls] == ["a", "c"]
    assert len(findings) == 1 and findings[0].message == "t:2: invalid UTF-8 at column 12"


def test_trailing_garbage_after_document() -> None:
    _, _, error, _ = read(b'[\n{"tool": "a"}\n]\n]')
    assert isinstance(error, MalformedTrace)
    assert "after the end of the JSON document" in str(error)


_JSONISH = st.sampled_from(
    [
        b"{",
        b"}",
        b"[",
        b"]",
        b'"tool"',
        b":",
        b",",
        b"\n",
        b" ",
        b'"a"',
        b"1",
        b"null",
        b"\xff",
        b'{"tool": "t"}',
        b'"role"',
        b'"content"',
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(st.binary(max_size=200), st.lists(_JSONISH, max_size=40).map(b"".join)),
    st.lists(st.integers(0, 200), max_size=5),
    st.sampled_from(["auto", "jsonl", "openai"]),
)
def test_any_bytes_give_batches_never_exceptions(data: bytes, cuts: list[int], format: str) -> None:
    calls, _, error, _ = read(data, format, cuts=[c for c in cuts if c <= len(data)])
    assert error is None or isinstance(error, InputError)
    assert all(isinstance(c.tool, str) and c.tool for c in calls)
