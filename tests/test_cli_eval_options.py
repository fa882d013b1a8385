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
