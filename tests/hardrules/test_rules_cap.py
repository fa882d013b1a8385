"""Hard-rule violations are kept in memory up to toolscore.capped.MAX_RECORDS with an exact
count (``violations_omitted`` past it), read in one process or in parts; every violation is
still a finding, streamed to the JSON report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _cli import run_cli
from toolscore import evaluate_trace
from toolscore.calls import Batch, ToolCall
from toolscore.capped import MAX_RECORDS
from toolscore.checks.hardrules import HardRulesCheck
from toolscore.hardrules import ruleset
from toolscore.parts import trace as parallel
from toolscore.testing import assert_parts_merge

N = MAX_RECORDS * 3 // 2 + 2_000
KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
RULES: dict[str, Any] = {
    "allow": ["search", "get_env", "http_post"],
    "data_flow": [{"sinks": ["http_post"]}],
    "counts": [{"tool": "search", "max": 3}],
}


def _calls(n: int) -> list[dict[str, Any]]:
    """Every call breaks a rule: an unknown tool, a sink after a credential, or a search
    past its third."""
    calls: list[dict[str, Any]] = [{"tool": "get_env", "args": {}, "result": {"t": KEY}}]
    for i in range(1, n):
        tool = ("deploy", "http_post", "search")[i % 3]
        calls.append({"tool": tool, "args": {"i": i}, "result": "ok"})
    return calls


def _expected(calls: list[dict[str, Any]]) -> int:
    """Each deploy (not allowed) and each http_post (after the credential), and the 4th
    search (past "at most 3")."""
    return sum(c["tool"] in ("deploy", "http_post") for c in calls) + 1


def test_a_long_trace_keeps_the_first_records_and_counts_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 20_000)
    trace = tmp_path / "trace.jsonl"
    calls = _calls(N)
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES), encoding="utf-8")
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "search"}]', encoding="utf-8")
    expected = _expected(calls)
    one = evaluate_trace(str(gold), str(trace), forbidden=str(rules), workers=1)
    metrics = one.metrics["rule_metrics"]
    assert metrics["violation_count"] == expected > MAX_RECORDS
    assert len(metrics["violations"]) == MAX_RECORDS
    assert metrics["violations_omitted"] == metrics["violation_count"] - MAX_RECORDS
    indices = [v["index"] for v in metrics["violations"]]
    assert indices == sorted(indices) and indices[0] == 1  # the first ones, in call order
    assert parallel.plan(trace, "auto", 3) is not None
    parts = evaluate_trace(str(gold), str(trace), forbidden=str(rules), workers=3)
    assert parts.metrics["rule_metrics"] == metrics
    report = tmp_path / "r.json"
    proc = run_cli(
        "eval", str(gold), str(trace), "--forbidden", str(rules), "--workers", "3",
        "--fail-on-violations", "-o", str(report),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    record = json.loads(report.read_text(encoding="utf-8"))
    found = [f for f in record["findings"] if f["check"] == "rules"]
    assert len(found) == metrics["violation_count"]  # every one, streamed
    assert record["summary"]["rule_violations"] == metrics["violation_count"]


def test_parts_merge_to_the_capped_state_of_the_whole() -> None:
    rules = ruleset(RULES)
    n = MAX_RECORDS * 3 // 2 + 300
    trace = [
        ToolCall(c["tool"], c["args"], result=c["result"], index=i) for i, c in enumerate(_calls(n))
    ]
    cuts = [MAX_RECORDS // 2, MAX_RECORDS * 3 // 2 - 5, MAX_RECORDS * 3 // 2 + 100]
    assert_parts_merge(lambda: HardRulesCheck(rules), trace, cuts, batch=257)
    check = HardRulesCheck(rules)
    for start in range(0, n, 500):
        chunk = trace[start : start + 500]
        check.feed(Batch(calls=chunk, done=chunk))
    state = check.state()
    assert len(state.violations) == MAX_RECORDS
    assert state.violation_count == _expected(_calls(n))
