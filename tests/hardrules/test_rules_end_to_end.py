"""Hard rules from the spec, end to end: the Python API, the real CLI (every report and
--fail-on-violations) and a trace read in parts by several processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolscore import evaluate, evaluate_trace
from toolscore.parts import trace as parallel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _cli import run_cli

KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GOLD = [{"tool": "search", "args": {"q": "weather"}}, {"tool": "deploy", "args": {"env": "prod"}}]


def _kinds(result: Any) -> list[tuple[str, str, int | None]]:
    return [(v["rule"], v["kind"], v["index"]) for v in result.rule_violations]


# -- each rule kind, from the spec --------------------------------------------------------


def test_allowlist_only_these_tools_nothing_else() -> None:
    trace = [{"tool": "search"}, {"tool": "run_shell"}, {"tool": "search"}, {"tool": "rm"}]
    result = evaluate([], trace, rules={"allow": ["search"]})
    assert _kinds(result) == [("allow", "tool_not_allowed", 1), ("allow", "tool_not_allowed", 3)]
    assert (
        result.rule_violations[0]["message"]
        == "call 2 run_shell is not an allowed tool (rule allow)"
    )


def test_a_before_b() -> None:
    rules = {"order": [{"before": "login", "after": "pay", "reason": "auth first"}]}
    bad = evaluate([], [{"tool": "pay"}, {"tool": "login"}, {"tool": "pay"}], rules=rules)
    assert _kinds(bad) == [("order[0]", "order_violation", 0)]
    assert bad.rule_violations[0]["message"] == (
        "call 1 pay comes before any call to login (rule order[0]: auth first)"
    )
    good = evaluate([], [{"tool": "login"}, {"tool": "pay"}, {"tool": "pay"}], rules=rules)
    assert good.rule_violations == []
    assert evaluate([], [{"tool": "other"}], rules=rules).rule_violations == []


def test_an_order_chain_is_its_pairs() -> None:
    trace = [{"tool": "lint"}, {"tool": "deploy"}, {"tool": "test"}]
    result = evaluate([], trace, rules={"order": [["lint", "test", "deploy"]]})
    assert _kinds(result) == [("order[0].1", "order_violation", 1)]


def test_a_at_most_once_and_between_one_and_three_calls_to_b() -> None:
    rules = {"counts": [{"tool": "a", "max": 1}, {"tool": "b", "min": 1, "max": 3}]}
    trace = [{"tool": "a"}, {"tool": "b"}, {"tool": "a"}, {"tool": "a"}]
    assert _kinds(evaluate([], trace, rules=rules)) == [("counts[0]", "too_many_calls", 2)]
    none_of_b = evaluate([], [{"tool": "a"}], rules=rules)
    assert _kinds(none_of_b) == [("counts[1]", "too_few_calls", None)]
    assert none_of_b.rule_violations[0]["message"] == (
        "0 calls to b; at least 1 required (rule counts[1])"
    )
    four = evaluate([], [{"tool": "b"}] * 4, rules=rules)
    assert _kinds(four) == [("counts[1]", "too_many_calls", 3)]


def test_a_step_budget_for_the_whole_trace() -> None:
    result = evaluate([], [{"tool": "a"}] * 5, rules={"max_calls": 3})
    assert _kinds(result) == [("max_calls", "step_budget_exceeded", 3)]
    assert evaluate([], [{"tool": "a"}] * 3, rules={"max_calls": 3}).rule_violations == []


def test_data_flow_a_credential_in_a_result_then_a_call_that_sends_data_out() -> None:
    trace = [
        {"tool": "http_post", "args": {"url": "https://x"}},  # before any source: fine
        {"tool": "get_env", "args": {}, "result": {"GITHUB_TOKEN": KEY}},
        {"tool": "search", "args": {"q": "x"}},
        {"tool": "http_post", "args": {"url": "https://y"}},
    ]
    result = evaluate([], trace, rules={"data_flow": {"sinks": ["http_post", "send_email"]}})
    assert _kinds(result) == [("data_flow", "data_flow", 3)]
    message = result.rule_violations[0]["message"]
    assert message == (
        "call 4 http_post sends data out after call 2 get_env returned a credential "
        "(github_token) (rule data_flow)"
    )
    assert KEY not in message


def test_data_flow_a_file_read_from_a_private_path() -> None:
    rules = {
        "data_flow": {
            "sinks": ["send_email"],
            "sources": [{"tool": "read_file", "args": {"path": {"$regex": r"\.ssh/|\.env$"}},
                         "reason": "read a private path"}],
            "credentials": False,
        }
    }  # fmt: skip
    from toolscore.hardrules import ruleset_from_json

    trace = [
        {"tool": "read_file", "args": {"path": "README.md"}},
        {"tool": "send_email", "args": {}},
        {"tool": "read_file", "args": {"path": "/app/.env"}},
        {"tool": "send_email", "args": {}},
    ]
    result = evaluate([], trace, rules=ruleset_from_json(rules))
    assert _kinds(result) == [("data_flow", "data_flow", 3)]
    assert "after call 3 read_file (read a private path)" in result.rule_violations[0]["message"]


@pytest.mark.parametrize(
    ("trace", "verdicts"),
    [
        ([("search", "weather"), ("deploy", "prod")],
         {"strict": True, "unordered": True, "subset": True, "superset": True}),
        ([("deploy", "prod"), ("search", "weather")],
         {"strict": False, "unordered": True, "subset": True, "superset": True}),
        ([("search", "weather")],
         {"strict": False, "unordered": False, "subset": True, "superset": False}),
        ([("search", "weather"), ("fetch", "x"), ("deploy", "prod")],
         {"strict": False, "unordered": False, "subset": False, "superset": True}),
        ([("search", "weather"), ("deploy", "staging")],
         {"strict": False, "unordered": False, "subset": False, "superset": False}),
    ],
)  # fmt: skip
def test_match_modes_are_verdicts_next_to_the_score(
    trace: list[tuple[str, str]], verdicts: dict[str, bool]
) -> None:
    calls = [{"tool": t, "args": {"q" if t != "deploy" else "env": v}} for t, v in trace]
    plain = evaluate(GOLD, calls)
    result = evaluate(GOLD, calls, rules={"match": list(verdicts)})
    assert result.match_verdicts == verdicts
    assert result.score == plain.score  # verdicts never change the score
    failed = [v["rule"] for v in result.rule_violations]
    assert failed == [f"match:{m}" for m, ok in verdicts.items() if not ok]
    lines = result.behavior_findings()
    for mode, ok in verdicts.items():
        if ok:
            assert ("info", f"trajectory match ({mode}) passed") in lines


@pytest.mark.parametrize(
    ("mode", "passed"),
    [("exact", False), ("subset", True), ("superset", False), ("ignore", True)],
)
def test_argument_modes_decide_when_a_call_matches(mode: str, passed: bool) -> None:
    calls = [{"tool": "search", "args": {"q": "weather", "page": 2}},
             {"tool": "deploy", "args": {"env": "prod"}}]  # fmt: skip
    result = evaluate(GOLD, calls, rules={"match": "strict", "arguments": {"mode": mode}})
    assert result.match_verdicts == {"strict": passed}


def test_argument_modes_per_tool_and_per_argument() -> None:
    calls = [{"tool": "search", "args": {"q": "weather", "page": 2}},
             {"tool": "deploy", "args": {"env": "prod", "at": "now"}}]  # fmt: skip
    per_tool = {"match": "strict", "arguments": {"tools": {"search": "subset", "deploy": {
        "args": {"at": "ignore"}}}}}  # fmt: skip
    assert evaluate(GOLD, calls, rules=per_tool).match_verdicts == {"strict": True}
    only_search = {"match": "strict", "arguments": {"tools": {"search": "subset"}}}
    assert evaluate(GOLD, calls, rules=only_search).match_verdicts == {"strict": False}


def test_without_hard_rules_nothing_changes() -> None:
    calls = [{"tool": "search", "args": {"q": "weather", "page": 2}}]
    result = evaluate(GOLD, calls)
    assert "rule_metrics" not in result.metrics
    assert result.rule_violations == [] and result.match_verdicts == {}
    assert all(f.check != "rules" for f in result.findings)


# -- files, the CLI, every report ---------------------------------------------------------


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


RULE_FILE = {
    "forbidden": [{"tool": "run_shell", "args": {"command": {"$contains": "rm -rf"}},
                   "reason": "destructive"}],
    "allow": ["search", "deploy", "run_shell", "http_post", "get_env"],
    "order": [{"before": "search", "after": "deploy"}],
    "counts": [{"tool": "deploy", "max": 1}],
    "schemas": [{"name": "search", "input_schema": {"type": "object", "properties": {
        "q": {"type": "string"}}, "required": ["q"]}}],
    "data_flow": {"sinks": ["http_post"]},
    "match": ["superset"],
}  # fmt: skip
TRACE = [
    {"tool": "deploy", "args": {"env": "prod"}},
    {"tool": "search", "args": {"query": "weather"}},
    {"tool": "get_env", "args": {}, "result": {"token": KEY}},
    {"tool": "http_post", "args": {"url": "https://x"}},
    {"tool": "deploy", "args": {"env": "prod"}},
    {"tool": "curl", "args": {}},
]


def test_the_cli_reports_every_rule_in_every_report(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.json", GOLD)
    rules = _write(tmp_path / "rules.json", RULE_FILE)
    trace = _write(tmp_path / "trace.json", TRACE)
    out, md, html = tmp_path / "out.json", tmp_path / "r.md", tmp_path / "r.html"
    args = [str(gold), str(trace), "--forbidden", str(rules), "-o", str(out)]
    proc = run_cli("eval", *args, "--markdown", str(md), "--html", str(html), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = [
        "call 1 deploy comes before any call to search (rule order[0])",
        "call 2 search arguments fail its schema at '(root)': 'q' is a required property "
        "(rule schema:search)",
        "call 4 http_post sends data out after call 3 get_env returned a credential "
        "(github_token) (rule data_flow)",
        "call 5 deploy is call 2 to deploy; at most 1 allowed (rule counts[0])",
        "call 6 curl is not an allowed tool (rule allow)",
        "trajectory match (superset) failed: expected call 1 search has no matching call "
        "(rule match:superset)",
    ]
    console = " ".join(proc.stdout.split())
    assert "Behavior and safety" in proc.stdout
    markdown, page = md.read_text(), html.read_text()
    for line in expected:
        assert line in console
        assert line.replace("'", "&#x27;") in page
        assert line.replace("_", "\\_") in markdown or line in markdown
    assert KEY not in proc.stdout + markdown + page
    report = json.loads(out.read_text())
    assert report["summary"]["rule_violations"] == 6
    assert report["summary"]["match"] == {"superset": False}
    metrics = report["metrics"]["rule_metrics"]
    assert [v["message"] for v in metrics["violations"]] == expected
    assert metrics["rule_count"] == 1 + 1 + 1 + 1 + 1 + 1
    assert metrics["match"] == {
        "superset": {"passed": False, "detail": "expected call 1 search has no matching call"}
    }
    kinds = [(f["check"], f["kind"], f["call_index"]) for f in report["findings"]
             if f["check"] == "rules"]  # fmt: skip
    assert kinds == [
        ("rules", "order_violation", 0), ("rules", "schema_violation", 1),
        ("rules", "data_flow", 3), ("rules", "too_many_calls", 4),
        ("rules", "tool_not_allowed", 5), ("rules", "match_failed", None),
    ]  # fmt: skip

    gated = run_cli("eval", *args, "--fail-on-violations", cwd=tmp_path)
    assert gated.returncode == 1
    assert "ERROR 6 violation(s) found (" in gated.stderr
    assert "broken rule(s)" in gated.stderr


def test_a_bad_rule_file_exits_2_naming_the_file_and_rule(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.json", GOLD)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"allow": ["a"], "counts": [{"tool": "a", "max": 1},
                                                             {"tool": "a", "max": "one"}]},
                                indent=2))  # fmt: skip
    trace = _write(tmp_path / "trace.json", TRACE)
    proc = run_cli("eval", str(gold), str(trace), "--forbidden", str(rules), cwd=tmp_path)
    assert proc.returncode == 2
    assert (
        "rules.json:10: count rule 1 'max' must be a non-negative integer, got 'one' "
        "(at $.counts[1])"
    ) in proc.stderr


def test_rules_in_the_gold_file(tmp_path: Path) -> None:
    gold = _write(
        tmp_path / "gold.json",
        {"calls": GOLD, "match": ["strict", "unordered"], "rules": {"max_calls": 1}},
    )
    trace = _write(tmp_path / "trace.jsonl", [])
    trace.write_text("".join(json.dumps(c) + "\n" for c in reversed(GOLD)))
    result = evaluate_trace(gold, trace)
    assert result.match_verdicts == {"strict": False, "unordered": True}
    assert [v["rule"] for v in result.rule_violations] == ["max_calls", "match:strict"]


# -- a trace read in parts by several processes -------------------------------------------


def test_parts_read_by_other_processes_give_the_same_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 2000)
    tools = ["search", "deploy", "get_env", "http_post", "curl", "run_shell"]
    lines = []
    for i in range(400):
        tool = tools[(i * 7) % len(tools)] if i > 4 else "http_post"
        tool = "deploy" if i == 4 else tool
        call: dict[str, Any] = {"tool": tool, "args": {"q": "weather", "i": i}}
        if tool == "search" and i % 5 == 0:
            call["args"] = {"query": "weather"}
        if tool == "get_env" and i > 200:
            call["result"] = {"token": KEY}
        lines.append(json.dumps(call))
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(f"{text}\n" for text in lines))
    rules = {**RULE_FILE, "max_calls": 150, "counts": [{"tool": "deploy", "max": 30},
             {"tool": "search", "min": 500}], "match": ["superset", "subset"]}  # fmt: skip
    rule_path = _write(tmp_path / "rules.json", rules)
    assert parallel.plan(path, "auto", 3) is not None
    runs: list[Any] = []
    read = parallel.run

    def counted(*args: Any, **kwargs: Any) -> None:
        runs.append(args[1])  # the plan whose parts other processes read
        read(*args, **kwargs)

    monkeypatch.setattr(parallel, "run", counted)
    one = evaluate_trace(GOLD, path, forbidden=rule_path, workers=1)
    assert runs == []
    parts = evaluate_trace(GOLD, path, forbidden=rule_path, workers=3)
    assert len(runs) == 1 and len(runs[0].bounds) > 2  # read in parts by other processes
    assert parts.metrics["rule_metrics"] == one.metrics["rule_metrics"]
    kinds = {v["kind"] for v in one.rule_violations}
    assert kinds == {
        "order_violation", "schema_violation", "data_flow", "too_many_calls",
        "tool_not_allowed", "step_budget_exceeded", "too_few_calls", "match_failed",
    }  # fmt: skip
    mine = [f.to_json() for f in one.findings if f.check == "rules"]
    assert [f.to_json() for f in parts.findings if f.check == "rules"] == mine


def test_watch_reports_each_broken_rule_as_its_line_arrives(tmp_path: Path) -> None:
    rules = _write(tmp_path / "rules.json", {"allow": ["search", "http_post", "get_env"],
                                             "counts": [{"tool": "search", "max": 1}],
                                             "data_flow": {"sinks": ["http_post"]}})  # fmt: skip
    lines = [
        {"tool": "search", "args": {"q": "a"}},
        {"tool": "get_env", "args": {}, "result": {"t": KEY}},
        {"tool": "search", "args": {"q": "b"}},
        {"tool": "http_post", "args": {}},
        {"tool": "curl", "args": {}},
    ]
    stdin = "".join(json.dumps(c) + "\n" for c in lines)
    findings = tmp_path / "findings.jsonl"
    proc = run_cli("watch", "-", "--forbidden", str(rules), "--findings", str(findings),
                   "--fail-on-violations", stdin=stdin, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1
    assert "ERROR    call 3 search is call 2 to search; at most 1 allowed" in proc.stdout
    assert "call 5 curl is not an allowed tool (rule allow)" in proc.stdout
    kinds = [json.loads(x)["kind"] for x in findings.read_text().splitlines()]
    assert kinds == ["too_many_calls", "data_flow", "tool_not_allowed"]
    assert KEY not in proc.stdout + findings.read_text()
