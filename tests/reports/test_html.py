from __future__ import annotations

import html
from pathlib import Path

from _results import guardrails_metrics, make_result

from _secrets import ALL_KEYS, assert_no_secrets
from toolscore.errors import MalformedTrace
from toolscore.reports.html import render_html, write_html


def test_findings_escaped_and_listed() -> None:
    page = render_html(make_result())
    assert page.startswith("<!DOCTYPE html>")
    assert "<h2>Behavior and Safety</h2>" in page
    assert (
        '<li><span class="sev sev-error">ERROR</span> call 3 http_post passes a credential '
        "(aws_access_key_id) in &#x27;body.text&#x27;: AKIA…LE</li>"
    ) in page
    assert "2 of 5 tool calls failed (deploy x2)" in page
    assert '<div class="value">1 of 2 (50%)</div>' in page
    assert '<div class="value">74.0% (C, fail)</div>' in page


def test_self_contained() -> None:
    page = render_html(make_result())
    for forbidden in ("<script", "<link", "src=", "http://", "https://"):
        assert forbidden not in page


def test_hostile_tool_names_are_escaped() -> None:
    name = '<img src=x onerror="alert(1)">[/bar]'
    metrics = guardrails_metrics(extra_tool=name)
    page = render_html(make_result(metrics))
    assert "<img" not in page
    assert html.escape(name) in page


def test_every_credential_is_redacted(tmp_path: Path) -> None:
    metrics = guardrails_metrics(extra_tool="post " + ALL_KEYS[2])
    metrics["policy_metrics"]["violations"][0]["reason"] = " ".join(ALL_KEYS)
    metrics["tool_correctness_metrics"]["missing_tools"] = list(ALL_KEYS)
    for step in metrics["trajectory_metrics"]["trajectory_details"]:
        step.update(
            actual_tool="run_shell",
            expected_tool="run_shell",
            expected_args={"k": "x"},
            actual_args={"k": list(ALL_KEYS)},
            matches=False,
        )
    error = MalformedTrace("t.jsonl", f"bad line {ALL_KEYS[0]}", line=9)
    path = tmp_path / "r.html"
    write_html(make_result(metrics, error=error), path)
    page = path.read_text(encoding="utf-8")
    assert "Trace incomplete: t.jsonl:9: bad line [REDACTED private_key" in page
    assert_no_secrets(page)
    assert_no_secrets(html.unescape(page))


def test_long_lists_capped() -> None:
    metrics = guardrails_metrics()
    metrics["policy_metrics"]["violations"] = [
        {"index": i, "tool": "t", "args": {}, "rule": 0, "reason": None} for i in range(250)
    ]
    page = render_html(make_result(metrics))
    assert page.count('class="sev sev-error"') == 100
    assert "... and 153 more (see the JSON report)" in page
