"""Format detection: every shape Toolscore misreads, the Shape hook, and the error wording."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolscore.errors import FormatNotDetected, UsageError
from toolscore.sources import FORMATS, open_decoder
from toolscore.sources.detect import DETECTION_ORDER, analyse, check_format, detect

USER = {"role": "user", "content": "hi"}
SYSTEM = {"role": "system", "content": "be brief"}
OA_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
}
OA_RESULT = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
AN_CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
}
AN_RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}


def doc(value: Any, pretty: bool = True) -> bytes:
    return json.dumps(value, indent=2 if pretty else None).encode()


SHAPES = [
    # (what, input, layout, dialect, prefix)
    (
        "anthropic messages dict",
        doc({"messages": [USER, AN_CALL, AN_RESULT]}),
        "json",
        "anthropic",
        "messages.item",
    ),
    ("anthropic list from user", doc([USER, AN_CALL, AN_RESULT]), "json", "anthropic", "item"),
    ("anthropic single message", doc({"type": "message", **AN_CALL}), "json", "anthropic", ""),
    ("anthropic message, no type", doc(AN_CALL), "json", "anthropic", ""),
    ("openai list from system", doc([SYSTEM, USER, OA_CALL, OA_RESULT]), "json", "openai", "item"),
    (
        "openai messages dict",
        doc({"messages": [SYSTEM, OA_CALL]}),
        "json",
        "openai",
        "messages.item",
    ),
    (
        "chat completion",
        doc({"id": "x", "choices": [{"message": OA_CALL}]}),
        "json",
        "openai",
        "choices.item.message",
    ),
    ("openai single message", doc(OA_CALL), "json", "openai", ""),
    (
        "bare tool_calls",
        doc({"tool_calls": OA_CALL["tool_calls"]}),
        "json",
        "openai",
        "tool_calls.item",
    ),
    ("custom calls", doc({"calls": [{"tool": "a"}]}), "json", "custom", "calls.item"),
    ("custom list", doc([{"tool": "a"}]), "json", "custom", "item"),
    ("custom single call", doc({"tool": "a", "args": {}}), "json", "custom", ""),
    ("custom jsonl", b'{"tool": "a"}\n{"tool": "b"}\n', "jsonl", "custom", ""),
    (
        "openai jsonl",
        doc(SYSTEM, False) + b"\n" + doc(OA_CALL, False) + b"\n",
        "jsonl",
        "openai",
        "",
    ),
    (
        "anthropic jsonl",
        doc(USER, False) + b"\n" + doc(AN_CALL, False) + b"\n",
        "jsonl",
        "anthropic",
        "",
    ),
    ("jsonl, bad first line", b'{"tool" x\n{"tool": "b"}\n', "jsonl", "custom", ""),
]


@pytest.mark.parametrize(("what", "data", "layout", "dialect", "prefix"), SHAPES)
def test_shapes(what: str, data: bytes, layout: str, dialect: str, prefix: str) -> None:
    found = detect(data, final=True)
    assert (found.layout, found.dialect, found.prefix) == (layout, dialect, prefix), what


def test_single_line_document_is_json() -> None:
    assert detect(b'{"calls": [{"tool": "a"}]}\n', final=True).layout == "json"
    # ...but a complete first line with more to come (a live pipe) is JSON Lines
    assert detect(b'{"tool": "a"}\n', final=False).layout == "jsonl"


def test_shape_summary() -> None:
    shape = analyse(doc({"messages": [SYSTEM, OA_CALL], "model": "m"}), final=True)
    assert shape is not None
    assert (shape.layout, shape.top, shape.keys) == ("json", "object", ("messages", "model"))
    assert shape.paths["messages.item"] == ("role", "content")
    assert shape.paths["messages.item.tool_calls.item.function"] == ("name", "arguments")
    assert shape.values["messages.item.role"] == "system"
    assert shape.values["model"] == "m"
    assert [m["role"] for m in shape.items("messages.item")] == ["system", "assistant"]
    assert shape.first("messages.item.tool_calls.item.id") == "c1"
    assert shape.complete
    array = analyse(doc([{"tool": "a", "x": 1}]), final=True)
    assert array is not None and array.item_keys == ("tool", "x") and array.top == "array"


def test_shape_of_a_cut_sample() -> None:
    data = doc([{"tool": "a"}, {"tool": "b", "args": {"q": "x" * 100}}])
    shape = analyse(data[:40], final=False)
    assert shape is not None and not shape.complete
    assert shape.items("item")[0] == {"tool": "a"}


def test_jsonl_shape_lines() -> None:
    shape = analyse(b'{"a": 1}\n[1]\n{"b": 2}\n{"c"', final=False)
    assert shape is not None and shape.layout == "jsonl"
    assert shape.keys == ("a",)
    assert shape.lines == ({"a": 1}, [1], {"b": 2})
    assert shape.items("") == [{"a": 1}, [1], {"b": 2}]


def test_not_detected_wording() -> None:
    with pytest.raises(FormatNotDetected) as info:
        detect(doc({"foo": 1, "bar": [2]}), final=True, source="x.json")
    message = str(info.value)
    assert message.startswith("x.json: could not detect the trace format")
    assert 'a JSON object with keys "foo", "bar"' in message
    for name in FORMATS:
        assert name in message
    with pytest.raises(FormatNotDetected, match=r"bytes that are not JSON \('hello'\)"):
        detect(b"hello", final=True)
    with pytest.raises(FormatNotDetected, match="a JSON array whose first item is a number"):
        detect(b"[1, 2]", final=True)
    with pytest.raises(FormatNotDetected, match="JSON Lines whose first line is an object"):
        detect(b'{"x": 1}\n{"y": 2}\n', final=True)


def test_explicit_formats() -> None:
    anthropic_dict = doc({"messages": [USER, AN_CALL]})
    found = detect(anthropic_dict, format="openai", final=True)
    assert (found.layout, found.dialect, found.prefix) == ("json", "openai", "messages.item")
    found = detect(b'{"role": "user"}\n{"role": "x"}\n', format="anthropic")
    assert (found.layout, found.dialect) == ("jsonl", "anthropic")
    found = detect(doc({"tool": "a"}), format="JSONL", final=True)
    assert (found.layout, found.dialect) == ("jsonl", "custom")
    found = detect(doc({"weird": {"tool": "a"}}), format="custom", final=True)
    assert (found.layout, found.prefix) == ("json", "")


def test_unknown_format() -> None:
    with pytest.raises(UsageError) as info:
        check_format("nope")
    assert "'nope'" in str(info.value)
    assert "auto, " in str(info.value) and "openai" in str(info.value)
    with pytest.raises(UsageError):
        open_decoder("nope", b"[]", "t")


def test_formats_table() -> None:
    assert FORMATS[-1] == "jsonl"
    assert {"custom", "openai", "anthropic"} <= set(FORMATS)
    assert [f for f in FORMATS if f != "jsonl"] == [f for f in DETECTION_ORDER if f in FORMATS]


def test_open_decoder_names() -> None:
    assert open_decoder("auto", doc([{"tool": "a"}]), "t", final=True).name == "json/custom"
    assert open_decoder("jsonl", b'{"tool": "a"}\n', "t").name == "jsonl/custom"
