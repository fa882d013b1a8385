"""The GitHub Action's script, run for real with temporary GITHUB_* files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import EXAMPLE, REPO, cli_env
from _secrets import assert_no_secrets

SCRIPT = REPO / ".github" / "action" / "run.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run_action(tmp_path: Path, **inputs: str) -> tuple[int, dict[str, str], str]:
    """Run run.sh in examples/guardrails with a `toolscore` (and `python`) on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "toolscore"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m toolscore "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    python = bin_dir / "python"
    if not python.exists():
        python.symlink_to(sys.executable)
    output, summary = tmp_path / "output.txt", tmp_path / "summary.md"
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir(exist_ok=True)
    env = cli_env()
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(summary),
        RUNNER_TEMP=str(runner_temp),
        INPUT_GOLD_FILE="gold.json",
        INPUT_TRACE_FILE="trace.json",
        INPUT_FORMAT="auto",
        INPUT_FORBIDDEN_FILE="",
        INPUT_FAIL_ON_VIOLATIONS="false",
        INPUT_WEIGHTS="",
        INPUT_FAIL_UNDER="",
    )
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    proc = subprocess.run(
        ["bash", str(SCRIPT)],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    outputs = {}
    if output.exists():
        for line in output.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            outputs[key] = value
    text = summary.read_text(encoding="utf-8") if summary.exists() else ""
    assert_no_secrets(proc.stdout + proc.stderr)
    return proc.returncode, outputs, text


def test_outputs_and_redacted_summary(tmp_path: Path) -> None:
    code, outputs, summary = run_action(tmp_path, forbidden_file="forbidden.json")
    assert code == 0
    assert set(outputs) == {"score", "grade", "required-call-recall", "violations"}
    assert float(outputs["score"]) == pytest.approx(0.74)
    assert outputs["grade"] == "C"
    assert outputs["required-call-recall"] == "0.5"
    assert outputs["violations"] == "2"
    assert "## 🛡️ Behavior and Safety" in summary
    assert "matches forbidden rule 1: destructive shell command" in summary
    assert "AKIAIOSFODNN7EXAMPLE" not in summary
    assert_no_secrets(summary)


def test_fail_on_violations_fails_the_step(tmp_path: Path) -> None:
    code, outputs, summary = run_action(
        tmp_path, forbidden_file="forbidden.json", fail_on_violations="true"
    )
    assert code == 1
    assert outputs["violations"] == "2"  # outputs are written even when the step fails
    assert "Behavior and Safety" in summary


def test_weights_and_fail_under(tmp_path: Path) -> None:
    code, outputs, _ = run_action(
        tmp_path, weights="required_call_recall=0.3,\n selection_accuracy = 0.4\n", fail_under="A"
    )
    assert code == 1
    assert float(outputs["score"]) == pytest.approx((0.74 + 0.3 * 0.5) / 1.3)
    assert outputs["violations"] == "1"  # the key; no rules were given


def test_input_error_exits_2_without_outputs(tmp_path: Path) -> None:
    code, outputs, summary = run_action(tmp_path, trace_file="missing.json")
    assert code == 2
    assert outputs == {}
    assert summary == ""
