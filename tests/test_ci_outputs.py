"""Baselines, JUnit XML and SARIF from the real command line and from the writers' API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml

import toolscore
from _cli import EXAMPLE, run_cli
from _secrets import PLANTED, assert_no_secrets, planted_text
from toolscore.baseline import (
    TraceSummary,
    compare,
    dumps_baseline,
    finding_key,
    load_baseline,
    summarize,
    write_baseline,
)
from toolscore.reports.junit import Gate, write_junit
from toolscore.reports.sarif import write_sarif

SCHEMA = json.loads(
    (Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
GOLD = [
    {"tool": "run_shell", "args": {"command": "make test"}},
    {"tool": "deploy", "args": {"env": "staging"}},
]
GOOD = [
    {"tool": "run_shell", "args": {"command": "make test"}, "result": "ok"},
    {"tool": "deploy", "args": {"env": "staging"}, "result": "ok"},
]


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _jsonl(path: Path, calls: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    return path


def _leaky_calls() -> list[dict[str, Any]]:
    """A trace with a forbidden call, a failure, and every planted credential."""
    return [
        {"tool": "run_shell", "args": {"command": "make test"}, "result": "ok"},
        {"tool": "run_shell", "args": {"command": "rm -rf build/"}, "result": "ok"},
        {"tool": "http_post", "args": {"body": {"text": planted_text()}}, "result": "sent"},
        {"tool": "deploy", "args": {"env": "staging"}, "error": "503"},
    ]


def _validate_sarif(path: Path) -> dict[str, Any]:
    log = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log


# -- baselines ---------------------------------------------------------------------------------


def test_baseline_round_trip_passes_unchanged_and_catches_planted_regressions(
    tmp_path: Path,
) -> None:
    gold = _write(tmp_path / "gold.json", GOLD)
    rules = EXAMPLE / "forbidden.json"
    trace = _jsonl(tmp_path / "trace.jsonl", [*GOOD, {"tool": "search", "args": {"q": "x"}}])
    base = tmp_path / "baseline.json"
    out = str(tmp_path / "r.json")
    saved = run_cli(
        "eval", str(gold), str(trace), "--forbidden", str(rules), "-o", out,
        "--save-baseline", str(base),
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert f"> Baseline: {base}" in saved.stdout
    text = base.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert [line.split(":")[0] for line in lines[1:4]] == ['"aggregate"', '"format"', '"traces"']
    assert lines[4].startswith(json.dumps(str(trace)) + ": {")  # one trace, one line
    assert json.loads(text)["traces"][str(trace)]["score"] == pytest.approx(
        toolscore.evaluate_trace(str(gold), str(trace)).score
    )

    unchanged = run_cli(
        "eval", str(gold), str(trace), "--forbidden", str(rules), "-o", out, "--baseline", str(base)
    )
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "PASS no regression against the baseline" in unchanged.stdout

    # 1. a required call stops being made (and the score drops)
    dropped = _jsonl(tmp_path / "dropped.jsonl", [*GOOD[:1], {"tool": "search"}])
    proc = run_cli(
        "eval", str(gold), str(dropped), "--forbidden", str(rules), "-o", out,
        "--baseline", str(base),
    )  # fmt: skip
    assert proc.returncode == 1
    assert "REGRESSION" in proc.stdout
    assert "required calls completed 1 of 2 (baseline 2 of 2); no longer called: deploy" in (
        " ".join(proc.stdout.split())
    )
    assert "FAIL the run regressed against --baseline" in proc.stderr

    # 2. a new finding with the same score (the forbidden call replaces the extra call)
    forbidden = _jsonl(
        tmp_path / "forbidden.jsonl", [*GOOD, {"tool": "delete_repository", "args": {}}]
    )
    proc = run_cli(
        "eval", str(gold), str(forbidden), "--forbidden", str(rules), "-o", out,
        "--baseline", str(base), "--baseline-tolerance", "0.5",
    )  # fmt: skip
    assert proc.returncode == 1
    flat = " ".join(proc.stdout.split())
    assert "new finding policy:forbidden_call:delete_repository:rule 4 (1, baseline 0)" in flat
    assert "score" not in flat.split("REGRESSION", 1)[1].split("improved")[0]

    # 3. a score drop beyond the tolerance, and within it
    worse = _jsonl(
        tmp_path / "worse.jsonl",
        [GOOD[1], GOOD[0], {"tool": "search", "args": {"q": "x"}}],
    )
    strict = run_cli(
        "eval", str(gold), str(worse), "-o", out, "--forbidden", str(rules),
        "--baseline", str(base),
    )  # fmt: skip
    assert strict.returncode == 1
    assert "score" in strict.stdout and "< baseline" in strict.stdout
    lenient = run_cli(
        "eval", str(gold), str(worse), "-o", out, "--forbidden", str(rules),
        "--baseline", str(base), "--baseline-tolerance", "0.5",
    )  # fmt: skip
    assert lenient.returncode == 0, lenient.stdout


def test_bad_baseline_and_tolerance_are_usage_errors(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.json", GOLD)
    trace = _jsonl(tmp_path / "t.jsonl", GOOD)
    out = str(tmp_path / "r.json")
    missing = run_cli("eval", str(gold), str(trace), "-o", out, "--baseline", "nope.json")
    assert missing.returncode == 2
    assert "nope.json" in missing.stderr and "baseline file not found" in missing.stderr
    other = _write(tmp_path / "other.json", {"version": 1, "traces": {}})
    proc = run_cli("eval", str(gold), str(trace), "-o", out, "--baseline", str(other))
    assert proc.returncode == 2 and "not a toolscore baseline" in proc.stderr
    proc = run_cli(
        "eval", str(gold), str(trace), "-o", out, "--baseline", str(other),
        "--baseline-tolerance", "-1",
    )  # fmt: skip
    assert proc.returncode == 2 and "--baseline-tolerance" in proc.stderr


def _summary(score: float, findings: dict[str, int] | None = None, done: int = 2) -> TraceSummary:
    return TraceSummary(score=score, grade="B", required=(done, 2), findings=findings or {})


def test_dataset_baseline_per_trace_and_aggregate(tmp_path: Path) -> None:
    before = {
        "task1/trial1": _summary(0.9, {"errors:failed_call:fetch": 1}),
        "task1/trial2": _summary(0.8),
        "task2/trial1": _summary(0.7),
    }
    path = tmp_path / "baseline.json"
    write_baseline(path, before)
    lines = path.read_text(encoding="utf-8").splitlines()
    trace_lines = [line for line in lines if line.startswith('"task')]
    assert [line.split('"')[1] for line in trace_lines] == sorted(before)
    loaded = load_baseline(path)
    assert loaded.traces == before
    assert dumps_baseline(loaded.traces) == path.read_text(encoding="utf-8")
    assert json.loads(lines[1].split(": ", 1)[1].rstrip(","))["traces"] == 3

    assert compare(loaded, dict(before)).passed

    after = dict(before)
    after["task1/trial2"] = _summary(0.79)
    small = compare(loaded, after, tolerance=0.05)
    assert small.passed and small.improvements == []
    after["task2/trial1"] = _summary(0.6, {"secrets:openai_api_key:fetch": 1}, done=1)
    after.pop("task1/trial1")
    after["task3/trial1"] = _summary(1.0)
    result = compare(loaded, after, tolerance=0.05)
    assert not result.passed
    kinds = sorted((r.trace_id, r.kind) for r in result.regressions)
    assert kinds == [
        ("task1/trial1", "missing_trace"),
        ("task2/trial1", "finding"),
        ("task2/trial1", "required"),
        ("task2/trial1", "score"),
    ]
    assert any("1 trace(s) not in the baseline: task3/trial1" in n for n in result.notes)
    assert result.lines()[0].startswith("FAIL 4 regressions")

    mean_drop = {k: _summary(v.score - 0.04, dict(v.findings)) for k, v in before.items()}
    agg = compare(loaded, mean_drop, tolerance=0.03)
    assert {r.trace_id for r in agg.regressions} == {*before, None}
    with pytest.raises(ValueError, match="tolerance"):
        compare(loaded, after, tolerance=float("nan"))


def test_finding_keys_ignore_messages_and_positions() -> None:
    rules = [{"tool": "run_shell", "args": {"command": toolscore.Contains("rm")}}]
    one = toolscore.evaluate(
        [], [{"tool": "run_shell", "args": {"command": "rm x"}}], forbidden=rules
    )
    two = toolscore.evaluate(
        [],
        [{"tool": "ls", "args": {}}, {"tool": "run_shell", "args": {"command": "rm -rf y"}}],
        forbidden=rules,
    )
    assert (
        summarize(one).findings
        == summarize(two).findings
        == {"policy:forbidden_call:run_shell:rule 1": 1}
    )
    assert [finding_key(f) for f in two.findings] == ["policy:forbidden_call:run_shell:rule 1"]
    plain = toolscore.Finding("mine", "odd_call", "warning", "call 2 looks odd", 1, "ls")
    assert finding_key(plain) == "mine:odd_call:ls"
    assert finding_key(plain, rule=2) == "mine:odd_call:ls:rule 3"


# -- JUnit ---------------------------------------------------------------------------------------


def test_junit_single_trace_from_the_cli(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.json", GOLD)
    trace = _jsonl(tmp_path / "trace.jsonl", _leaky_calls())
    junit = tmp_path / "junit.xml"
    proc = run_cli(
        "eval", str(gold), str(trace), "-o", str(tmp_path / "r.json"),
        "--forbidden", str(EXAMPLE / "forbidden.json"), "--fail-on-violations",
        "--fail-under", "0.5", "--junit", str(junit),
    )  # fmt: skip
    assert proc.returncode == 1
    text = junit.read_text(encoding="utf-8")
    assert_no_secrets(text)
    xml = JUnitXml.fromfile(str(junit))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"toolscore.traces", "toolscore.gates"}
    (case,) = list(suites["toolscore.traces"])
    assert case.name == str(trace)
    assert not case.is_passed
    (failure,) = case.result
    assert isinstance(failure, Failure)
    assert "matches forbidden rule 1" in (failure.text or "")
    assert "passes a credential" in (failure.text or "")
    gates = {c.name: c for c in suites["toolscore.gates"]}
    assert set(gates) == {"fail-under 0.5", "fail-on-violations"}
    assert gates["fail-under 0.5"].is_passed
    assert not gates["fail-on-violations"].is_passed
    assert xml.tests == 3 and xml.failures == 2


def test_junit_dataset_with_an_unreadable_trace(tmp_path: Path) -> None:
    good = _jsonl(tmp_path / "good.jsonl", GOOD)
    leaky = _jsonl(tmp_path / "leaky.jsonl", _leaky_calls())
    broken = tmp_path / "broken.json"
    broken.write_text('[{"tool": "run_shell", "args": {}}, {"tool": "dep', encoding="utf-8")
    entries = [
        (name, str(path), toolscore.evaluate_trace(GOLD, str(path)))
        for name, path in [("good", good), ("leaky", leaky), ("broken", broken)]
    ]
    path = tmp_path / "junit.xml"
    write_junit(path, entries, [Gate("mean score", False, "mean 0.4 < 0.9", "details\nhere")])
    assert_no_secrets(path.read_text(encoding="utf-8"))
    xml = JUnitXml.fromfile(str(path))
    cases = {case.name: case for suite in xml for case in suite}
    assert cases["good"].is_passed
    assert isinstance(cases["leaky"].result[0], Failure)
    assert isinstance(cases["broken"].result[0], Error)
    assert "broken.json" in (cases["broken"].result[0].message or "")
    assert not cases["mean score"].is_passed
    assert xml.tests == 4 and xml.failures == 2 and xml.errors == 1


# -- SARIF ---------------------------------------------------------------------------------------


def test_sarif_single_trace_from_the_cli_validates(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.json", GOLD)
    trace = _jsonl(tmp_path / "trace.jsonl", _leaky_calls())
    sarif = tmp_path / "out.sarif"
    proc = run_cli(
        "eval", str(gold), "trace.jsonl", "-o", str(tmp_path / "r.json"),
        "--forbidden", str(EXAMPLE / "forbidden.json"), "--sarif", str(sarif),
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert trace.exists()
    assert_no_secrets(sarif.read_text(encoding="utf-8"))
    log = _validate_sarif(sarif)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    results = run["results"]
    for result in results:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_rule.setdefault(result["ruleId"], []).append(result)
    assert {"policy/forbidden_call", "errors/failed_call"} <= set(by_rule)
    assert {f"secrets/{kind}" for kind in PLANTED} <= set(by_rule)
    (forbidden,) = by_rule["policy/forbidden_call"]
    assert forbidden["level"] == "error"
    location = forbidden["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "trace.jsonl"
    assert location["physicalLocation"]["region"]["startLine"] == 2
    assert location["logicalLocations"][0]["name"] == "call 2"
    assert by_rule["errors/failed_call"][0]["level"] == "warning"
    assert by_rule["errors/failed_call"][0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 4
    }


def test_sarif_dataset_validates_with_documents_and_broken_traces(tmp_path: Path) -> None:
    document = _write(tmp_path / "doc trace.json", {"calls": _leaky_calls()})
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(GOOD[0]) + "\n" + '{"tool": "deploy", "args": {', encoding="utf-8")
    clean = _jsonl(tmp_path / "clean.jsonl", GOOD)
    entries = [
        (path.stem, str(path), toolscore.evaluate_trace(GOLD, str(path), forbidden=[
            {"tool": "run_shell", "args": {"command": toolscore.Contains("rm")}}
        ]))
        for path in (document, broken, clean)
    ]  # fmt: skip
    path = tmp_path / "out.sarif"
    write_sarif(path, entries)
    assert_no_secrets(path.read_text(encoding="utf-8"))
    log = _validate_sarif(path)
    results = log["runs"][0]["results"]
    doc = [r for r in results if r["properties"]["traceId"] == "doc trace"]
    assert doc and all(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
            "doc%20trace.json"
        )
        for r in doc
    )
    assert all("region" not in r["locations"][0]["physicalLocation"] for r in doc)
    assert not [r for r in results if r["properties"]["traceId"] == "clean"]
    (unreadable,) = [r for r in results if r["properties"]["traceId"] == "broken"]
    assert unreadable["ruleId"].startswith("input/") and unreadable["level"] == "error"
    assert unreadable["locations"][0]["physicalLocation"]["region"] == {"startLine": 2}
    fingerprints = [r["partialFingerprints"]["toolscoreFinding/v1"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)
    write_sarif(tmp_path / "again.sarif", entries)
    again = json.loads((tmp_path / "again.sarif").read_text(encoding="utf-8"))
    assert [r["partialFingerprints"] for r in again["runs"][0]["results"]] == [
        r["partialFingerprints"] for r in results
    ]


def test_outputs_are_written_like_every_report(tmp_path: Path) -> None:
    """Through a symbolic link (it stays a link) and into a stream (/dev/stdout)."""
    gold = _write(tmp_path / "gold.json", GOLD)
    trace = _jsonl(tmp_path / "trace.jsonl", _leaky_calls())
    target = tmp_path / "real.sarif"
    link = tmp_path / "link.sarif"
    link.symlink_to(target)
    proc = run_cli(
        "eval", str(gold), str(trace), "-o", str(tmp_path / "r.json"),
        "--sarif", str(link), "--junit", "/dev/stdout",
        "--save-baseline", str(tmp_path / "b.json"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink()
    _validate_sarif(target)
    assert '<testsuites name="toolscore"' in proc.stdout
    assert_no_secrets(proc.stdout)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".toolscore-")]
