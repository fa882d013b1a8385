"""A test suite written the way a Toolscore 1.10 user writes one: every import from 1.10's
module paths (as its reference documents them), numbers from its worked examples."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from toolscore.adapters import AnthropicAdapter, CustomAdapter, OpenAIAdapter
from toolscore.adapters.base import ToolCall
from toolscore.adapters.gemini import GeminiAdapter
from toolscore.adapters.langchain import LangChainAdapter
from toolscore.adapters.mcp import MCPAdapter
from toolscore.adapters.otel import OTelAdapter
from toolscore.core import EvaluationResult, evaluate_trace, load_trace, test_agent
from toolscore.diff import build_eval_fix_list, render_failure
from toolscore.expect import Expectation
from toolscore.explainer import generate_explanations, get_all_tips, get_top_issues
from toolscore.integrations import from_crewai, from_openai
from toolscore.metrics import calculate_argument_f1, calculate_selection_accuracy
from toolscore.metrics.arguments import calculate_argument_f1 as f1_from_module
from toolscore.metrics.efficiency import calculate_redundant_call_rate
from toolscore.metrics.policy import check_forbidden_calls, rules_from_json
from toolscore.metrics.security import find_secrets, redact_secrets
from toolscore.metrics.side_effects import calculate_side_effect_success_rate
from toolscore.metrics.tool_correctness import calculate_required_call_recall
from toolscore.metrics.trajectory import calculate_trajectory_accuracy
from toolscore.reports import generate_csv_report, generate_json_report, print_evaluation_summary
from toolscore.reports.findings import behavior_findings
from toolscore.reports.html_report import generate_html_report
from toolscore.reports.markdown_report import generate_markdown_report
from toolscore.validators.database import SQLValidator
from toolscore.validators.filesystem import FileSystemValidator
from toolscore.validators.http import HTTPValidator
from toolscore.verdict import GRADE_ORDER, FixSuggestion, letter_grade

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
GOLD = [
    {"tool": "search", "args": {"q": "weather NYC"}},
    {"tool": "fetch", "args": {"url": "https://api.example.com/w"}},
    {"tool": "summarize"},
]
TRACE = {
    "calls": [
        {"tool": "search", "args": {"q": "weather NYC"}},
        {
            "tool": "fetch",
            "args": {
                "url": "https://api.example.com/w",
                "headers": {"Authorization": f"Bearer {KEY}"},
            },
            "error": "timeout",
        },
        {
            "tool": "fetch",
            "args": {
                "url": "https://api.example.com/w",
                "headers": {"Authorization": f"Bearer {KEY}"},
            },
            "is_error": True,
        },
        {"tool": "run_shell", "args": {"command": ["rm", "-rf", "/tmp/x"]}},
    ]
}
RULES = [
    {"tool": "run_shell", "args": {"command": {"$regex": "rm -rf"}}, "reason": "destructive"},
    {"tool": "delete_repository"},
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    gold, trace, rules = tmp_path / "gold.json", tmp_path / "trace.json", tmp_path / "rules.json"
    gold.write_text(json.dumps(GOLD), encoding="utf-8")
    trace.write_text(json.dumps(TRACE), encoding="utf-8")
    rules.write_text(json.dumps(RULES), encoding="utf-8")
    return gold, trace, rules


def test_the_reference_run(files: tuple[Path, Path, Path]) -> None:
    gold, trace, rules = files
    result = evaluate_trace(str(gold), str(trace), forbidden=str(rules))
    assert isinstance(result, EvaluationResult)
    assert result.score == pytest.approx(0.69)
    assert result.grade == "D"
    assert result.selection_accuracy == 0.75
    assert result.argument_f1 == pytest.approx(0.8)
    assert result.required_call_recall == pytest.approx(1 / 3)
    assert [v["tool"] for v in result.policy_violations] == ["run_shell"]
    assert behavior_findings(result)[0] == (
        "error",
        "call 4 run_shell matches forbidden rule 1: destructive",
    )
    assert len(load_trace(str(trace))) == 4


def test_metric_functions_take_lists_of_calls() -> None:
    gold = [ToolCall("search", {"q": "x"}), ToolCall("search", {"q": "y"})]
    trace = [ToolCall("search", {"q": "x"}, metadata={"error": "boom"})]
    assert calculate_selection_accuracy(gold, trace) == 1.0
    assert calculate_argument_f1(gold, trace) == {"precision": 1.0, "recall": 0.5, "f1": 2 / 3}
    assert f1_from_module is calculate_argument_f1
    assert calculate_required_call_recall(gold, trace) == 0.0
    assert calculate_redundant_call_rate(gold, trace)["error_count"] == 1
    assert calculate_trajectory_accuracy(gold, trace)["step_match_rate"] == 0.5
    # gold a(x=1) against [a(x=1, y=2), a(x=1)]: the earliest equal-weight call is paired
    a_gold = [ToolCall("a", {"x": 1})]
    assert (
        calculate_argument_f1(a_gold, [ToolCall("a", {"x": 1, "y": 2}), ToolCall("a", {"x": 1})])[
            "precision"
        ]
        == 0.5
    )


def test_security_and_policy() -> None:
    calls = [ToolCall("fetch", {"headers": {"Authorization": f"Bearer {KEY}"}})]
    found = find_secrets(calls)
    assert found["secret_count"] == 1 and found["secrets"][0]["path"] == "headers.Authorization"
    assert KEY not in redact_secrets(f"token {KEY}")
    shell = [ToolCall("run_shell", {"command": ["rm", "-rf", "/"]})]
    assert check_forbidden_calls(shell, rules_from_json(RULES))["violation_count"] == 1


def test_adapters_parse_their_format() -> None:
    openai = {
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "w", "arguments": '{"c": "NYC"}'},
                    }
                ],
            }
        ]
    }
    assert [(c.tool, c.args) for c in OpenAIAdapter().parse(openai)] == [("w", {"c": "NYC"})]
    anthropic = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "s", "input": {}}],
        }
    ]
    assert AnthropicAdapter().parse(anthropic)[0].tool == "s"
    gemini = {
        "candidates": [{"content": {"parts": [{"functionCall": {"name": "g", "args": {"a": 1}}}]}}]
    }
    assert GeminiAdapter().parse(gemini)[0].args == {"a": 1}
    assert LangChainAdapter().parse([{"tool": "lc", "tool_input": {"k": 1}}])[0].args == {"k": 1}
    assert CustomAdapter().parse({"calls": [{"name": "c", "error": "x"}]})[0].is_error
    mcp = {
        "format": "mcp",
        "messages": [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "m", "arguments": {}},
            },
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "bad"}},
        ],
    }
    assert MCPAdapter().parse(mcp)[0].is_error
    span = {
        "name": "execute_tool t",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "t"}},
        ],
    }
    assert (
        OTelAdapter().parse({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})[0].tool == "t"
    )
    with pytest.raises(ValueError, match="Trace data cannot be None"):
        OpenAIAdapter().parse(None)  # type: ignore[arg-type]


def test_reports_write_their_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolscore import evaluate

    result = evaluate(GOLD, TRACE["calls"], forbidden=RULES)
    for write, name in [
        (generate_json_report, "r.json"),
        (generate_csv_report, "r.csv"),
        (generate_markdown_report, "r.md"),
        (generate_html_report, "r.html"),
    ]:
        path = write(result, tmp_path / name)
        assert path == tmp_path / name and path.stat().st_size > 0
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["summary"]["grade"] == "D"
    csv_text = (tmp_path / "r.csv").read_text(encoding="utf-8")
    assert "sequence_metrics,sequence_accuracy,50.00%" in csv_text
    assert KEY not in csv_text  # 1.10 wrote it raw
    print_evaluation_summary(result)
    assert "Toolscore Evaluation Results" in capsys.readouterr().out


def test_fix_list_failure_text_and_explanations() -> None:
    from toolscore import evaluate

    result = evaluate(GOLD, [{"tool": "search", "args": {"q": "weather"}}, {"tool": "run_shell"}])
    fixes = build_eval_fix_list(result.gold_calls, result.trace_calls or [])
    assert all(isinstance(f, FixSuggestion) for f in fixes)
    assert [f.priority for f in fixes] == sorted(f.priority for f in fixes)
    assert (
        fixes[0].problem == "expected call to `summarize` never happened" or fixes[0].priority <= 1
    )
    assert "score" in render_failure(result, 0.9)
    explanations = generate_explanations(result)
    assert "Check that your agent has access to all required tools" in get_all_tips(explanations)
    assert get_top_issues(explanations, max_issues=2)[0].severity == "error"


def test_verdict_and_grades() -> None:
    assert GRADE_ORDER == ("A", "B", "C", "D", "F")
    assert letter_grade(0.9) == "A" and letter_grade(0.8999999999) == "B"
    assert letter_grade(float("nan")) == "F"


def test_side_effects(tmp_path: Path, files: tuple[Path, Path, Path]) -> None:
    gold = [
        ToolCall("fetch", {"url": "u"}, metadata={"side_effects": {"http_ok": True, "nope": 1}})
    ]
    trace = [ToolCall("fetch", {"url": "u"}, result={"status": 200})]
    got = calculate_side_effect_success_rate(gold, trace, {"http_ok": HTTPValidator().validate})
    assert (got["total_checks"], got["passed_checks"]) == (2, 1)
    assert got["details"][1]["reason"] == "No validator available"
    (tmp_path / "out.txt").write_text("report", encoding="utf-8")
    assert FileSystemValidator(base_path=str(tmp_path), contains="rep").validate(
        ToolCall("write", {"path": "out.txt"}), True
    )
    assert SQLValidator().validate(ToolCall("q", result={"rowcount": 2}), {"min": 1, "max": 2})
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table t (x)")
    assert not SQLValidator().validate(
        ToolCall("q"), {"database": str(db), "query": "select * from t"}
    )

    # evaluate_trace validates a gold file's side_effects on the paired trace calls
    gold_file, trace_file, _ = files
    spec = json.loads(gold_file.read_text(encoding="utf-8"))
    spec[0]["side_effects"] = {"sql_rows": True}
    spec[1]["side_effects"] = {"http_ok": True}
    gold_file.write_text(json.dumps(spec), encoding="utf-8")
    result = evaluate_trace(str(gold_file), str(trace_file))
    effects = result.metrics["side_effect_metrics"]
    assert effects["total_checks"] == 2 and effects["passed_checks"] == 0
    assert result.notes == [
        "0 of 2 side-effect checks passed (failed: sql_rows on search: Validator failed, "
        "http_ok on fetch: Validator failed)"
    ]
    skipped = evaluate_trace(str(gold_file), str(trace_file), validate_side_effects=False)
    assert "side_effect_metrics" not in skipped.metrics
    assert skipped.notes[0].startswith("2 side-effect checks were not run")


def test_integrations_and_agents() -> None:
    assert from_crewai([{"tool_name": "s", "tool_args": '{"q": 1}'}]) == [
        {"tool": "s", "args": {"q": 1}}
    ]
    response = {
        "choices": [
            {"message": {"tool_calls": [{"function": {"name": "w", "arguments": '{"c": 1}'}}]}}
        ]
    }
    assert from_openai(response)[0]["tool"] == "w"

    def agent(prompt: str) -> list[dict[str, object]]:
        return [{"tool": "search", "args": {"q": prompt}}]

    result = test_agent(agent, "x", [{"tool": "search", "args": {"q": "x"}}], min_score=0.9)
    assert result.score > 0.99
    assert isinstance(Expectation(agent), Expectation)
