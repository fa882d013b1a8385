"""The real ``toolscore serve`` command in a subprocess: SIGTERM closes every session."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from _genai import tool_span, tracer

from _cli import cli_env, run_cli


def test_sigterm_closes_open_sessions_with_their_summaries(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"tool": "delete_database", "reason": "destructive"}]))
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"tool": "search", "args": {"q": "x"}}]))
    records, findings = tmp_path / "sessions.jsonl", tmp_path / "findings.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolscore",
            "serve",
            "--port",
            "0",
            "--forbidden",
            str(rules),
            "--gold",
            str(gold),
            "--grace",
            "60",
            "--per-trace",
            str(records),
            "--findings",
            str(findings),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", first)
        assert match, first
        url = match.group(1)
        with tracer(url) as t:
            # two traces; with a grace of a minute after their roots, still open at SIGTERM
            with t.start_as_current_span("invoke_agent"), t.start_as_current_span("step"):
                tool_span(t, "search", {"q": "x"}, "ok")
                tool_span(t, "delete_database", {"db": "prod"}, "ok")
            with t.start_as_current_span("other agent"), t.start_as_current_span("step"):
                tool_span(t, "search", {"q": "x"}, "ok")
        deadline = time.monotonic() + 10
        while findings.stat().st_size == 0 if findings.exists() else True:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "delete_database matches forbidden rule 1: destructive" in out
    closed = [line for line in out.splitlines() if "closed (shutdown)" in line]
    assert len(closed) == 2
    assert any("2 calls, score" in line and "failed" in line for line in closed)
    assert any("1 call, score 1.000 (A), passed" in line for line in closed)
    assert "2 session(s) closed" in err
    lines = [json.loads(x) for x in records.read_text().splitlines()]
    assert sorted(r["calls"] for r in lines) == [1, 2] and all(r["task"] for r in lines)


def test_another_interface_needs_a_token() -> None:
    done = run_cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 2 and "give a bearer token" in done.stderr


def test_a_missing_rule_file_is_an_input_error(tmp_path: Path) -> None:
    done = run_cli("serve", "--port", "0", "--forbidden", str(tmp_path / "nope.json"))
    assert done.returncode == 2 and "nope.json" in done.stderr
