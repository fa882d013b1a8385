from __future__ import annotations

import io
from typing import Any

from _results import guardrails_metrics, make_result
from rich.console import Console

from _secrets import PLANTED, assert_no_secrets
from toolscore.errors import TruncatedTrace
from toolscore.reports.console import EvalSummary, make_console, score_style
from toolscore.result import EvaluationResult


def render(result: EvaluationResult, **kwargs: Any) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(EvalSummary(result, **kwargs))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


GUARDRAILS = """
╭──────────────────────────────╮
│ Toolscore Evaluation Results │
╰──────────────────────────────╯

┏━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┓
┃ Metric             ┃  Score ┃
┡━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━┩
│ Overall Score      │  74.0% │
│ Selection Accuracy │  80.0% │
│ Argument F1        │ 100.0% │
│ Sequence Accuracy  │  40.0% │
└────────────────────┴────────┘

╭───────────────────────────────────────────────────────────────╮
│ Grade C   FAIL (74.0%)                                        │
│ grade C below A; required calls 50% completed; 2 violation(s) │
╰───────────────────────────────────────────────────────────────╯

Required calls completed: 1 of 2 (missing or failed; not part of the default score)

Top issues to fix
  1. run_shell  step 2: called `run_shell` where `deploy` was expected
     -> Adjust the prompt or tool descriptions so the agent picks `deploy` here.
  2. http_post  unexpected extra call to `http_post`
     -> Remove the redundant call, or add it to the expected spec if it is intended.

Behavior and safety
  ERROR    call 2 run_shell matches forbidden rule 1: destructive shell command
  ERROR    call 3 http_post passes a credential (aws_access_key_id) in 'body.text': AKIA…LE
  WARNING  2 of 5 tool calls failed (deploy x2)
  WARNING  1 call repeats a failed call with the same arguments

Use --verbose for detailed metrics and failure analysis.

"""


def test_guardrails_summary_exact() -> None:
    guardrails = make_result()
    assert render(guardrails) == GUARDRAILS


def test_verbose_adds_core_metrics() -> None:
    guardrails = make_result()
    out = render(guardrails, verbose=True)
    lines = out.splitlines()
    assert "Expected calls: 2" in lines
    assert "Actual calls: 5" in lines
    assert "│ Tool Correctness     │ 100.0% │ 2 of 2 expected tools called" in out
    assert "│ Sequence Accuracy    │  40.0% │ Edit distance: 3.0" in out
    assert "│ Argument F1          │ 100.0% │ Precision: 100.0%, Recall: 100.0%" in out
    assert "│ Redundant Call Rate  │  60.0% │ Unnecessary calls (3/5)" in out
    assert "Use --verbose" not in out
    assert "  WARNING  1 call repeats a failed call with the same arguments" in lines


def test_required_line_only_below_one() -> None:
    for recall in (1.0, None):
        metrics = guardrails_metrics()
        metrics["required_call_recall"] = recall
        assert "Required calls completed" not in render(make_result(metrics))
    metrics = guardrails_metrics()
    metrics["required_call_recall"] = 0.0
    assert "Required calls completed: 0 of 2 (missing" in render(make_result(metrics))


def test_no_issues_and_no_findings() -> None:
    metrics = guardrails_metrics()
    metrics["tool_correctness_metrics"]["extra_tools"] = []
    metrics["trajectory_metrics"]["trajectory_details"] = []
    metrics["security_metrics"] = {"secret_count": 0, "secrets": []}
    metrics["policy_metrics"]["violations"] = []
    metrics["efficiency_metrics"].update(error_count=0, retry_after_error_count=0)
    out = render(make_result(metrics, failed_tools=[]))
    assert "No tool-calling issues - the actual calls match the expected spec." in out
    assert "Behavior and safety" not in out
    assert "Top issues" not in out


def test_markup_in_tool_names_is_printed_as_is() -> None:
    name = "x[/bar]"
    metrics = guardrails_metrics(extra_tool=name)
    metrics["tool_correctness_metrics"]["missing_tools"] = ["[bold]y[/bold]"]
    out = render(make_result(metrics))
    assert f"  3. {name}  unexpected extra call to `{name}`" in out
    assert "  1. [bold]y[/bold]  expected call to `[bold]y[/bold]` never happened" in out
    assert f"  ERROR    call 3 {name} passes a credential (aws_access_key_id) in 'body.text'" in out


def test_top_issue_argument_values_are_redacted() -> None:
    metrics = guardrails_metrics()
    details = metrics["trajectory_metrics"]["trajectory_details"]
    for i, keys in enumerate(PLANTED.values()):
        details.append(
            {
                "step": 10 + i,
                "expected_tool": "fetch",
                "actual_tool": "fetch",
                "matches": False,
                "expected_args": {"token": "x"},
                "actual_args": {"token": keys[0], "extra": keys[-1]},
            }
        )
    out = render(make_result(metrics))
    assert "`fetch` called with unexpected arguments (token: 'x' != '[REDACTED" in out
    assert "... and" in out  # more than 8 issues
    assert_no_secrets(out)


def test_findings_are_capped() -> None:
    metrics = guardrails_metrics()
    metrics["policy_metrics"]["violations"] = [
        {"index": i, "tool": "run_shell", "args": {}, "rule": 0, "reason": "r"} for i in range(60)
    ]
    out = render(make_result(metrics))
    lines = out.splitlines()
    errors = [line for line in lines if line.startswith("  ERROR    ")]
    assert len(errors) == 50
    assert "  ... and 13 more (see the JSON report)" in lines  # 61 errors + 2 warnings - 50


def test_incomplete_input_line() -> None:
    error = TruncatedTrace("t.json", "ended inside a value", offset=812)
    out = render(make_result(error=error, count=3))
    expected = (
        "Trace incomplete: t.json: byte 812: ended inside a value"
        " — evaluated the 3 calls read before it"
    )
    assert expected in out.splitlines()


def test_make_console_plain_and_unwrapped_off_terminal() -> None:
    stream = io.StringIO()
    console = make_console(stream)
    assert not console.is_terminal
    metrics = guardrails_metrics()
    reason = " ".join(["destructive"] * 20)
    metrics["policy_metrics"]["violations"][0]["reason"] = reason
    console.print(EvalSummary(make_result(metrics)))
    out = stream.getvalue()
    assert "\x1b" not in out
    line = next(x for x in out.splitlines() if "matches forbidden rule 1" in x)
    assert line == f"  ERROR    call 2 run_shell matches forbidden rule 1: {reason}"


def test_score_style_bands() -> None:
    assert [score_style(v) for v in (0.95, 0.9, 0.75, 0.1, float("nan"))] == [
        "green",
        "green",
        "yellow",
        "red",
        "red",
    ]
