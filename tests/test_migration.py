"""Code written against Toolscore 1.10's module paths and call forms keeps working."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import toolscore
from _cli import EXAMPLE, run_cli
from _secrets import PLANTED, assert_no_secrets

GOLD = EXAMPLE / "gold.json"
TRACE = EXAMPLE / "trace.json"


def test_module_paths_are_this_package() -> None:
    from toolscore.adapters.base import ToolCall
    from toolscore.core import evaluate, evaluate_trace
    from toolscore.metrics.policy import rules_from_json
    from toolscore.metrics.security import redact_secrets

    assert evaluate_trace is toolscore.evaluate_trace
    assert evaluate is toolscore.evaluate
    assert ToolCall is toolscore.ToolCall
    assert redact_secrets is toolscore.redact_secrets
    assert rules_from_json is toolscore.rules_from_json
    key = PLANTED["openai_api_key"][0]
    assert key not in redact_secrets(f"Authorization: Bearer {key}")
    rules = rules_from_json([{"tool": "run_shell", "args": {"command": {"$regex": "rm -rf"}}}])
    result = evaluate([], [{"tool": "run_shell", "args": {"command": "rm -rf /"}}], forbidden=rules)
    assert [v["tool"] for v in result.policy_violations] == ["run_shell"]
    with pytest.raises(ValueError, match="Tool name cannot be empty"):
        ToolCall(tool="")


def test_evaluate_trace_takes_toolscore_positional_order(tmp_path: Path) -> None:
    from toolscore.core import evaluate_trace

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"tool": "run_shell"}]), encoding="utf-8")
    plain = evaluate_trace(str(GOLD), str(TRACE), "auto", False)
    # gold_file, trace_file, format, validate_side_effects, judge, forbidden, weights
    full = evaluate_trace(
        str(GOLD), str(TRACE), "auto", False, False, str(rules), {"required_call_recall": 0.3}
    )
    assert plain.score == pytest.approx(0.74)
    assert full.weights["required_call_recall"] == pytest.approx(0.3 / 1.3)
    assert full.score != plain.score
    assert full.metrics["policy_metrics"]["rule_count"] == 1
    with pytest.raises(toolscore.UsageError, match="judge"):
        evaluate_trace(str(GOLD), str(TRACE), "auto", False, True)


def test_cli_main_under_click_cli_runner(tmp_path: Path) -> None:
    from toolscore.cli import main

    out = tmp_path / "report.json"
    runner = CliRunner()
    result = runner.invoke(
        main, ["eval", str(GOLD), str(TRACE), "-o", str(out), "--forbidden", "forbidden.json"]
    )
    assert result.exit_code == 2  # forbidden.json is relative to the example, not the cwd
    cwd = Path.cwd()
    try:
        os.chdir(EXAMPLE)
        result = runner.invoke(
            main,
            ["eval", "gold.json", "trace.json", "-o", str(out), "--forbidden", "forbidden.json"],
        )
        assert result.exit_code == 0, result.output
        assert "Toolscore Evaluation Results" in result.output
        assert "matches forbidden rule 1" in result.output
        assert_no_secrets(result.output)
        assert json.loads(out.read_text(encoding="utf-8"))["summary"]["grade"] == "C"
        failed = runner.invoke(
            main,
            ["eval", "gold.json", "trace.json", "-o", str(out), "--fail-under", "A"],
        )
        assert failed.exit_code == 1
        usage = runner.invoke(main, ["eval"])
        assert usage.exit_code == 2
        # one argument is a trace evaluated without gold: the checks only
        alone = runner.invoke(main, ["eval", "trace.json", "-o", str(out)])
        assert alone.exit_code == 0 and "No gold: checks only" in alone.output
        version = runner.invoke(main, ["--version"])
        assert version.exit_code == 0 and version.output.startswith("toolscore, version")
    finally:
        os.chdir(cwd)


def _gold_with_side_effects(tmp_path: Path) -> Path:
    gold = json.loads(GOLD.read_text(encoding="utf-8"))
    gold[0]["side_effects"] = {"http_ok": True}
    gold[1]["side_effects"] = {"file_exists": "out.txt", "http_ok": 200}
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(gold), encoding="utf-8")
    return path


def test_side_effects_are_validated_and_noted(tmp_path: Path) -> None:
    gold = _gold_with_side_effects(tmp_path)
    result = toolscore.evaluate_trace(str(gold), str(TRACE))
    effects = result.metrics["side_effect_metrics"]
    assert effects["total_checks"] == 3
    assert len(result.notes) == 1
    note = result.notes[0]
    assert note.startswith(f"{effects['passed_checks']} of 3 side-effect checks passed")
    assert result.to_dict()["notes"] == [note]
    assert "notes" not in toolscore.evaluate_trace(str(GOLD), str(TRACE)).to_dict()

    off = toolscore.evaluate_trace(str(gold), str(TRACE), validate_side_effects=False)
    assert "side_effect_metrics" not in off.metrics
    assert off.notes[0].startswith("3 side-effect checks were not run (")
    assert "file_exists on" in off.notes[0] and "http_ok on" in off.notes[0]

    out = tmp_path / "report.json"
    md = tmp_path / "report.md"
    proc = run_cli("eval", str(gold), str(TRACE), "-o", str(out), "--markdown", str(md))
    assert proc.returncode == 0, proc.stderr
    assert "NOTE 0 of 3 side-effect checks passed" in " ".join(proc.stdout.split())
    assert json.loads(out.read_text(encoding="utf-8"))["notes"] == [note]
    assert "- **Note:** 0 of 3 side-effect checks passed" in md.read_text(encoding="utf-8")
