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

from _cli import EXAMPLE, REPO, cli_env, run_cli
from _secrets import assert_no_secrets, planted_text
from toolscore.action import main as action_main

SCRIPT = REPO / ".github" / "action" / "run.sh"


def _input_defaults() -> dict[str, str]:
    """``INPUT_<NAME>``: each input's default in action.yml (read without a YAML library:
    the ``inputs:`` block's two-space names and their four-space ``default:`` lines)."""
    defaults: dict[str, str] = {}
    name = None
    text = (REPO / "action.yml").read_text(encoding="utf-8")
    block = text.split("\ninputs:\n", 1)[1].split("\noutputs:\n", 1)[0]
    for line in block.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line.endswith(":"):
            name = "INPUT_" + line.strip().rstrip(":").upper().replace("-", "_")
        elif line.startswith("    default:") and name is not None:
            defaults[name] = line.split(":", 1)[1].strip().strip("'")
    return defaults


_DEFAULTS = _input_defaults()

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
    )
    env.update(_DEFAULTS)  # every input as action.yml sets it when the workflow leaves it out
    env.update(INPUT_GOLD_FILE="gold.json", INPUT_TRACE_FILE="trace.json")
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


def test_every_input_reaches_the_script() -> None:
    """action.yml hands each input to run.sh as INPUT_<NAME>, and run.sh reads each."""
    yaml = pytest.importorskip("yaml")
    spec = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    names = {name.upper().replace("-", "_") for name in spec["inputs"]}
    (step,) = [s for s in spec["runs"]["steps"] if s.get("id") == "toolscore"]
    assert {k.removeprefix("INPUT_") for k in step["env"]} == names
    script = SCRIPT.read_text(encoding="utf-8")
    assert all(f"INPUT_{name}" in script for name in names)
    assert _DEFAULTS == {
        f"INPUT_{name.upper().replace('-', '_')}": str(item.get("default", ""))
        for name, item in spec["inputs"].items()
    }


