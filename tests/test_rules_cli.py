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
UNDECIDED = "(undecided: its pattern took too long to match, counted as a match)"


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
        ("forbidden_call", "error", f"call 1 run_shell matches forbidden rule 1 {UNDECIDED}"),
        ("forbidden_call", "error", "call 2 run_shell matches forbidden rule 1"),
    ]
    # the console's "Behavior and safety" lists it too
    assert "call 1 run_shell matches forbidden rule 1 (undecided: its pattern" in proc.stdout


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
    assert f"ERROR    call 2 run_shell matches forbidden rule 1 {UNDECIDED}" in text
    assert "ERROR    call 3 run_shell matches forbidden rule 1" in text
    kinds = [json.loads(line)["kind"] for line in found.read_text("utf-8").splitlines()]
    assert kinds == ["forbidden_call", "forbidden_call"]
    assert took < 10


# -- gold and rule files validated: exit 2, one line naming the file, line and JSON path ----


def _one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_bad_gold_files_are_exit_2_with_their_place(tmp_path: Path) -> None:
    _, trace, gold, _ = _files(tmp_path, ["ls"])
    for text, needles in [
        ("[1, 2]", [":1: item 0 is not a call: expected an object like", "(at $[0])"]),
        ('[\n {"tool": "a"},\n {"args": {}}\n]', [":3: item 1 has no 'tool'", "(at $[1])"]),
        ('{"calls": [\n{"tool": 5}]}', [":2: item 0: 'tool' must be a non-empty string"]),
        ('[{"tool": "a", "args": [1]}]', [":1: item 0: 'args' must be an object"]),
        ("[" * 100_000 + "]" * 100_000, [":1: arrays and objects nested deeper than 1,000"]),
    ]:
        gold.write_text(text, "utf-8")
        _one_error_line(run_cli("eval", str(gold), str(trace)), str(gold), *needles)


def test_bad_rule_files_are_exit_2_with_their_place(tmp_path: Path) -> None:
    rules, trace, gold, _ = _files(tmp_path, ["ls"])
    for text, needles in [
        ("[1]", [":1: forbidden: forbidden rule 0 must be an object like", "(at $[0])"]),
        (
            '[\n{"tool": "t",\n "args": {"c": {"$regx": "rm"}}}]',
            [":3: ", "unknown operator '$regx'", "(at $[0].args.c)"],
        ),
        (
            '{"forbidden": [{"tool": "t"},\n {"tool": "t", "args": {"c": {"$regex": "(a"}}}]}',
            [":2: ", "invalid $regex pattern '(a'", "at position 0", "$.forbidden[1].args.c"],
        ),
        ('[{"tool": "t", "args": "rm"}]', [":1: ", "'args' must be an object"]),
        ("[" * 100_000 + "]" * 100_000, [":1: arrays and objects nested deeper than 1,000"]),
    ]:
        rules.write_text(text, "utf-8")
        args = ("eval", str(gold), str(trace), "--forbidden", str(rules))
        _one_error_line(run_cli(*args), str(rules), *needles)


def test_an_undecided_forbidden_match_fails_the_run(tmp_path: Path) -> None:
    # earlier calls spend the pattern's time budget on Python's re ($ before a final newline);
    # the forbidden call after them cannot be decided: a violation, never a silent pass
    commands = [HOSTILE + "\n"] * 5 + ["aaa\n"]
    rules, trace, gold, _ = _files(tmp_path, commands)
    out = tmp_path / "out.json"
    proc = run_cli(
        "eval", str(gold), str(trace), "--forbidden", str(rules), "-o", str(out),
        "--fail-on-violations",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    findings = json.loads(out.read_text("utf-8"))["findings"]
    assert [(f["kind"], f["call_index"]) for f in findings][-1] == ("forbidden_call", 5)
    assert findings[-1]["message"] == f"call 6 run_shell matches forbidden rule 1 {UNDECIDED}"
