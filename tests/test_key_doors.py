"""One key planted in a tool name, an argument name, a trace id, a file name and a forbidden
rule's reason, run through every door driven here with the real command line (eval of one
trace, eval of a dataset, watch, the pytest plugin): the key is found, and shown by none of
their human-facing outputs, SARIF, JUnit, baselines or ``--per-trace`` records."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from _cli import cli_env, run_cli
from _secrets import PLANTED, assert_no_secrets

KEY = PLANTED["github_token"][0]
TOOL = "send_" + KEY  # glued to the word before it
ARG = "X_" + KEY
TRACE_ID = "run-" + KEY
REASON = "never wipe with " + KEY


def _plant(base: Path) -> dict[str, Path]:
    """The trace (named after the key), its gold (one file and a dataset's), the rules."""
    calls: list[dict[str, Any]] = [
        {"trace_id": TRACE_ID, "tool": TOOL, "args": {ARG: "1"}, "error": f"no {TOOL}"},
        {"trace_id": TRACE_ID, "tool": "wipe_all", "args": {"scope": "all"}, "result": "ok"},
    ]
    trace = base / f"trace_{KEY}.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    expected = [{"tool": TOOL}, {"tool": "fetch"}]
    gold = base / "gold.json"
    gold.write_text(json.dumps(expected), encoding="utf-8")
    dataset_gold = base / "gold.jsonl"
    dataset_gold.write_text(json.dumps({"trace_id": TRACE_ID, "expected": expected}) + "\n")
    rules = base / "rules.json"
    rules.write_text(json.dumps([{"tool": "wipe_all", "reason": REASON}]), encoding="utf-8")
    return {"trace": trace, "gold": gold, "dataset_gold": dataset_gold, "rules": rules}


def _clean(*texts: str) -> None:
    for text in texts:
        assert_no_secrets(text)


def test_eval_of_one_trace(tmp_path: Path) -> None:
    p = _plant(tmp_path)
    out = {name: tmp_path / name for name in ("r.md", "r.html", "r.sarif", "r.xml", "b.json")}
    proc = run_cli(
        "eval", str(p["gold"]), str(p["trace"]), "-o", str(tmp_path / "r.json"), "-v",
        "--forbidden", str(p["rules"]), "--markdown", str(out["r.md"]),
        "--html", str(out["r.html"]), "--sarif", str(out["r.sarif"]),
        "--junit", str(out["r.xml"]), "--save-baseline", str(out["b.json"]),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _clean(proc.stdout, proc.stderr, *(path.read_text("utf-8") for path in out.values()))
    report = json.loads((tmp_path / "r.json").read_text("utf-8"))
    kinds = {(f["check"], f["kind"]) for f in report["findings"]}
    assert ("secrets", "github_token") in kinds and ("policy", "forbidden_call") in kinds
    _clean(json.dumps(report["findings"]))  # only the calls' arguments stay raw
    sarif = json.loads(out["r.sarif"].read_text("utf-8"))
    names = [
        loc["fullyQualifiedName"]
        for r in sarif["runs"][0]["results"]
        for location in r["locations"]
        for loc in location.get("logicalLocations", ())
    ]
    assert names and all("[REDACTED github_token: ghp_…Vb]" in n for n in names)
    # the saved baseline holds the key's hash only, and the same run matches it exactly
    again = run_cli(
        "eval", str(p["gold"]), str(p["trace"]), "-o", str(tmp_path / "r2.json"),
        "--forbidden", str(p["rules"]), "--baseline", str(out["b.json"]),
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    _clean(again.stdout, again.stderr)


def test_eval_of_a_dataset(tmp_path: Path) -> None:
    p = _plant(tmp_path)
    names = ("r.md", "r.html", "r.sarif", "r.xml", "b.json", "per.jsonl")
    out = {name: tmp_path / name for name in names}
    proc = run_cli(
        "eval", str(p["dataset_gold"]), str(p["trace"]), "-o", str(tmp_path / "r.json"),
        "--forbidden", str(p["rules"]), "--markdown", str(out["r.md"]),
        "--html", str(out["r.html"]), "--sarif", str(out["r.sarif"]),
        "--junit", str(out["r.xml"]), "--save-baseline", str(out["b.json"]),
        "--per-trace", str(out["per.jsonl"]), "--engine", "inline",
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    _clean(proc.stdout, proc.stderr, *(path.read_text("utf-8") for path in out.values()))
    (record,) = [json.loads(line) for line in out["per.jsonl"].read_text("utf-8").splitlines()]
    assert record["trace_id"].startswith("run-[REDACTED github_token: ")
    assert record["findings"]["secrets/github_token"] >= 2  # the tool name, the argument name
    again = run_cli(
        "eval", str(p["dataset_gold"]), str(p["trace"]), "-o", str(tmp_path / "r2.json"),
        "--forbidden", str(p["rules"]), "--baseline", str(out["b.json"]), "--engine", "inline",
    )  # fmt: skip
    assert "REGRESSION" not in again.stdout and "missing_trace" not in again.stdout
    _clean(again.stdout, again.stderr)


def test_the_dataset_json_report(tmp_path: Path) -> None:
    p = _plant(tmp_path)
    gold = tmp_path / "gold2.jsonl"  # a gold without its trace: its id is listed
    gold.write_text(
        p["dataset_gold"].read_text("utf-8")
        + json.dumps({"trace_id": "other-" + KEY, "expected": []})
        + "\n"
    )
    proc = run_cli(
        "eval", str(gold), str(p["trace"]), "-o", str(tmp_path / "r.json"),
        "--forbidden", str(p["rules"]), "--engine", "inline", "--missing-trace", "skip",
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    _clean((tmp_path / "r.json").read_text("utf-8"))


def test_watch(tmp_path: Path) -> None:
    p = _plant(tmp_path)
    findings = tmp_path / "f.jsonl"
    proc = run_cli(
        "watch", str(p["trace"]), "--forbidden", str(p["rules"]), "--findings", str(findings)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = findings.read_text("utf-8")
    assert "github_token" in text and "forbidden_call" in text
    _clean(proc.stdout, proc.stderr, text)


def test_the_pytest_plugin_report(tmp_path: Path) -> None:
    p = _plant(tmp_path)
    (tmp_path / "test_keys.py").write_text(
        textwrap.dedent(
            f"""
            import pytest

            KEY = {KEY[:4]!r} + {KEY[4:]!r}

            @pytest.mark.parametrize("tool", ["send_" + KEY])
            def test_agent(toolscore, tool):
                result = toolscore.evaluate_trace(
                    [{{"tool": tool}}], {str(p["trace"])!r}, forbidden={str(p["rules"])!r}
                )
                assert result.trace_calls_count == 2
                toolscore.assert_tools([{{"tool": tool}}], [{{"tool": tool, "args": {{}}}}])
            """
        ),
        encoding="utf-8",
    )
    report = tmp_path / "report.json"
    env = cli_env()
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--toolscore-report={report}",
         f"--toolscore-report={report.with_suffix('.md')}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120,
        check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    data = json.loads(report.read_text("utf-8"))
    assert len(data["evaluations"]) == 2
    _clean(report.read_text("utf-8"), report.with_suffix(".md").read_text("utf-8"))
