"""The seed's example must print its lines exactly, from examples/guardrails/."""

from __future__ import annotations

import json
from pathlib import Path

from _cli import EXAMPLE, run_cli
from _secrets import assert_no_secrets

SEED = """\
Required calls completed: 1 of 2 (missing or failed; not part of the default score)

Behavior and safety
  ERROR    call 2 run_shell matches forbidden rule 1: destructive shell command
  ERROR    call 3 http_post passes a credential (aws_access_key_id) in 'body.text': AKIA…LE
  WARNING  2 of 5 tool calls failed (deploy x2)
  WARNING  1 call repeats a failed call with the same arguments
"""


def test_prints_the_seed_lines_in_order(tmp_path: Path) -> None:
    report = tmp_path / "toolscore.json"
    proc = run_cli(
        "eval",
        "gold.json",
        "trace.json",
        "--forbidden",
        "forbidden.json",
        "-o",
        str(report),
        cwd=EXAMPLE,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    seed = [line for line in SEED.splitlines() if line]
    at = 0
    for expected in seed:
        assert expected in lines[at:], f"missing or out of order: {expected!r}\n{proc.stdout}"
        at = lines.index(expected, at) + 1
    # the required-calls line is followed by a blank line; the findings are consecutive
    first = lines.index(seed[0])
    assert lines[first + 1] == ""
    start = lines.index("Behavior and safety")
    assert lines[start : start + 5] == seed[1:]
    assert "\x1b" not in proc.stdout
    assert_no_secrets(proc.stdout)
    summary = json.loads(report.read_text(encoding="utf-8"))["summary"]
    assert summary["required_call_recall"] == 0.5
    assert summary["failed_calls"] == 2
    assert summary["policy_violations"] == 1
    assert summary["secrets"] == 1


def test_fail_on_violations(tmp_path: Path) -> None:
    proc = run_cli(
        "eval",
        "gold.json",
        "trace.json",
        "--forbidden",
        "forbidden.json",
        "--fail-on-violations",
        "-o",
        str(tmp_path / "out.json"),
        cwd=EXAMPLE,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "ERROR 2 violation(s) found (1 forbidden call(s), 1 credential(s)) (--fail-on-violations)"
    ]
