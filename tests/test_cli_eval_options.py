"""``eval``'s options from Toolscore 1.10 that fit a streaming evaluator: ``--no-side-effects``."""

from __future__ import annotations

import json
from pathlib import Path

from _cli import EXAMPLE, run_cli

TRACE = EXAMPLE / "trace.json"


def _gold_with_side_effects(tmp_path: Path) -> Path:
    gold = json.loads((EXAMPLE / "gold.json").read_text(encoding="utf-8"))
    gold[1]["side_effects"] = {"file_exists": str(tmp_path / "absent.txt")}
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(gold), encoding="utf-8")
    return path


def test_no_side_effects_skips_the_validators(tmp_path: Path) -> None:
    gold = _gold_with_side_effects(tmp_path)
    on, off = tmp_path / "on.json", tmp_path / "off.json"

    ran = run_cli("eval", str(gold), str(TRACE), "-o", str(on))
    assert ran.returncode == 0, ran.stderr
    effects = json.loads(on.read_text(encoding="utf-8"))["metrics"]["side_effect_metrics"]
    assert effects["total_checks"] == 1 and effects["passed_checks"] == 0

    skipped = run_cli("eval", str(gold), str(TRACE), "-o", str(off), "--no-side-effects")
    assert skipped.returncode == 0, skipped.stderr
    record = json.loads(off.read_text(encoding="utf-8"))
    assert "side_effect_metrics" not in record["metrics"]
    assert record["notes"][0].startswith("1 side-effect check was not run (file_exists on deploy)")
    assert "NOTE 1 side-effect check was not run" in " ".join(skipped.stdout.split())
    # the score does not depend on the validators (they are not weighted)
    assert record["score"] == json.loads(on.read_text(encoding="utf-8"))["score"]


def test_csv_report_is_written_and_refused_for_a_dataset(tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    done = run_cli(
        "eval", str(EXAMPLE / "gold.json"), str(TRACE), "-o", str(tmp_path / "r.json"),
        "--csv", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"> CSV report: {out}" in done.stdout
    rows = out.read_text(encoding="utf-8").splitlines()
    assert rows[:3] == [
        "Category,Metric,Value",
        "Summary,Gold Calls Count,2",
        "Summary,Trace Calls Count,5",
    ]
    assert ",selection_accuracy,80.00%" in rows

    dataset = EXAMPLE.parent / "dataset"
    refused = run_cli(
        "eval", str(dataset / "gold.jsonl"), str(dataset / "traces.jsonl"),
        "-o", str(tmp_path / "d.json"), "--csv", str(tmp_path / "d.csv"),
    )  # fmt: skip
    assert refused.returncode == 2 and "--csv is for one trace" in refused.stderr