def test_the_dataset_options_of_eval_reach_the_run(tmp_path: Path) -> None:
    """trace-key, per-trace, pass-all-calls and max-trace-bytes do what `toolscore eval`'s
    options of the same names do."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(REPO / "examples" / "dataset" / "traces.jsonl", runs / "traces.jsonl")
    shutil.copy(REPO / "examples" / "dataset" / "gold.jsonl", tmp_path / "gold.jsonl")
    inputs = {"traces": "runs", "gold_file": "gold.jsonl", "trace_key": "trace_id"}
    per_trace = tmp_path / "pt.jsonl"
    code, outputs, summary = run_action(
        tmp_path, cwd=tmp_path, per_trace=str(per_trace), pass_all_calls="false",
        pass_score="C", **inputs,
    )  # fmt: skip
    assert code == 0, summary
    records = [json.loads(line) for line in per_trace.read_text().splitlines()]
    assert len(records) == 9 == int(outputs["traces"])
    cli = tmp_path / "cli.jsonl"
    done = run_cli(
        "eval", "gold.jsonl", "runs", "--trace-key", "trace_id", "--pass-any-calls",
        "--pass-score", "C", "--per-trace", str(cli), "-o", str(tmp_path / "r.json"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in cli.read_text().splitlines()]
    by_cli = {row["trace_id"]: row["passed"] for row in rows}
    assert {r["trace_id"]: r["passed"] for r in records} == by_cli
    assert sum(by_cli.values()) == 9  # (grade C and every required call: 8)

    (tmp_path / "small").mkdir()
    code, _, summary = run_action(tmp_path / "small", cwd=tmp_path, max_trace_bytes="50", **inputs)
    assert code == 2
    assert "--max-trace-bytes" in summary


def test_outputs_and_redacted_summary(tmp_path: Path) -> None:
    code, outputs, summary = run_action(tmp_path, forbidden_file="forbidden.json")
    assert code == 0
    assert set(outputs) == {"score", "grade", "required-call-recall", "violations", "passed"}
    assert outputs["passed"] == "false"  # the one verdict: grade C, violations
    assert float(outputs["score"]) == pytest.approx(0.74)
    assert outputs["grade"] == "C"
    assert outputs["required-call-recall"] == "0.500"  # rounded (the JSON report is not)
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
    assert outputs["score"] == f"{(0.74 + 0.3 * 0.5) / 1.3:.3f}"  # rounded: 0.685
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
    # the key figures: mean, grade, median, lowest, required calls completed, violations
    assert (
        f"| {float(outputs['score']):.3f} | {outputs['grade']} | 0.650 | 0.550 | 4 of 5 | "
        f"{outputs['violations']} |"
    ) in summary
    assert outputs["required-call-recall"] == "0.800"
    # the dataset's aggregate: trace ids are paths below the directory without extensions
    assert "| policy/forbidden_call | 1 in 1 | b |" in summary
    assert "| errors/failed_call | 1 in 1 | team/c |" in summary
    assert "### Worst traces" in summary and "| Pass rate | 33.3% (1 of 3) |" in summary
    assert_no_secrets(summary + sarif.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(json.loads(sarif.read_text(encoding="utf-8")))
    xml = JUnitXml.fromfile(str(junit))
    cases = {c.name: c for s in xml for c in s}
    assert set(cases) == {"a", "b", "team/c"}
    assert cases["a"].is_passed and not cases["b"].is_passed
    assert set(json.loads(base.read_text(encoding="utf-8"))["traces"]) == set(cases)

    # unchanged: passes the baseline; a planted regression in one trace: fails it
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, baseline=str(base), **inputs)
    assert code == 0 and outputs["regressions"] == "0"
    assert "**PASS no regression against the baseline" in summary
    (traces / "a.jsonl").write_text(json.dumps({"tool": "search", "args": {"q": "x"}}) + "\n")
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, baseline=str(base), **inputs)
    assert code == 1
    assert int(outputs["regressions"]) >= 2
    assert "a: required calls completed 1 of 2 (baseline 2 of 2)" in summary
    assert "- **baseline**: FAIL" in summary
    assert [c.name for s in JUnitXml.fromfile(str(junit)) for c in s if not c.is_passed] == [
        "a", "b", "team/c", "baseline"
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
    assert "### Input" in summary
    assert "- 1 traces without gold: team/c" in summary
    assert "- **fail-under 0.99**:" in summary
    code, _, _ = run_action(tmp_path, cwd=tmp_path, traces="traces", gold_file="")
    assert code == 2  # neither gold-file nor gold-dir
    fresh = tmp_path / "fresh"  # its own GITHUB_OUTPUT file
    fresh.mkdir()
    code, outputs, _ = run_action(fresh, cwd=tmp_path, traces="traces", gold_file="nope.json")
    assert code == 2 and outputs == {}  # a missing gold file: nothing evaluated


def _junit_cases(path: Path) -> dict[str, bool]:
    """Test case name -> passed, read by the JUnit reader library."""
    return {c.name: c.is_passed for s in JUnitXml.fromfile(str(path)) for c in s}


def test_multi_trace_jsonl_with_trials_and_a_planted_regression(tmp_path: Path) -> None:
    """One JSON Lines file of nine trials of three tasks (the bundled dataset example), gold
    keyed by trace id: pass@k in the job summary, one JUnit case per trial, SARIF findings
    on the file's lines, then a regression planted in one trial fails the baseline."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(REPO / "examples" / "dataset" / "traces.jsonl", runs / "traces.jsonl")
    shutil.copy(REPO / "examples" / "dataset" / "gold.jsonl", tmp_path / "gold.jsonl")
    sarif, junit, base = tmp_path / "o.sarif", tmp_path / "j.xml", tmp_path / "base.json"
    inputs = {
        "traces": "runs",
        "gold_file": "gold.jsonl",
        "sarif_file": str(sarif),
        "junit_file": str(junit),
    }
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, save_baseline=str(base), **inputs)
    assert code == 0, summary
    assert outputs["traces"] == "9" and outputs["regressions"] == "0"
    assert "## Toolscore: 9 traces" in summary
    assert "| Tasks | 3 |" in summary
    assert "| pass@2 / pass^2 | 100.0% / 55.6% (3 tasks) |" in summary
    assert "| agent-v2/refund | 2/3 |" in summary
    text = (runs / "traces.jsonl").read_text(encoding="utf-8")
    ids = {json.loads(line)["trace_id"] for line in text.splitlines()}
    cases = _junit_cases(junit)
    assert set(cases) == ids and len(ids) == 9
    assert not cases["agent-v2/refund/trial2"] and cases["agent-v2/refund/trial0"]
    assert set(json.loads(base.read_text(encoding="utf-8"))["traces"]) == ids
    log = json.loads(sarif.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    located = [
        loc["physicalLocation"]
        for r in log["runs"][0]["results"]
        for loc in r.get("locations", [])
        if "physicalLocation" in loc
    ]
    assert located and all(
        p["artifactLocation"]["uri"].endswith("runs/traces.jsonl") and p["region"]["startLine"] > 0
        for p in located
    )

    # the planted regression: trial0 of the refund task no longer refunds
    lines = (runs / "traces.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [
        line
        for line in lines
        if not (
            json.loads(line)["trace_id"] == "agent-v2/refund/trial0"
            and json.loads(line)["tool"] == "refund"
        )
    ]
    assert len(kept) == len(lines) - 1
    (runs / "traces.jsonl").write_text("".join(kept), encoding="utf-8")
    fresh = tmp_path / "again"
    fresh.mkdir()
    code, outputs, summary = run_action(fresh, cwd=tmp_path, baseline=str(base), **inputs)
    assert code == 1
    assert int(outputs["regressions"]) >= 1
    assert "agent-v2/refund/trial0: required calls completed 1 of 2 (baseline 2 of 2)" in summary
    assert "- **baseline**: FAIL" in summary
    cases = _junit_cases(junit)
    assert not cases["baseline"] and not cases["agent-v2/refund/trial0"]
    jsonschema.Draft4Validator(SCHEMA).validate(json.loads(sarif.read_text(encoding="utf-8")))
    assert_no_secrets(summary + sarif.read_text(encoding="utf-8") + junit.read_text("utf-8"))


@pytest.mark.parametrize(
    ("pass_score", "code", "rate"), [("", 1, "77.8% (7 of 9)"), ("B", 0, "88.9% (8 of 9)")]
)
def test_pass_score_and_min_pass_rate(
    tmp_path: Path, pass_score: str, code: int, rate: str
) -> None:
    """rebook/trial2 (grade B) passes from pass-score B; the pass rate gates the step."""
    shutil.copy(REPO / "examples" / "dataset" / "traces.jsonl", tmp_path / "traces.jsonl")
    junit = tmp_path / "j.xml"
    got, outputs, summary = run_action(
        tmp_path,
        traces=str(tmp_path / "traces.jsonl"),
        gold_file=str(REPO / "examples" / "dataset" / "gold.jsonl"),
        pass_score=pass_score,
        min_pass_rate="80%",
        junit_file=str(junit),
    )
    assert got == code, summary
    assert f"| Pass rate | {rate} |" in summary
    assert outputs["traces"] == "9"
    assert _junit_cases(junit)["min-pass-rate 80%"] is (code == 0)
    assert _junit_cases(junit)["agent-v2/rebook/trial2"] is (pass_score == "B")


def _file_path_keys(base: Path, prefix: str) -> None:
    """Rewrite a baseline's keys as the Action wrote them before: file paths."""
    data = json.loads(base.read_text(encoding="utf-8"))
    data["traces"] = {f"{prefix}{k}.jsonl": v for k, v in data["traces"].items()}
    base.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(("traces", "prefix"), [("traces", ""), ("traces/**/*.jsonl", "traces/")])
def test_a_baseline_keyed_by_file_path_is_read_by_trace_id(
    tmp_path: Path, traces: str, prefix: str
) -> None:
    """Baselines the Action saved before it ran on the dataset engine (keyed by the file's
    path below the directory, or as the glob matched it) still gate, with a visible note."""
    trace_dir, _ = _dataset(tmp_path)
    base = tmp_path / "base.json"
    inputs = {"traces": traces, "gold_dir": "gold", "gold_file": "fallback.json"}
    code, _, _ = run_action(tmp_path, cwd=tmp_path, save_baseline=str(base), **inputs)
    assert code == 0
    _file_path_keys(base, prefix)
    assert f"{prefix}team/c.jsonl" in json.loads(base.read_text(encoding="utf-8"))["traces"]
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, baseline=str(base), **inputs)
    assert code == 0 and outputs["regressions"] == "0", summary
    assert "3 trace(s) keyed by file path" in summary
    assert "**PASS no regression against the baseline" in summary
    (trace_dir / "a.jsonl").write_text(json.dumps({"tool": "search", "args": {"q": "x"}}) + "\n")
    code, outputs, summary = run_action(tmp_path, cwd=tmp_path, baseline=str(base), **inputs)
    assert code == 1 and int(outputs["regressions"]) >= 1
    assert "a: required calls completed 1 of 2 (baseline 2 of 2)" in summary


