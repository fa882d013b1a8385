"""A hard rule whose pattern match cannot be decided in time fails closed, as a forbidden
rule does: the match counts (a data-flow source), and the violation says it was undecided;
a matcher compared with ``==`` (the expected check, the match modes) counts it as no match
instead of stopping the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _cli import run_cli
from toolscore import evaluate
from toolscore.hardrules import ruleset_from_json
from toolscore.matchers import Regex

HOSTILE = "a" * 99 + "!\n"  # $ before a final newline: Python's re, under the time bound
UNDECIDED = "undecided: its pattern took too long to match, counted as a match"
FLOW: dict[str, Any] = {
    "data_flow": {
        "sinks": ["http_post"],
        "credentials": False,
        "sources": [{"tool": "read_file", "args": {"path": {"$regex": "(a+)+$"}}}],
    }
}
# reads whose match falls to Python's re (a path ending in a newline) and backtracks 2**99
# ways: the first cannot be decided in time (the others neither: the budget is spent); a
# sink after them
TRACE = [
    *[{"tool": "read_file", "args": {"path": HOSTILE}, "result": "x"}] * 5,
    {"tool": "read_file", "args": {"path": "aaa\n"}, "result": "x"},
    {"tool": "http_post", "args": {"url": "https://x"}, "result": "ok"},
]


def test_an_undecided_data_flow_source_is_a_source_and_says_so() -> None:
    result = evaluate([], TRACE, rules=ruleset_from_json(FLOW))
    assert [(v["rule"], v["index"]) for v in result.rule_violations] == [("data_flow", 6)]
    message = result.rule_violations[0]["message"]
    assert f"after call 1 read_file (matched source 1; {UNDECIDED})" in message
    assert result.verdict().violations.rules == 1


def test_an_undecided_data_flow_source_fails_the_cli(tmp_path: Path) -> None:
    (tmp_path / "rules.json").write_text(json.dumps(FLOW))
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(c) + "\n" for c in TRACE))
    got = run_cli(
        "eval", "trace.jsonl", "--forbidden", "rules.json", "--fail-on-violations", cwd=tmp_path
    )
    assert got.returncode == 1, got.stdout + got.stderr
    assert UNDECIDED in " ".join(got.stdout.split())


def test_an_undecided_gold_pattern_is_no_match_not_a_crash(tmp_path: Path) -> None:
    # a gold argument whose pattern cannot be decided: the call is not matched (a lower
    # score, a failed match mode), and the run goes on (it raised PatternTimeout)
    gold = [{"tool": "read_file", "args": {"path": {"$regex": "(a+)+$"}}}]
    calls = [{"tool": "read_file", "args": {"path": HOSTILE}}] * 5
    (tmp_path / "gold.json").write_text(json.dumps(gold))
    python_gold = [{"tool": "read_file", "args": {"path": Regex("(a+)+$")}}]
    result = evaluate(python_gold, calls, rules={"match": ["superset"]})
    assert result.score < 1
    assert result.match_verdicts == {"superset": False}
    (tmp_path / "rules.json").write_text(json.dumps({"match": ["superset"]}))
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    got = run_cli(
        "eval", "gold.json", "trace.jsonl", "--forbidden", "rules.json", "--fail-on-violations",
        cwd=tmp_path,
    )  # fmt: skip
    assert got.returncode == 1, got.stdout + got.stderr
    assert "internal error" not in got.stderr
