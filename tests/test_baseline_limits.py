"""Baselines at their limits: nesting, counts that cannot be, and more findings than a
result keeps (every finding is compared, counted by key)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _cli import run_cli
from toolscore import evaluate_trace
from toolscore.baseline import compare, load_baseline, summarize
from toolscore.errors import InputError
from toolscore.pipeline import MAX_KEPT_FINDINGS

_KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _saved(tmp_path: Path) -> dict[str, Any]:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"tool": "a", "args": {"x": 1}, "error": "boom"}\n', encoding="utf-8")
    baseline = tmp_path / "b.json"
    run = run_cli("eval", "t.jsonl", "-o", "r.json", "--save-baseline", "b.json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return json.loads(baseline.read_text(encoding="utf-8"))


def test_a_baseline_nested_too_deep_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    data = _saved(tmp_path)
    for depth, name in ((50, "deep50.json"), (100_000, "deep100k.json")):
        text = json.dumps(data).replace(
            '"calls": 1', '"calls": 1, "x": ' + "[" * depth + "]" * depth
        )
        assert '"x": [[' in text
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as error:
            load_baseline(path)
        assert error.value.path == str(path) and "nested deeper than" in str(error.value)
        run = run_cli("eval", "t.jsonl", "-o", "r.json", "--baseline", name, cwd=tmp_path)
        assert run.returncode == 2
        assert f"{name}: arrays and objects nested deeper than" in run.stderr


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("findings", {"errors:failed_call:a": -5}, "the count of finding 'errors:failed_call:a'"),
        ("required", [3, 2], "required must be"),
        ("required", [-1, 2], "required must be"),
        ("calls", -1, "calls must be"),
    ],
)
def test_a_baseline_count_below_zero_is_refused(
    tmp_path: Path, field: str, value: object, says: str
) -> None:
    data = _saved(tmp_path)
    data["traces"]["t.jsonl"][field] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_baseline(path)
    assert error.value.path == str(path) and "trace 't.jsonl'" in str(error.value)
    assert says in str(error.value)
    run = run_cli("eval", "t.jsonl", "-o", "r.json", "--baseline", "bad.json", cwd=tmp_path)
    assert run.returncode == 2
    assert f"bad.json: trace 't.jsonl': {says}" in run.stderr


def test_findings_past_those_kept_are_compared_exactly(tmp_path: Path) -> None:
    n = MAX_KEPT_FINDINGS + 500
    lines = [json.dumps({"tool": "a", "args": {"i": i}, "error": "boom"}) for i in range(n)]
    before = tmp_path / "before.jsonl"
    before.write_text("\n".join(lines) + "\n", encoding="utf-8")
    later = [json.dumps({"tool": "rm", "args": {}}), json.dumps({"tool": "b", "args": {"k": _KEY}})]
    after = tmp_path / "after.jsonl"
    after.write_text("\n".join(lines + later) + "\n", encoding="utf-8")
    rules = tmp_path / "forbid.json"
    rules.write_text('[{"tool": "rm", "reason": "no"}]', encoding="utf-8")

    # Python: the summary counts every finding, not the kept 10,000
    old = summarize(evaluate_trace(None, str(before), forbidden=str(rules)))
    assert old.findings == {"errors:failed_call:a": n}
    new = summarize(evaluate_trace(None, str(after), forbidden=str(rules)))
    kinds = sorted(r.key for r in compare({"t": old}, {"t": new}).regressions if r.key)
    assert kinds == ["policy:forbidden_call:rm:rule 1", "secrets:github_token:b"]

    # the CLI: saved, then compared; the new forbidden call and credential fail the run
    baseline = tmp_path / "b.json"
    saved = run_cli("eval", str(before), "--forbidden", str(rules), "-o", str(tmp_path / "r.json"),
                    "--save-baseline", str(baseline))  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    stored = json.loads(baseline.read_text(encoding="utf-8"))
    assert stored["aggregate"]["findings"] == {"errors:failed_call:a": n}
    run = run_cli("eval", str(after), "--forbidden", str(rules), "-o", str(tmp_path / "r.json"),
                  "--baseline", str(baseline))  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "new finding policy:forbidden_call:rm:rule 1 (1, baseline 0)" in run.stdout
    assert "new finding secrets:github_token:b (1, baseline 0)" in run.stdout
    assert _KEY not in run.stdout + run.stderr
