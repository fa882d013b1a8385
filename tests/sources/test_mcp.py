from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _streamed import assert_numbered, json_like, streamed
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import Batch, ToolCall
from toolscore.integrations import call_to_dict, from_mcp, run_dialect
from toolscore.sources import aiter_batches
from toolscore.sources.detect import detect
from toolscore.sources.mcp import MCPDialect, content_to_text


def calls(*items: Any) -> list[ToolCall]:
    return run_dialect(MCPDialect(), items)


RECORD = {
    "format": "mcp",
    "recorded_by": "toolscore mcp record",
    "server_command": ["python", "s.py"],
    "messages": [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "x"}},
        {"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 9, "result": {"tools": [{"name": "search"}]}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"q": "x"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": [{"type": "text", "text": "found"}]},
            "duration": 0.12,
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "fetch", "arguments": '{"u":1}'},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"isError": True, "content": [{"type": "text", "text": "404"}]},
            "duration": 0.5,
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "fetch", "arguments": {"u": 2}},
        },
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad params"}},
    ],
}


def test_record_file_protocol_messages_are_not_calls() -> None:
    got = calls(RECORD)
    assert [(c.tool, c.args) for c in got] == [
        ("search", {"q": "x"}),
        ("fetch", {"u": 1}),
        ("fetch", {"u": 2}),
    ]
    assert got[0].result == "found" and got[0].duration == 0.12 and not got[0].is_error
    assert got[1].is_error and got[1].error == "404" and got[1].result is None
    assert got[1].duration == 0.5
    assert got[2].is_error and got[2].error == "bad params"
    assert got[2].metadata["error_code"] == -32602
    assert got[0].metadata == {
        "format": "mcp",
        "method": "tools/call",
        "jsonrpc_id": 1,
        "is_error": False,
    }


def test_ids_are_type_aware() -> None:
    got = calls(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}},
        {"jsonrpc": "2.0", "id": "1", "result": {"structuredContent": {"v": "wrong"}}},
        {"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"v": "right"}}},
    )
    assert len(got) == 1 and got[0].result == {"v": "right"}


def test_pending_until_response_and_close() -> None:
    dialect = MCPDialect()
    out = Batch()
    dialect.item(
        {"jsonrpc": "2.0", "id": "r", "method": "tools/call", "params": {"name": "a"}}, None, out
    )
    dialect.item(
        {"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {"name": "b"}}, None, out
    )
    assert len(out.calls) == 2 and out.done == []
    later = Batch()
    dialect.item({"jsonrpc": "2.0", "id": "s", "result": {"ok": True}}, None, later)
    assert [c.tool for c in later.done] == ["b"] and later.done[0].result == {"ok": True}
    end = Batch()
    dialect.close(end)
    assert [c.tool for c in end.done] == ["a"] and end.done[0].result is None


def test_request_without_id_bool_id_and_string_error() -> None:
    got = calls(
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "n1"}},
        {"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {"name": "n2"}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "n3"}},
        {"jsonrpc": "2.0", "id": 5, "error": "boom"},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {}},
    )
    assert [c.tool for c in got] == ["n1", "n2", "n3"]
    assert got[2].is_error and got[2].error == "boom"
    assert got[0].complete and got[0].args == {}


def test_duplicate_request_id_replaces_the_older_one() -> None:
    got = calls(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "b"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"content": []}},
    )
    assert [(c.tool, c.result) for c in got] == [("a", None), ("b", "")]


def test_duration_from_timestamps() -> None:
    got = calls(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "a"},
            "timestamp": "2024-01-01T00:00:00Z",
        },
        {"jsonrpc": "2.0", "id": 1, "result": {}, "timestamp": "2024-01-01T00:00:01.5Z"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "b"},
            "timestamp": 10,
        },
        {"jsonrpc": "2.0", "id": 2, "result": {}, "timestamp": 10.25},
    )
    assert [c.duration for c in got] == [1.5, 0.25]


def test_batch_arrays_and_bad_arguments() -> None:
    got = calls(
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "a", "arguments": "{x"},
            },
            {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "t"}]}},
        ]
    )
    assert [(c.tool, c.args, c.result) for c in got] == [("a", {}, "t")]


def test_content_rendering() -> None:
    text = content_to_text(
        [
            {"type": "text", "text": "a"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "image/png"}},
            {"type": "resource_link", "uri": "u://1", "name": "n"},
            {"type": "image", "mimeType": "image/png", "data": "..."},
            {"type": "mystery"},
        ]
    )
    assert text == (
        "a\n[resource file:///x]\nbody\n[binary resource file:///b (image/png)]\n"
        "[resource link u://1 n]\n[image (image/png)]"
    )


def test_from_mcp_dicts() -> None:
    assert from_mcp(RECORD)[1] == {
        "tool": "fetch",
        "args": {"u": 1},
        "is_error": True,
        "error": "404",
        "duration": 0.5,
        "id": 2,
    }


json_values = json_like(["jsonrpc", "id", "method", "params", "result", "error", "name", "x"])


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6))
def test_arbitrary_json_never_raises(items: list[Any]) -> None:
    assert_numbered(calls(*items))


@settings(max_examples=100, deadline=None)
@given(st.permutations(list(range(6))), st.lists(st.booleans(), min_size=6, max_size=6))
def test_responses_in_any_order_pair_by_id(order: list[int], string_ids: list[bool]) -> None:
    ids: list[Any] = [str(i) if s else i for i, s in enumerate(string_ids)]
    requests = [
        {"jsonrpc": "2.0", "id": ids[i], "method": "tools/call", "params": {"name": f"t{i}"}}
        for i in range(6)
    ]
    responses = [
        {"jsonrpc": "2.0", "id": ids[i], "result": {"structuredContent": {"i": i}}} for i in order
    ]
    got = calls(*requests, *responses)
    assert [c.tool for c in got] == [f"t{i}" for i in range(6)]
    assert [c.result for c in got] == [{"i": i} for i in range(6)]


# --- streamed reading agrees with the in-memory helper ---------------------------------------


@pytest.mark.parametrize(
    ("layout", "prefix"),
    [("record", "messages.item"), ("list", "item"), ("jsonl", ""), ("jsonl.gz", "")],
)
def test_streamed_matches_from_mcp(tmp_path: Path, layout: str, prefix: str) -> None:
    messages = RECORD["messages"]
    if layout == "record":
        raw = json.dumps(RECORD).encode()
    elif layout == "list":
        raw = json.dumps(messages, indent=2).encode()
    else:
        raw = "\n".join(json.dumps(m) for m in messages).encode()
    path = tmp_path / f"trace.{layout if layout != 'record' else 'json'}"
    path.write_bytes(gzip.compress(raw) if layout.endswith(".gz") else raw)
    found = detect(raw, final=True)
    assert (found.dialect, found.prefix) == ("mcp", prefix)
    expected = from_mcp(RECORD)
    assert len(expected) == 3 and streamed(path) == expected


def test_single_message_document_is_mcp() -> None:
    raw = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}).encode()
    assert detect(raw, final=True).dialect == "mcp"


@pytest.mark.anyio
async def test_async_reader_pairs_across_chunks() -> None:
    raw = "\n".join(json.dumps(m) for m in RECORD["messages"]).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(raw), 5):
            yield raw[start : start + 5]

    found: list[ToolCall] = []
    done: list[ToolCall] = []
    async for batch in aiter_batches(chunks()):
        assert batch.error is None
        found.extend(batch.calls)
        done.extend(batch.done)
    assert [call_to_dict(c) for c in found] == from_mcp(RECORD)
    assert sorted(c.index for c in done) == [0, 1, 2]
