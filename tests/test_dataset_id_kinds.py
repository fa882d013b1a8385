"""Trace ids compare as text (``1`` and ``"1"`` name one trace, as a keyed gold's do), and a
file whose ids are strings on some lines and numbers on others is said to be one, never
merged in silence: in every way a multi-trace file is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _cli import run_cli
from toolscore.dataset import evaluate_dataset

GOLD = [{"tool": "a"}]
SHAPES = {
    "contiguous": [1, 1, "1", "1"],
    "interleaved": [1, "1", 1, "1"],
    "apart": ["1", "2", 1],
}


def _write(path: Path, ids: list[object]) -> None:
    path.write_text("".join(json.dumps({"trace_id": i, "tool": "a"}) + "\n" for i in ids))


@pytest.mark.parametrize("engine", ["inline", "local"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_ids_of_both_kinds_are_said(tmp_path: Path, shape: str, engine: str) -> None:
    traces = tmp_path / "traces.jsonl"
    _write(traces, SHAPES[shape])
    result = evaluate_dataset(GOLD, str(traces), trace_key="trace_id", engine=engine, workers=1)
    try:
        calls = {r.trace_id: r.calls for r in result}
        assert calls["1"] == SHAPES[shape].count(1) + SHAPES[shape].count("1")
        said = [p for p in result.problems if "strings on some lines and numbers" in p]
        assert len(said) == 1, result.problems
        assert said[0].startswith(f"{traces}: the 'trace_id' ids")
        assert '(1 and "1") name one trace' in said[0]
    finally:
        result.close()


def test_a_scattered_file_says_it_once(tmp_path: Path) -> None:
    # a file whose lines interleave, cut into byte ranges whose lines are scattered by trace
    traces = tmp_path / "traces.jsonl"
    ids: list[object] = [1, "1", 2, "x"] * 200
    traces.write_text(
        "".join(
            json.dumps({"trace_id": i, "tool": "a", "args": {"pad": "y" * 50}}) + "\n" for i in ids
        )
    )
    result = evaluate_dataset(
        GOLD, str(traces), trace_key="trace_id", engine="local", workers=2,
        part_bytes=4096, interleaved=True,
    )  # fmt: skip
    try:
        assert {r.trace_id: r.calls for r in result} == {"1": 400, "2": 200, "x": 200}
        assert len([p for p in result.problems if "numbers on others" in p]) == 1
    finally:
        result.close()


@pytest.mark.parametrize("ids", [[1, 2, 1, 3], ["1", "2", "1"]], ids=["numbers", "strings"])
def test_ids_of_one_kind_say_nothing(tmp_path: Path, ids: list[object]) -> None:
    traces = tmp_path / "traces.jsonl"
    _write(traces, ids)
    result = evaluate_dataset(GOLD, str(traces), trace_key="trace_id", engine="inline")
    try:
        assert sorted(r.trace_id for r in result) == sorted({str(i) for i in ids})
        assert not [p for p in result.problems if "numbers" in p]
    finally:
        result.close()


def test_the_command_says_it_and_keeps_it_in_the_report(tmp_path: Path) -> None:
    _write(tmp_path / "traces.jsonl", SHAPES["interleaved"])
    (tmp_path / "gold.json").write_text(json.dumps(GOLD))
    got = run_cli(
        "eval", "gold.json", "traces.jsonl", "--trace-key", "trace_id", "-o", "r.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert '(1 and "1") name one trace' in got.stderr
    report = (tmp_path / "r.json").read_text()
    assert '(1 and \\"1\\") name one trace' in report
