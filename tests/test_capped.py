"""Long lists in one line of a report are capped with a count (the JSON report has them all)."""

from __future__ import annotations

import json
from pathlib import Path

from _cli import EXAMPLE, run_cli
from toolscore.capped import join_capped


def test_join_capped() -> None:
    assert join_capped(["a", "b"]) == "a, b"
    assert join_capped(["a", "b", "c"], limit=2) == "a, b, ... and 1 more"
    assert join_capped((str(i) for i in range(50_000)), 50_000, limit=3) == (
        "0, 1, 2, ... and 49,997 more"
    )


def test_fifty_thousand_failed_tools(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    with open(trace, "w", encoding="utf-8") as fh:
        for i in range(50_000):
            fh.write(json.dumps({"tool": f"tool_{i}", "error": "boom"}) + "\n")
    md, page, report = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.json"
    proc = run_cli(
        "eval", str(EXAMPLE / "gold.json"), str(trace),
        "-o", str(report), "--markdown", str(md), "--html", str(page),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for text in (proc.stdout, md.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")):
        assert max(map(len, text.splitlines())) < 5_000
        assert "50000 of 50000 tool calls failed (tool_0, tool_1," in text
        assert "... and 49,980 more)" in text
    record = json.loads(report.read_text(encoding="utf-8"))
    assert record["metrics"]["efficiency_metrics"]["error_count"] == 50_000
    assert len(record["findings"]) >= 1
