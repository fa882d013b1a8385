"""``toolscore regression BASELINE TRACE -g GOLD``: a run against a saved baseline, exit 0/1/2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from _cli import EXAMPLE, run_cli
from _secrets import assert_no_secrets

GOLD = EXAMPLE / "gold.json"
RULES = EXAMPLE / "forbidden.json"
_MAKE_TEST = {"tool": "run_shell", "args": {"command": "make test"}, "result": {"exit_code": 0}}
_LINT = {"tool": "run_shell", "args": {"command": "make lint"}, "result": {"exit_code": 0}}
_DEPLOY = {"tool": "deploy", "args": {"env": "staging"}, "result": "ok"}


def _trace(tmp_path: Path, name: str, calls: list[dict[str, object]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"calls": calls}), encoding="utf-8")
    return path


def _baseline(tmp_path: Path) -> Path:
    """The baseline of a perfect run (score 1.0, no finding)."""
    good = _trace(tmp_path, "good.json", [_MAKE_TEST, _DEPLOY])
    baseline = tmp_path / "baseline.json"
    saved = run_cli(
        "eval", str(GOLD), str(good), "-o", str(tmp_path / "r.json"),
        "--save-baseline", str(baseline),
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    return baseline


def test_same_run_passes_and_a_worse_one_fails_with_each_regression(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    same = run_cli("regression", str(baseline), str(tmp_path / "good.json"), "-g", str(GOLD))
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith("PASS no regression against the baseline (tolerance 0.05)")

    out = tmp_path / "comparison.json"
    worse = run_cli(
        "regression", str(baseline), str(EXAMPLE / "trace.json"), "-g", str(GOLD),
        "--forbidden", str(RULES), "-o", str(out),
    )  # fmt: skip
    assert worse.returncode == 1, worse.stderr
    assert worse.stdout.startswith("FAIL 6 regressions against the baseline")
    assert "new finding policy:forbidden_call:run_shell:rule 1 (1, baseline 0)" in worse.stdout
    assert "required calls completed 1 of 2 (baseline 2 of 2)" in worse.stdout
    text = out.read_text(encoding="utf-8")
    assert_no_secrets(worse.stdout + worse.stderr + text)
    report = json.loads(text)
    assert report["passed"] is False and report["regression_count"] == 6
    kinds = sorted(r["kind"] for r in report["regressions"])
    assert kinds == ["finding", "finding", "finding", "finding", "required", "score"]
    # the run's verdict comes from the one verdict (the same as eval's JSON summary)
    assert report["verdict"]["grade"] == "C" and report["verdict"]["violations"] == 2


def test_threshold_is_an_absolute_score_drop(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    extra = _trace(tmp_path, "extra.json", [_MAKE_TEST, _LINT, _DEPLOY])  # score 0.90
    args = ("regression", str(baseline), str(extra), "-g", str(GOLD))
    strict = run_cli(*args)  # 1.10's default threshold: 0.05, five points
    assert strict.returncode == 1, strict.stderr
    assert "score 0.9000 < baseline 1.0000 (-0.1000)" in strict.stdout
    loose = run_cli(*args, "-t", "0.2")
    assert loose.returncode == 0, loose.stderr
    bad = run_cli(*args, "-t", "-1")
    assert bad.returncode == 2 and "must be a number >= 0" in bad.stderr


def test_bad_inputs_exit_2_naming_the_file(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    old = tmp_path / "old.json"  # a Toolscore 1.10 baseline: per-metric, no format key
    old.write_text(json.dumps({"version": "1.10.0", "metrics": {}}), encoding="utf-8")
    good = str(tmp_path / "good.json")
    wrong = run_cli("regression", str(old), good, "-g", str(GOLD))
    assert wrong.returncode == 2
    assert f"{old}: not a toolscore baseline" in wrong.stderr
    missing = run_cli("regression", str(baseline), good)
    assert missing.returncode == 2 and "--gold-file" in missing.stderr
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps({"calls": [_MAKE_TEST, _DEPLOY]})[:-20], encoding="utf-8")
    truncated = run_cli("regression", str(baseline), str(cut), "-g", str(GOLD))
    assert truncated.returncode == 2
    assert str(cut) in truncated.stderr


def test_click_runner_drives_regression(tmp_path: Path) -> None:
    from toolscore.cli import main

    baseline = _baseline(tmp_path)
    extra = _trace(tmp_path, "extra.json", [_MAKE_TEST, _LINT, _DEPLOY])
    runner = CliRunner()
    result = runner.invoke(main, ["regression", str(baseline), str(extra), "-g", str(GOLD)])
    assert result.exit_code == 1, result.output
    assert "REGRESSION" in result.output and "score 0.9000" in result.output
    result = runner.invoke(
        main, ["regression", str(baseline), str(extra), "-g", str(GOLD), "-t", "0.15"]
    )
    assert result.exit_code == 0, result.output
