"""Hostile and malformed rule files through the real command line (``eval`` and ``watch`` on
a real pipe): a catastrophic pattern finishes, a slow fallback becomes a finding."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from _cli import cli_env, run_cli

HOSTILE = "a" * 99 + "!"  # 100 characters: (a+)+$ backtracks 2**99 ways on Python's re


def _files(tmp_path: Path, commands: list[str]) -> tuple[Path, Path, Path, Path]:
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps([{"tool": "run_shell", "args": {"command": {"$regex": "(a+)+$"}}}]), "utf-8"
    )
    calls = [{"tool": "run_shell", "args": {"command": c}} for c in commands]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls), "utf-8")
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"tool": "run_shell"}]), "utf-8")
    empty = tmp_path / "none.json"
    empty.write_text("[]", "utf-8")
    return rules, trace, gold, empty


def _timed_eval(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    began = time.perf_counter()
    proc = run_cli("eval", *args)
    return time.perf_counter() - began, proc


def test_catastrophic_regex_finishes_in_eval(tmp_path: Path) -> None:
    rules, trace, gold, empty = _files(tmp_path, [HOSTILE, "aaa"])
    out = tmp_path / "out.json"
    base, proc = _timed_eval(str(gold), str(trace), "--forbidden", str(empty), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    took, proc = _timed_eval(str(gold), str(trace), "--forbidden", str(rules), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert took - base < 1.0, (took, base)  # the rule's share of the run: under a second
    findings = json.loads(out.read_text("utf-8"))["findings"]
    assert [(f["kind"], f["call_index"]) for f in findings] == [("forbidden_call", 1)]


def test_slow_fallback_becomes_a_finding_in_eval(tmp_path: Path) -> None:
    # Python's $ matches before a final newline, so this text runs on Python's re, bounded
    rules, trace, gold, _ = _files(tmp_path, [HOSTILE + "\n", "aaa"])
    out = tmp_path / "out.json"
    took, proc = _timed_eval(str(gold), str(trace), "--forbidden", str(rules), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert took < 10
    findings = json.loads(out.read_text("utf-8"))["findings"]
    assert [(f["kind"], f["severity"], f["message"]) for f in findings] == [
        ("rule_timeout", "warning", "rule 1 timed out on call 1 run_shell (counted as no match)"),
        ("forbidden_call", "error", "call 2 run_shell matches forbidden rule 1"),
    ]


def test_catastrophic_regex_finishes_in_watch_on_a_pipe(tmp_path: Path) -> None:
    rules, trace, _, _ = _files(tmp_path, [HOSTILE, HOSTILE + "\n", "aaa"])
    found = tmp_path / "found.jsonl"
    began = time.perf_counter()
    args = ["watch", "--forbidden", str(rules), "--findings", str(found)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    out, err = proc.communicate(trace.read_bytes(), timeout=30)
    took = time.perf_counter() - began
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    assert "WARNING  rule 1 timed out on call 2 run_shell (counted as no match)" in text
    assert "ERROR    call 3 run_shell matches forbidden rule 1" in text
    kinds = [json.loads(line)["kind"] for line in found.read_text("utf-8").splitlines()]
    assert kinds == ["rule_timeout", "forbidden_call"]
    assert took < 10
