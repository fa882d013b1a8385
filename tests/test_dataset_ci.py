"""A dataset's CI outputs from the real command line: JUnit XML (one test case per trace and
per gate), SARIF (each finding at its trace's file and line, against the published schema),
and baselines per trace and in aggregate (a round trip passes unchanged and catches planted
regressions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import jsonschema
from junitparser import Error, Failure, JUnitXml, Skipped

from _cli import EXAMPLE, run_cli
from _secrets import assert_no_secrets, planted_text
from toolscore.baseline import load_baseline
from toolscore.dataset import TraceRecord, evaluate_dataset

SCHEMA = json.loads(
    (Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
FORBIDDEN = str(EXAMPLE / "forbidden.json")
EXPECTED = [
    {"tool": "run_shell", "args": {"command": "make test"}},
    {"tool": "deploy", "args": {"env": "staging"}},
]


def _good(trace_id: str) -> list[dict[str, Any]]:
    return [
        {"trace_id": trace_id, "tool": "run_shell", "args": {"command": "make test"}},
        {"trace_id": trace_id, "tool": "deploy", "args": {"env": "staging"}, "result": "ok"},
    ]


def _dataset(base: Path, traces: list[list[dict[str, Any]]], gold_ids: list[str]) -> Path:
    """Write ``traces.jsonl`` (the lines in order) and ``gold.jsonl``; returns the directory."""
    lines = [json.dumps(call) + "\n" for trace in traces for call in trace]
    (base / "traces.jsonl").write_text("".join(lines), encoding="utf-8")
    gold = "".join(json.dumps({"trace_id": t, "expected": EXPECTED}) + "\n" for t in gold_ids)
    (base / "gold.jsonl").write_text(gold, encoding="utf-8")
    return base


def _line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def _broken_line(path: Path) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.endswith('"tool": '):
            return number
    raise AssertionError("no broken line")


def _mixed(base: Path) -> Path:
    """Good traces, a leaky one (a forbidden call and every planted credential), a broken line,
    a trace without gold, gold without a trace."""
    leaky = [
        {"trace_id": "leaky", "tool": "run_shell", "args": {"command": "make test"}},
        {"trace_id": "leaky", "tool": "run_shell", "args": {"command": "rm -rf build/"}},
        {"trace_id": "leaky", "tool": "http_post", "args": {"body": planted_text()}},
        {"trace_id": "leaky", "tool": "deploy", "args": {"env": "staging"}, "error": "503"},
    ]
    broken = _good("broken")[:1]
    _dataset(
        base,
        [_good("a"), leaky, broken, _good("b"), _good("nogold")],
        ["a", "b", "leaky", "broken", "ghost"],
    )
    path = base / "traces.jsonl"
    text = path.read_text(encoding="utf-8")
    # the broken trace's second line is cut short
    path.write_text(
        text.replace('{"trace_id": "b"', '{"trace_id": "broken", "tool": \n{"trace_id": "b"', 1)
    )
    return base


def test_junit_and_sarif_for_a_dataset_validate(tmp_path: Path) -> None:
    base = _mixed(tmp_path)
    traces = base / "traces.jsonl"
    junit, sarif = base / "junit.xml", base / "out.sarif"
    proc = run_cli(
        "eval", str(base / "gold.jsonl"), str(traces), "-o", str(base / "r.json"),
        "--forbidden", FORBIDDEN, "--fail-under", "0.5", "--min-pass-rate", "90%",
        "--junit", str(junit), "--sarif", str(sarif),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr  # the broken line
    assert "> JUnit XML:" in proc.stdout and "> SARIF:" in proc.stdout
    # the verdict first, as a single trace's grade panel
    first, second = [line for line in proc.stdout.splitlines() if line.strip("╭─╮ ")][:2]
    # the gold without a trace is a trial of zero calls: scored, and it fails
    assert "Mean grade C   WARN (73.0%)   pass rate 40.0% (2 of 5)" in first
    assert "1 trace(s) with violations, 1 unreadable" in second
    for path in (junit, sarif):
        assert_no_secrets(path.read_text(encoding="utf-8"))
    assert_no_secrets(proc.stdout + proc.stderr)

    xml = JUnitXml.fromfile(str(junit))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"toolscore.traces", "toolscore.gates"}
    cases = {case.name: case for case in suites["toolscore.traces"]}
    statuses = json.loads((base / "r.json").read_text())["summary"]["statuses"]
    # one test case per record: each trace, the gold without a trace
    assert statuses == {"ok": 4, "error": 1, "no_gold": 1}
    assert len(cases) == 6
    assert cases["a"].is_passed and cases["b"].is_passed
    (failure,) = cases["leaky"].result
    assert isinstance(failure, Failure)
    assert "did not pass" in (failure.message or "")
    assert "matches forbidden rule 1" in (failure.text or "")
    files = {
        case.get("name"): case.get("file") for case in ElementTree.parse(junit).iter("testcase")
    }
    assert files["leaky"] == str(traces)
    assert isinstance(cases["nogold"].result[0], Skipped)
    assert isinstance(cases["ghost"].result[0], Failure)
    (error,) = cases["broken"].result
    assert isinstance(error, Error)
    assert f"{traces}:{_broken_line(traces)}" in (error.text or "")
    gates = {case.name: case for case in suites["toolscore.gates"]}
    assert set(gates) == {"fail-under 0.5", "min-pass-rate 90%"}
    assert gates["fail-under 0.5"].is_passed and not gates["min-pass-rate 90%"].is_passed

    log = json.loads(sarif.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    (run,) = log["runs"]
    results = run["results"]
    forbidden = [r for r in results if r["ruleId"] == "policy/forbidden_call"]
    assert len(forbidden) == 1 and forbidden[0]["properties"]["traceId"] == "leaky"
    where = forbidden[0]["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == traces.as_uri()
    assert where["region"]["startLine"] == _line_of(traces, "rm -rf")
    failed = [r for r in results if r["ruleId"] == "errors/failed_call"]
    assert failed[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == _line_of(
        traces, '"error": "503"'
    )
    assert any(r["ruleId"].startswith("secrets/") for r in results)
    assert any(
        r["ruleId"] == "input/incomplete" or r["ruleId"].startswith("input/") for r in results
    )


def _records_with_views(gold: Path, traces: Path, **options: Any) -> dict[str, Any]:
    views: dict[str, Any] = {}

    def keep(record: TraceRecord) -> None:
        assert record.ci is not None
        views[record.trace_id] = [
            (v[0], v[1], v[5])
            for v in record.ci.findings  # check, kind, location
        ]

    result = evaluate_dataset(
        str(gold), str(traces), forbidden=FORBIDDEN, details=True, on_record=keep, **options
    )
    assert all(r.ci is None for r in result)  # never stored
    result.close()
    return views


def test_finding_lines_are_the_files_across_byte_ranges(tmp_path: Path) -> None:
    # 60 traces, every one with a forbidden call: cut into byte ranges run by the pool, each
    # finding's line is its line in the file, as when the file is read in one part
    traces_calls = []
    for i in range(60):
        calls = _good(f"t{i:02d}")
        calls.insert(1, {"trace_id": f"t{i:02d}", "tool": "delete_repository", "args": {}})
        traces_calls.append(calls)
    base = _dataset(tmp_path, traces_calls, [f"t{i:02d}" for i in range(60)])
    gold, traces = base / "gold.jsonl", base / "traces.jsonl"
    whole = _records_with_views(gold, traces, engine="inline")
    parts = _records_with_views(gold, traces, engine="local", workers=2, part_bytes=2000)
    assert parts == whole and len(whole) == 60
    lines = traces.read_text().splitlines()
    for trace_id, findings in whole.items():
        (where,) = [loc for check, kind, loc in findings if kind == "forbidden_call"]
        assert where[0] == str(traces)
        assert json.loads(lines[where[1] - 1]) == {
            "trace_id": trace_id,
            "tool": "delete_repository",
            "args": {},
        }


def test_dataset_baseline_round_trip(tmp_path: Path) -> None:
    ids = [f"task{i}/trial{j}" for i in range(3) for j in range(2)]
    before = _dataset(tmp_path, [_good(t) for t in ids], ids)
    gold, traces = before / "gold.jsonl", before / "traces.jsonl"
    baseline = tmp_path / "baseline.json"
    saved = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"),
        "--save-baseline", str(baseline), "--forbidden", FORBIDDEN,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    text = baseline.read_text(encoding="utf-8")
    lines = text.splitlines()
    # small and diff-friendly: one trace a line, sorted by id, the aggregate on its own line
    trace_lines = [line for line in lines if line.startswith('"task')]
    assert [
        json.loads("{" + line.rstrip(",") + "}").popitem()[0] for line in trace_lines
    ] == sorted(ids)
    assert lines[1].startswith('"aggregate": ') and '"traces": 6' in lines[1]
    assert len(load_baseline(baseline).traces) == 6

    same = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"),
        "--baseline", str(baseline), "--forbidden", FORBIDDEN, "--junit", str(tmp_path / "j.xml"),
    )  # fmt: skip
    assert same.returncode == 0, same.stdout + same.stderr
    assert "PASS no regression against the baseline" in same.stdout
    gates = {
        case.name: case for suite in JUnitXml.fromfile(str(tmp_path / "j.xml")) for case in suite
    }
    assert gates["baseline"].is_passed

    # planted regressions: task0/trial0 stops deploying, task1/trial1 makes a forbidden call
    changed = [_good(t) for t in ids]
    changed[0] = changed[0][:1]
    changed[3].append({"trace_id": ids[3], "tool": "delete_repository", "args": {}})
    _dataset(tmp_path, changed, ids)
    worse = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"),
        "--baseline", str(baseline), "--save-baseline", str(baseline), "--forbidden", FORBIDDEN,
        "--junit", str(tmp_path / "j.xml"), "--markdown", str(tmp_path / "r.md"),
    )  # fmt: skip
    assert worse.returncode == 1, worse.stdout + worse.stderr
    report = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## Baseline" in report and f"- REGRESSION {ids[0]}: score" in report
    out = worse.stdout
    assert "FAIL" in out and "regressions against the baseline" in out
    assert f"REGRESSION {ids[0]}: score" in out
    assert f"REGRESSION {ids[0]}: required calls completed 1 of 2" in out
    assert "no longer called: deploy" in out
    assert f"REGRESSION {ids[3]}: new finding policy:forbidden_call:delete_repository" in out
    assert "REGRESSION all traces: mean score" in out
    gates = {
        case.name: case for suite in JUnitXml.fromfile(str(tmp_path / "j.xml")) for case in suite
    }
    assert not gates["baseline"].is_passed
    # --baseline b --save-baseline b updated it: the same run now passes against it
    again = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"),
        "--baseline", str(baseline), "--forbidden", FORBIDDEN,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    # a tolerance lets a small drop through, never a new finding
    tolerant = run_cli(
        "eval", str(gold), str(before / "traces.jsonl"), "-o", str(tmp_path / "r.json"),
        "--baseline", str(baseline), "--forbidden", FORBIDDEN, "--baseline-tolerance", "0.5",
    )  # fmt: skip
    assert tolerant.returncode == 0, tolerant.stdout  # everything improved
    # a trace gone from the run is a regression
    _dataset(tmp_path, changed[1:], ids[1:])
    gone = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"),
        "--baseline", str(baseline), "--forbidden", FORBIDDEN,
    )  # fmt: skip
    assert gone.returncode == 1
    assert f"REGRESSION {ids[0]}: in the baseline but not evaluated" in gone.stdout


def test_bad_dataset_baseline_is_an_error_before_the_run(tmp_path: Path) -> None:
    ids = ["a", "b"]
    base = _dataset(tmp_path, [_good(t) for t in ids], ids)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    proc = run_cli(
        "eval", str(base / "gold.jsonl"), str(base / "traces.jsonl"),
        "-o", str(tmp_path / "r.json"), "--baseline", str(bad),
    )  # fmt: skip
    assert proc.returncode == 2 and "not a toolscore baseline" in proc.stderr
    assert not (tmp_path / "r.json").exists()