def test_gold_dir_matches_by_base_name_only_in_the_action(tmp_path: Path) -> None:
    """``gold-dir/<base name>.json`` is the gold of a trace in a subdirectory (and is not
    "gold without a trace"); ``toolscore eval`` on the same directories keeps matching by
    the path below the directory only."""
    _, golds = _dataset(tmp_path)
    good = json.loads((golds / "a.json").read_text(encoding="utf-8"))
    (golds / "c.json").write_text(json.dumps(good), encoding="utf-8")
    code, outputs, summary = run_action(
        tmp_path, cwd=tmp_path, traces="traces", gold_dir="gold", gold_file=""
    )
    assert code == 0, summary
    assert outputs["traces"] == "3"
    assert "without gold" not in summary and "gold without a trace" not in summary
    for workers in ("2", "1"):  # any number of processes: the same outputs
        fresh = tmp_path / f"workers{workers}"
        fresh.mkdir()
        again = run_action(
            fresh, cwd=tmp_path, traces="traces", gold_dir="gold", gold_file="", workers=workers
        )
        assert again[:2] == (code, outputs)
    assert "engine inline" in again[2]  # workers 1: in the step's own process
    report = tmp_path / "report.json"
    proc = run_cli("eval", "gold", "traces", "-o", str(report), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary_json = json.loads(report.read_text(encoding="utf-8"))
    assert summary_json["missing_gold"] == ["team/c"]
    assert summary_json["missing_trace"] == ["c"]


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


def test_a_pass_rule_decides_the_step(tmp_path: Path) -> None:
    """The Action's ``pass`` input is ``--pass``: the same verdict as the command line."""
    code, outputs, _ = run_action(tmp_path, **{"pass": "grade>=C"})
    assert code == 0 and outputs["passed"] == "true"
    code, outputs, _ = run_action(tmp_path, **{"pass": "grade>=A, no-violations"})
    assert code == 1 and outputs["passed"] == "false"
    code, _, _ = run_action(tmp_path, **{"pass": "nonsense"})
    assert code == 2


@pytest.mark.parametrize(
    "option",
    ["--max-value-bytes", "--max-decompressed-bytes", "--max-trace-bytes", "--http-timeout"],
)
def test_a_limit_that_is_not_positive_is_a_usage_error(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = REPO / "examples" / "dataset"
    argv = ["--traces", str(dataset / "traces"), "--gold-file", str(dataset / "gold.jsonl")]
    assert action_main([*argv, option, "0"]) == 2
    assert "must be a positive" in capsys.readouterr().err
