"""The real corpus traces, turned back into the OpenAI chat form they were recorded in, read
back as the same calls (names, arguments, results, failures)."""

from __future__ import annotations

import json
from itertools import groupby
from pathlib import Path
from typing import Any

import orjson
import pytest

from toolscore.sources import iter_batches


def _openai_messages(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
    for call in calls:
        cid = f"call_{call['index']}"
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": call["tool"], "arguments": json.dumps(call["args"])},
                    }
                ],
            }
        )
        tool_msg: dict[str, Any] = {"role": "tool", "tool_call_id": cid}
        tool_msg["content"] = call.get("result")
        if call.get("is_error"):
            tool_msg["is_error"] = True
        messages.append(tool_msg)
    return messages


@pytest.mark.parametrize("name", ["tau-bench-airline.jsonl", "toolbench.jsonl"])
@pytest.mark.parametrize("layout", ["json", "jsonl"])
def test_corpus_reads_back_from_openai_form(
    corpus: Path, tmp_path: Path, name: str, layout: str
) -> None:
    rows = [orjson.loads(line) for line in (corpus / name).read_bytes().splitlines() if line]
    traces = [list(g) for _, g in groupby(rows, key=lambda r: r["trace_id"])]
    assert sum(len(t) for t in traces) == len(rows)
    for i, trace in enumerate(traces[:40]):
        messages = _openai_messages(trace)
        path = tmp_path / f"t{i}.{layout}"
        if layout == "json":
            path.write_text(json.dumps({"messages": messages}))
        else:
            path.write_text("".join(json.dumps(m) + "\n" for m in messages))
        got = [c for b in iter_batches(path) for c in b.done]
        assert [c.tool for c in got] == [r["tool"] for r in trace]
        assert [c.args for c in got] == [r["args"] for r in trace]
        assert [c.result for c in got] == [r.get("result") for r in trace]
        assert [c.is_error for c in got] == [bool(r.get("is_error")) for r in trace]
