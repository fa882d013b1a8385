from __future__ import annotations

from datetime import datetime

from _results import guardrails_metrics, make_result

from _secrets import ALL_KEYS, PLANTED, assert_no_secrets
from toolscore.errors import TruncatedTrace
from toolscore.reports.markdown import compact_metrics, render_markdown, write_markdown

NOW = datetime(2024, 1, 2, 3, 4, 5)

SEED_LINES = [
    "- 🔴 **error**: call 2 run_shell matches forbidden rule 1: destructive shell command",
    "- 🔴 **error**: call 3 http_post passes a credential (aws_access_key_id) in 'body.text': "
    "AKIA…LE",
    "- 🟡 **warning**: 2 of 5 tool calls failed (deploy x2)",
    "- 🟡 **warning**: 1 call repeats a failed call with the same arguments",
]


def test_sections_and_findings() -> None:
    text = render_markdown(make_result(), now=NOW)
    lines = text.splitlines()
    assert lines[:3] == ["# Toolscore Evaluation Report", "", "**Generated:** 2024-01-02 03:04:05"]
    assert "- **Score:** 74.0% (grade C, fail)" in lines
    assert "- **Violations:** 1 forbidden call(s), 1 credential(s)" in lines
    assert "- **Required Calls Completed:** 1 of 2" in lines
    assert "| Argument F1 Score | 100.00% | ✅ Excellent |" in lines
    assert "| Sequence Accuracy | 40.00% | 🔴 Needs Improvement |" in lines
    start = lines.index("## 🛡️ Behavior and Safety")
    assert lines[start + 2 : start + 6] == SEED_LINES
    assert "- **Failed Calls:** 2" in lines
    assert "- **Retries After Failure:** 1" in lines
    assert "- **Extra tools:** http_post" in lines


def test_required_line_also_at_full_recall() -> None:
    metrics = guardrails_metrics()
    metrics["required_call_recall"] = 1.0
    assert "- **Required Calls Completed:** 2 of 2" in render_markdown(make_result(metrics))
    metrics["required_call_recall"] = None
    assert "Required Calls Completed" not in render_markdown(make_result(metrics))


def test_no_argument_dump_and_lists_capped() -> None:
    metrics = guardrails_metrics()
    details = metrics["trajectory_metrics"]["trajectory_details"]
    details[1]["actual_args"] = {"command": "UNIQUE-ARGUMENT-MARKER"}
    metrics["policy_metrics"]["violations"][0]["args"] = {"command": "UNIQUE-ARGUMENT-MARKER"}
    metrics["tool_correctness_metrics"]["extra_tools"] = [f"tool{i}" for i in range(120)]
    text = render_markdown(make_result(metrics))
    assert "UNIQUE-ARGUMENT-MARKER" not in text
    assert "tool49, ... and 70 more (see the JSON report)" in text
    assert "tool50" not in text.split("## 📋 All Metrics")[0]
    compact = compact_metrics(metrics)
    assert compact["trajectory_metrics"]["trajectory_details"] == "3 steps (see the JSON report)"
    assert len(compact["tool_correctness_metrics"]["extra_tools"]) == 51


def test_every_credential_is_redacted() -> None:
    metrics = guardrails_metrics(extra_tool="post " + ALL_KEYS[1])
    metrics["policy_metrics"]["violations"][0]["reason"] = " ".join(ALL_KEYS)
    metrics["tool_correctness_metrics"]["missing_tools"] = list(ALL_KEYS)
    for step in metrics["trajectory_metrics"]["trajectory_details"]:
        step["actual_args"] = {"k": list(ALL_KEYS)}
        step["actual_tool"] = "run_shell"
        step["expected_tool"] = "run_shell"
        step["expected_args"] = {"k": "x"}
        step["matches"] = False
    error = TruncatedTrace("trace.json", f"bad value near {PLANTED['openai_api_key'][0]}", line=3)
    text = render_markdown(make_result(metrics, error=error))
    assert "[REDACTED aws_access_key_id: AKIA…LE]" in text
    # redacted first, then escaped as Markdown text: the marker's brackets are escaped
    assert "- **Trace incomplete:** trace.json:3: bad value near \\[REDACTED" in text
    assert_no_secrets(text)


def test_markup_in_data_is_escaped() -> None:
    metrics = guardrails_metrics(extra_tool="x[/bar]|<b>")
    text = render_markdown(make_result(metrics))
    assert "call 3 x\\[/bar\\]\\|\\<b\\> passes a credential" in text
    assert "<b>" not in text.split("```json")[0]


def test_write_markdown(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "report.md"
    write_markdown(make_result(), path)
    assert SEED_LINES[0] in path.read_text(encoding="utf-8").splitlines()
