"""A checks-only run (no gold) saves a baseline of its findings, one entry per trace, with no
score and no grade; a later run with a new finding fails against it (one trace and a
dataset alike)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _cli import run_cli
from toolscore.baseline import TraceSummary

CALM = {"trace_id": "a", "tool": "bash", "args": {"cmd": "ls"}}
RISKY = {"trace_id": "b", "tool": "rm", "args": {"path": "/"}}


def _lines(path: Path, *calls: dict[str, object]) -> None:
    path.write_text("".join(json.dumps(call) + "\n" for call in calls))


@pytest.mark.parametrize("dataset", [False, True], ids=["one trace", "dataset"])
def test_a_checks_only_baseline_keeps_every_trace_and_catches_a_new_finding(
    tmp_path: Path, dataset: bool
) -> None:
    (tmp_path / "forbidden.json").write_text(json.dumps([{"tool": "rm"}]))
    traces = tmp_path / "traces"
    traces.mkdir()
    first = traces / "run.jsonl"
    if dataset:
        _lines(first, CALM, dict(RISKY, tool="cat"))
    else:
        _lines(first, CALM)
    target = str(traces if dataset else first)
    key = ["--trace-key", "trace_id"] if dataset else []
    saved = run_cli(
        "eval", target, *key, "--forbidden", "forbidden.json",
        "--save-baseline", "base.json", "-o", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    stored = json.loads((tmp_path / "base.json").read_text())
    entries = stored["traces"]
    assert len(entries) == (2 if dataset else 1)
    for name, entry in entries.items():
        assert entry["score"] is None and entry["grade"] is None, entry
        assert TraceSummary.from_json(entry, name).score is None
    assert stored["aggregate"]["traces"] == len(entries)
    assert stored["aggregate"]["mean_score"] is None

    if dataset:
        _lines(first, CALM, RISKY)
    else:
        _lines(first, RISKY)
    again = run_cli(
        "eval", target, *key, "--forbidden", "forbidden.json",
        "--baseline", "base.json", "-o", "out2.json", cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 1, again.stdout + again.stderr
    assert "forbidden_call" in again.stdout + again.stderr
