"""The custom format's whole-chunk path (CustomBlock) gives exactly what the item path gives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from toolscore import evaluate_trace
from toolscore.calls import Batch, ToolCall
from toolscore.columns import ListColumns
from toolscore.reports.json import CallSpool
from toolscore.sources import iter_batches
from toolscore.sources.custom import CustomBlock, CustomDialect

GOLD = [
    {"tool": "search", "args": {"q": "weather"}},
    {"tool": "fetch", "args": {"url": "https://x"}},
    {"tool": "search", "args": None},
]
RULES = [
    {"tool": "run_shell", "args": {"command": {"$contains": "rm -rf"}}, "reason": "no"},
    {"tool": "fetch", "reason": "no fetching"},
]

falsy = st.sampled_from(["", 0, 0.0, -0.0, [], {}, False, None])
results = falsy | st.sampled_from(["ok", "  ", 1, -0.5, 0.25, True, [0], {"a": 0}, "é"])
numbers = st.sampled_from([None, 0, 0.0, 1, 2.5, -1, True, "3", 10**20])
plain_call = st.fixed_dictionaries(
    {"tool": st.sampled_from(["search", "fetch", "run_shell", "write"])},
    optional={
        "args": st.sampled_from(
            [{}, {"q": "weather"}, {"q": " weather "}, {"url": "https://x", "n": 1},
             {"command": "rm -rf /"}, {"token": "sk-ant-" + "aB3" * 10}, {"q": 1.0}]
        ),
        "result": results,
        "duration": numbers,
        "timestamp": numbers,
        "cost": numbers,
        "is_error": st.sampled_from([True, False, "true", 1, None]),
        "error": st.sampled_from(["timeout", "", True, False, None, {"code": 1}, 0]),
        "id": st.sampled_from(["c1", 7, None]),
        "source": st.sampled_from(["bench", None]),
        "metadata": st.sampled_from([{"k": 1}, None]),
    },
)  # fmt: skip
odd_call = st.sampled_from(
    [
        {"name": "search", "arguments": {"q": "x"}},
        {"tool": "search", "output": "done"},
        {"tool": "", "args": {}},
        {"tool": 5},
        {"tool": "fetch", "args": [1, 2]},
        {"tool": "fetch", "elapsed": 2},
        {"calls": [{"tool": "search"}, {"tool": "fetch"}]},
    ]
)
line = (
    plain_call.map(lambda c: json.dumps(c, separators=(",", ":")))
    | plain_call.map(json.dumps)  # spaces after separators
    | plain_call.map(lambda c: json.dumps(c, ensure_ascii=False))
    | plain_call.map(lambda c: json.dumps(c, indent=None, separators=(", ", " : ")))
    | odd_call.map(json.dumps)
    | st.sampled_from(["", "   ", "{not json", '{"tool": "search", "args": {"q": NaN}}'])
)


def _read(path: Path, chunk_size: int, *, blocks: bool) -> tuple[list[ToolCall], list[Any], int]:
    old = CustomDialect.reads_blocks
    CustomDialect.reads_blocks = blocks
    try:
        calls: list[ToolCall] = []
        findings: list[Any] = []
        used = 0
        for batch in iter_batches(path, "jsonl", chunk_size=chunk_size):
            used += batch.block is not None
            calls += batch.calls
            findings += [(f.kind, f.message, str(f.location)) for f in batch.findings]
        return calls, findings, used
    finally:
        CustomDialect.reads_blocks = old


def _evaluate(path: Path, tmp: Path, *, blocks: bool) -> tuple[dict[str, Any], Any]:
    old = CustomDialect.reads_blocks
    CustomDialect.reads_blocks = blocks
    try:
        with CallSpool(tmp) as spool:
            result = evaluate_trace(GOLD, path, "jsonl", forbidden=RULES, on_calls=spool)
            out = tmp / f"report-{blocks}.json"
            from toolscore.reports.json import write_json_report

            write_json_report(result, out, spool)
        record = result.to_dict()
        record["findings"] = [f.to_json() for f in result.findings]
        report = json.loads(out.read_bytes())
        del report["timestamp"]
        # results are written as recorded (the whitespace of their line kept), so compare
        # the report's JSON values, not its bytes
        return record, report
    finally:
        CustomDialect.reads_blocks = old


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(line, min_size=1, max_size=25), chunk=st.sampled_from([64, 300, 1 << 20]))
@example(  # a falsy error on a failed call: no error text either way
    lines=['{"tool":"search","args":{},"id":"c1","is_error":true,"error":0}'], chunk=64
)
def test_blocks_read_what_items_read(tmp_path: Path, lines: list[str], chunk: int) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fast, fast_findings, used = _read(path, chunk, blocks=True)
    event(f"read as blocks: {used > 0}")
    slow, slow_findings, used = _read(path, chunk, blocks=False)
    assert used == 0
    assert fast == slow
    assert [c.location for c in fast] == [c.location for c in slow]
    assert fast_findings == slow_findings
    assert _evaluate(path, tmp_path, blocks=True) == _evaluate(path, tmp_path, blocks=False)


def test_plain_lines_are_read_as_blocks_with_their_extra_keys(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    calls = [
        {"tool": "search", "args": {"q": "x"}, "result": "", "trace_id": "t1", "index": i}
        for i in range(50)
    ]
    calls[7].update(error="timeout", duration=0)
    path.write_text("".join(json.dumps(c) + "\n" for c in calls))
    batches = list(iter_batches(path, "jsonl"))
    assert [b.block is not None for b in batches] == [True, False]  # the last: close()
    block = batches[0].block
    assert isinstance(block, CustomBlock)
    assert block.failed() == [7]
    assert block.error(7) == "timeout"
    assert block.durations() == []  # 0 is "no duration", as Toolscore's `or` reads it
    call = block.call(7)
    assert call.metadata == {"error": "timeout", "trace_id": "t1", "index": 7}
    assert call.result is None  # "" falls through `result or output`
    assert call.location is not None and call.location.line == 8
    lines = block.records()
    assert json.loads(lines[7]) == {
        "tool": "search",
        "args": {"q": "x"},
        "result": None,
        "is_error": True,
        "error": "timeout",
        "duration": None,
        "cost": None,
    }


def test_a_key_that_changes_the_reading_sends_the_chunk_down_the_item_path(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"tool": "a"}\n{"name": "b", "arguments": {"x": 1}}\n')
    (batch,) = [b for b in iter_batches(path, "jsonl") if b.n_calls]
    assert batch.block is None
    assert [(c.tool, c.args) for c in batch.calls] == [("a", {}), ("b", {"x": 1})]


def test_the_fast_path_gives_up_after_failing_chunks(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"name": "b"}\n' * 40)
    batches = list(iter_batches(path, "jsonl", chunk_size=14))
    assert not any(b.block is not None for b in batches)
    assert sum(b.n_calls for b in batches) == 40


def test_batch_of_a_block_turns_into_lists_when_changed() -> None:
    dialect = CustomDialect("t")
    block = dialect.block(b'[{"tool":"a"},{"tool":"b","error":"x"}]', 2, 1)
    assert block is not None
    batch = Batch(block=block)
    assert (batch.n_calls, batch.n_done, batch.empty) == (2, 2, False)
    assert batch.columns() is block and batch.done_columns() is block
    assert batch.calls == batch.done
    batch.done = batch.done[:1]
    assert batch.block is None
    assert [c.tool for c in batch.calls] == ["a", "b"]
    assert isinstance(batch.done_columns(), ListColumns)
    assert batch.done_columns().tools == ["a"]


def _iter_lines(n: int) -> Iterator[str]:
    for i in range(n):
        yield json.dumps({"tool": "t", "args": {"i": i}, f"k{i}": 1})


def test_too_many_extra_keys_fall_back_to_items(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_iter_lines(40)) + "\n")
    batches = list(iter_batches(path, "jsonl"))
    assert not any(b.block is not None for b in batches)
    calls = [c for b in batches for c in b.calls]
    assert [c.metadata for c in calls][:2] == [{"k0": 1}, {"k1": 1}]


@pytest.mark.parametrize("text", [b"[", b'[{"tool":"a"}', b'[{"tool":"a"},{"tool":1}]'])
def test_a_block_that_does_not_decode_is_none(text: bytes) -> None:
    dialect = CustomDialect("t")
    assert dialect.block(text, 1, 1) is None
    assert dialect.next_index == 0


def test_a_large_block_writes_the_same_records_on_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolscore.sources import _custom_block  # where ONE_PER_LINE is read

    lines = [
        json.dumps({"tool": "t", "args": {"i": i}, "result": [" "] if i % 7 else "", "error": "x"})
        for i in range(100)
    ]
    dialect = CustomDialect("t")
    block = dialect.block_lines([("\n".join(lines)).encode()], 100, 1)
    assert block is not None
    sep = b",\n  "
    texts = []
    for one_per_line in (1000, 64):
        monkeypatch.setattr(_custom_block, "ONE_PER_LINE", one_per_line)
        out: list[bytes] = []
        assert block.write_records(out.append, sep) == 100
        texts.append(b"".join(bytes(piece) for piece in out))
    assert texts[0].count(b"\n") == 100 and texts[1].count(b"\n") == 1
    records = [json.loads(b"[" + t[: -len(sep)] + b"]") for t in texts]
    assert records[0] == records[1] == [json.loads(r) for r in block.records()]
