"""The three entry points drive one pipeline: same answers from a list, a JSON file, a JSON
Lines file, a gzip file and an async stream."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolscore import evaluate, evaluate_stream, evaluate_trace
from toolscore.calls import Finding

TOOLS = ["search", "fetch", "run_shell", "summarize"]

arg_values = st.one_of(
    st.integers(-3, 3), st.sampled_from(["a", "b", " a ", "NYC"]), st.booleans(), st.none()
)
args = st.dictionaries(st.sampled_from(["q", "url", "n"]), arg_values, max_size=3)
call = st.fixed_dictionaries(
    {"tool": st.sampled_from(TOOLS), "args": args},
    optional={"error": st.sampled_from(["timeout", ""]), "is_error": st.booleans()},
)
gold_call = st.fixed_dictionaries(
    {"tool": st.sampled_from(TOOLS)}, optional={"args": st.one_of(st.none(), args)}
)


def _numbers(result: Any) -> dict[str, Any]:
    record = result.to_dict()
    record["metrics"]["trajectory_metrics"].pop("trajectory_details", None)
    record.pop("calls")
    return record


def _write_traces(tmp: Path, trace: list[dict[str, Any]]) -> dict[str, Path]:
    paths = {
        "json": tmp / "trace.json",
        "jsonl": tmp / "trace.jsonl",
        "calls": tmp / "calls.json",
        "gz": tmp / "trace.jsonl.gz",
    }
    paths["json"].write_text(json.dumps(trace))
    lines = "".join(json.dumps(c) + "\n" for c in trace)
    paths["jsonl"].write_text(lines)
    paths["calls"].write_text(json.dumps({"calls": trace}))
    paths["gz"].write_bytes(gzip.compress(lines.encode()))
    return paths


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(gold=st.lists(gold_call, max_size=5), trace=st.lists(call, min_size=1, max_size=8))
def test_same_answers_from_every_input_shape(
    tmp_path: Path, gold: list[dict[str, Any]], trace: list[dict[str, Any]]
) -> None:
    expected = _numbers(evaluate(gold, trace, forbidden=[{"tool": "run_shell"}]))
    gold_path = tmp_path / "gold.json"
    gold_path.write_text(json.dumps(gold))
    rules = tmp_path / "rules.json"
    rules.write_text('[{"tool": "run_shell"}]')
    for path in _write_traces(tmp_path, trace).values():
        got = _numbers(evaluate_trace(gold_path, path, forbidden=rules))
        assert got == expected, path.name

    async def stream() -> dict[str, Any]:
        async def chunks() -> AsyncIterator[bytes]:
            data = _write_traces(tmp_path, trace)["jsonl"].read_bytes()
            for i in range(0, len(data), 7):
                yield data[i : i + 7]

        return _numbers(await evaluate_stream(gold, chunks(), forbidden=rules))

    assert anyio.run(stream) == expected


def test_evaluate_works_inside_a_running_event_loop() -> None:
    async def inner() -> float:
        return evaluate([{"tool": "a"}], [{"tool": "a"}]).score

    assert anyio.run(inner) == pytest.approx(1.0)


@pytest.mark.anyio
async def test_findings_arrive_before_the_next_call_is_sent() -> None:
    """Feed calls one at a time; each finding is seen before the next call is produced."""
    seen: list[str] = []
    sent: list[int] = []

    async def agent_loop() -> AsyncIterator[dict[str, Any]]:
        calls = [
            {"tool": "run_shell", "args": {"command": "rm -rf /"}},
            {"tool": "http_post", "args": {"body": {"text": "key AKIAIOSFODNN7EXAMPLE"}}},
            {"tool": "deploy", "args": {"env": "prod"}, "error": "denied"},
        ]
        for i, c in enumerate(calls):
            # the finding for the previous call must already be here
            assert len(seen) >= i, (seen, i)
            sent.append(i)
            yield c
            await anyio.lowlevel.checkpoint()

    def on_finding(batch: list[Finding]) -> None:
        seen.extend(f.message for f in batch)

    result = await evaluate_stream(
        [{"tool": "deploy"}],
        agent_loop(),
        forbidden=[{"tool": "run_shell"}],
        on_finding=on_finding,
    )
    assert sent == [0, 1, 2]
    assert seen[0].startswith("call 1 run_shell matches forbidden rule 1")
    assert "aws_access_key_id" in seen[1] and "AKIAIOSFODNN7EXAMPLE" not in seen[1]
    assert seen[2].startswith("call 3 deploy failed")
    assert result.trace_calls_count == 3


def test_streamed_file_results_do_not_keep_calls(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "a"}]')
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"tool": "a"}\n{"tool": "b"}\n')
    result = evaluate_trace(gold, trace)
    assert result.trace_calls is None
    assert result.trace_calls_count == 2
    assert result.to_dict()["trace_calls_count"] == 2
    kept = evaluate_trace(gold, trace, keep_calls=True)
    assert kept.trace_calls is not None and [c.tool for c in kept.trace_calls] == ["a", "b"]


def test_truncated_trace_is_evaluated_up_to_the_fault(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "a"}, {"tool": "b"}]')
    trace = tmp_path / "t.json"
    trace.write_text('[{"tool": "a"}, {"tool": "b"}, {"tool": "c", "args": {"x": ')
    result = evaluate_trace(gold, trace)
    assert result.input_error is not None
    assert "t.json" in str(result.input_error)
    assert result.trace_calls_count == 2
    assert result.required_call_recall == 1.0
