"""The GitHub Action's script, run for real with temporary GITHUB_* files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from junitparser import JUnitXml

from _cli import EXAMPLE, REPO, cli_env
from _secrets import assert_no_secrets, planted_text

SCRIPT = REPO / ".github" / "action" / "run.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run_action(
    tmp_path: Path, cwd: Path = EXAMPLE, **inputs: str
) -> tuple[int, dict[str, str], str]:
    """Run run.sh (in examples/guardrails by default) with a `toolscore` (and `python`) on
    PATH, every input set as action.yml sets it (empty when not given)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "toolscore"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m toolscore "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    python = bin_dir / "python"  # a script, not a symlink: a symlink would lose the venv
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
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
        INPUT_TRACES="",
        INPUT_GOLD_DIR="",
        INPUT_BASELINE="",
        INPUT_BASELINE_TOLERANCE="0",
        INPUT_SAVE_BASELINE="",
        INPUT_SARIF_FILE="",
        INPUT_JUNIT_FILE="",
    )
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    proc = subprocess.run(
        ["bash", str(SCRIPT)],
        cwd=cwd,
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


# -- CI outputs and many traces ------------------------------------------------------------------

SCHEMA = json.loads(
    (Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)


def test_single_trace_with_sarif_junit_and_baseline(tmp_path: Path) -> None:
    sarif, junit, base = tmp_path / "out.sarif", tmp_path / "junit.xml", tmp_path / "base.json"
    code, _, _ = run_action(
        tmp_path,
        forbidden_file="forbidden.json",
        sarif_file=str(sarif),
        junit_file=str(junit),
        save_baseline=str(base),
    )
    assert code == 0
    log = json.loads(sarif.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {
        "policy/forbidden_call",
        "secrets/aws_access_key_id",
    }
    assert [c.name for s in JUnitXml.fromfile(str(junit)) for c in s] == ["trace.json"]
    assert_no_secrets(sarif.read_text(encoding="utf-8") + junit.read_text(encoding="utf-8"))
    code, _, _ = run_action(tmp_path, forbidden_file="forbidden.json", baseline=str(base))
    assert code == 0
    code, _, _ = run_action(tmp_path, baseline=str(base))  # no rules: fewer findings, same score
    assert code == 0


def _dataset(root: Path) -> tuple[Path, Path]:
    traces, golds = root / "traces", root / "gold"
    (traces / "team").mkdir(parents=True)
    golds.mkdir()
    good = [{"tool": "search", "args": {"q": "x"}}, {"tool": "fetch", "args": {"u": 1}}]
    (golds / "a.json").write_text(json.dumps(good), encoding="utf-8")
    (golds / "b.json").write_text(json.dumps(good[:1]), encoding="utf-8")
    lines = {
        "a.jsonl": good,
        "b.jsonl": [good[0], {"tool": "run_shell", "args": {"cmd": "rm -rf /"}}],
        "team/c.jsonl": [
            good[0],
            {"tool": "post", "args": {"body": planted_text()}, "error": "boom"},
        ],
    }
    for name, calls in lines.items():
        (traces / name).write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    (root / "rules.json").write_text('[{"tool": "run_shell"}]', encoding="utf-8")
    (root / "fallback.json").write_text(json.dumps(good), encoding="utf-8")
    return traces, golds


def test_traces_directory_with_per_trace_gold(tmp_path: Path) -> None:
    traces, _ = _dataset(tmp_path)
    sarif, junit, base = tmp_path / "o.sarif", tmp_path / "j.xml", tmp_path / "base.json"
    inputs = {
        "traces": "traces",
        "gold_dir": "gold",
        "gold_file": "fallback.json",
        "forbidden_file": "rules.json",
        "sarif_file": str(sarif),
        "junit_file": str(junit),
    }
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, save_baseline=str(base), **inputs)
    assert code == 0, summary
    assert outputs["traces"] == "3"
    assert int(outputs["violations"]) >= 2
    assert outputs["grade"] in "ABCDF" and 0 < float(outputs["score"]) < 1
    assert "## Toolscore: 3 traces" in summary
    assert "| policy/forbidden_call | 1 | b.jsonl |" in summary
    assert "| errors/failed_call | 1 | team/c.jsonl |" in summary
    assert "### Lowest scores" in summary
    assert_no_secrets(summary + sarif.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(json.loads(sarif.read_text(encoding="utf-8")))
    xml = JUnitXml.fromfile(str(junit))
    cases = {c.name: c for s in xml for c in s}
    assert set(cases) == {"a.jsonl", "b.jsonl", "team/c.jsonl"}
    assert cases["a.jsonl"].is_passed and not cases["b.jsonl"].is_passed
    assert set(json.loads(base.read_text(encoding="utf-8"))["traces"]) == set(cases)

    # unchanged: passes the baseline; a planted regression in one trace: fails it
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, baseline=str(base), **inputs)
    assert code == 0 and outputs["regressions"] == "0"
    assert "**PASS no regression against the baseline" in summary
    (traces / "a.jsonl").write_text(json.dumps({"tool": "search", "args": {"q": "x"}}) + "\n")
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, baseline=str(base), **inputs)
    assert code == 1
    assert int(outputs["regressions"]) >= 2
    assert "a.jsonl: required calls completed 1 of 2 (baseline 2 of 2)" in summary
    assert "- **baseline**: FAIL" in summary
    assert [c.name for s in JUnitXml.fromfile(str(junit)) for c in s if not c.is_passed] == [
        "b.jsonl", "team/c.jsonl", "baseline"
    ]  # fmt: skip


def test_traces_glob_and_missing_gold(tmp_path: Path) -> None:
    _dataset(tmp_path)
    code, outputs, summary = run_action(
        tmp_path,
        cwd=tmp_path,
        traces="traces/**/*.jsonl",
        gold_dir="gold",
        gold_file="",
        fail_under="0.99",
    )
    assert code == 2  # team/c.jsonl has no gold: reported, the others evaluated
    assert outputs["traces"] == "2"
    assert "### Input problems" in summary
    assert "traces/team/c.jsonl: no gold file (looked for c.json)" in summary
    assert "- **fail-under 0.99**:" in summary
    code, _, _ = run_action(tmp_path, cwd=tmp_path, traces="traces", gold_file="")
    assert code == 2  # neither gold-file nor gold-dir
    fresh = tmp_path / "fresh"  # its own GITHUB_OUTPUT file
    fresh.mkdir()
    code, outputs, _ = run_action(fresh, cwd=tmp_path, traces="traces", gold_file="nope.json")
    assert code == 2 and outputs == {}  # a missing gold file: nothing evaluated


def test_single_trace_job_summary_shows_the_baseline_verdict(tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(EXAMPLE, work)
    base = tmp_path / "base.json"
    code, _, summary = run_action(tmp_path, cwd=work, save_baseline=str(base))
    assert code == 0 and "## Baseline" not in summary
    fresh = tmp_path / "same"
    fresh.mkdir()
    code, _, summary = run_action(fresh, cwd=work, baseline=str(base))
    assert code == 0
    assert "## Baseline" in summary
    assert "**PASS no regression against the baseline (tolerance 0)**" in summary
    # a planted regression: the trace no longer runs the tests (a required call)
    trace = json.loads((work / "trace.json").read_text(encoding="utf-8"))
    assert trace["calls"][0]["args"] == {"command": "make test"}
    del trace["calls"][0]
    (work / "trace.json").write_text(json.dumps(trace), encoding="utf-8")
    worse = tmp_path / "worse"
    worse.mkdir()
    code, _, summary = run_action(worse, cwd=work, baseline=str(base))
    assert code == 1
    assert "**FAIL " in summary and "regression" in summary
    assert "- REGRESSION trace.json: " in summary
    assert_no_secrets(summary)
