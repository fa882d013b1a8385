"""The HTML report: one self-contained page (inline CSS, no script, no template engine).

Every piece of data is redacted with ``redact_secrets`` and then escaped with
``html.escape``; the finished page is redacted once more. It opens with the verdict (a banner
from :func:`toolscore.verdict.judge`: passed or not, and why), then the expected calls against
the calls made, aligned and compared as the pytest plugin's failure text does
(:mod:`toolscore.failures`, values redacted and cut), from the trajectory the reducer kept; it
caps that list at :data:`MAX_CALL_ROWS` rows and every other list at :data:`MAX_LIST` (see
Toolscore's 126 MB reports in the reference), so a large trace gives a small page.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..failures import align, call_text, row_for
from ..outputs import write_report
from ..redact import redact_secrets
from ..sanitize import shown
from ..verdict import Verdict, judge
from . import ReportResult, failed_calls, input_lines, number, required_counts, section
from ._issues import top_issues
from ._pairing import pairing_note

__all__ = ["MAX_CALL_ROWS", "MAX_LIST", "render_html", "write_html"]

MAX_LIST = 100
"""Findings and tools shown at most; the JSON report holds them all."""
MAX_CALL_ROWS = 200
"""Rows of the expected-against-actual call list shown at most."""

_RANK = {"error": 0, "warning": 1, "info": 2}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:60rem;padding:0 1rem;color:#1f2328;background:#fff}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
.summary{display:flex;gap:1rem;flex-wrap:wrap}
.card{border:1px solid #d0d7de;border-radius:6px;padding:.75rem 1rem;min-width:10rem}
.card .label{font-size:.85rem;color:#59636e}.card .value{font-size:1.4rem;font-weight:600}
.good .value{color:#1a7f37}.warning .value{color:#9a6700}.bad .value{color:#cf222e}
ul.findings{list-style:none;padding-left:0}ul.findings li{padding:.25rem 0}
.sev{display:inline-block;min-width:5rem;font-weight:600}
.sev-error{color:#cf222e}.sev-warning{color:#9a6700}.sev-info{color:#0969da}
.incomplete{border-left:4px solid #cf222e;padding:.5rem 1rem;background:#fff5f5}
.note{border-left:4px solid #bf8700;padding:.5rem 1rem;background:#fff8c5}
footer{margin-top:3rem;color:#59636e;font-size:.85rem}
.banner{border-left:6px solid #59636e;background:#f6f8fa;padding:.75rem 1rem;margin:1rem 0;
font-size:1.1rem}.banner strong{font-size:1.3rem}
.banner.pass{border-color:#1a7f37;background:#dafbe1}.banner.fail{border-color:#cf222e;
background:#ffebe9}
table.calls{border-collapse:collapse;width:100%;table-layout:fixed}
table.calls td,table.calls th{padding:.3rem .5rem;text-align:left;vertical-align:top;
border-bottom:1px solid #eaeef2;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,
Menlo,Consolas,monospace;font-size:.85rem}
table.calls th{background:#f6f8fa;font-family:inherit}
table.calls col.mark{width:2rem}table.calls col.num{width:3rem}
tr.ok .mark{color:#1a7f37}tr.bad .mark{color:#cf222e}
.detail{display:block;color:#cf222e;font-size:.8rem}
"""


def _t(text: object) -> str:
    """Data as safe HTML text: redacted, control characters shown escaped
    (:func:`toolscore.sanitize.visible`), then HTML-escaped."""
    return html.escape(shown(str(text)))


def _grade_class(value: float) -> str:
    if value >= 0.8:
        return "good"
    if value >= 0.5:
        return "warning"
    return "bad"


def _card(label: str, value: str, css: str = "") -> str:
    classes = f"card {css}" if css else "card"
    return (
        f'<div class="{classes}"><div class="label">{_t(label)}</div>'
        f'<div class="value">{_t(value)}</div></div>'
    )


def _list_items(items: list[str]) -> str:
    rows = [f"<li>{_t(item)}</li>" for item in items[:MAX_LIST]]
    if len(items) > MAX_LIST:
        rows.append(f"<li>... and {len(items) - MAX_LIST} more (see the JSON report)</li>")
    return "".join(rows)


def _finding_list(lines: list[tuple[str, str]], hidden: int = 0) -> list[str]:
    """``(severity, message)`` lines as a capped HTML list (``hidden`` more counted)."""
    out = ['<ul class="findings">']
    for severity, message in lines[:MAX_LIST]:
        sev = _t(severity)
        out.append(
            f'<li><span class="sev sev-{sev}">{_t(severity.upper())}</span> {_t(message)}</li>'
        )
    rest = max(len(lines) - MAX_LIST, 0) + hidden
    if rest:
        out.append(f"<li>... and {rest} more (see the JSON report)</li>")
    out.append("</ul>")
    return out


def render_html(result: ReportResult, *, now: datetime | None = None) -> str:
    """The HTML report as one (redacted, escaped) string.

    Args:
        result: the evaluation result.
        now: the time to print as "Generated" (default: now).
    """
    metrics = result.metrics
    when = (now or datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Toolscore Evaluation Report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Toolscore Evaluation Report</h1>",
        f"<p>Generated: {_t(when)}</p>",
    ]
    verdict = judge(result)
    parts += [
        _banner(verdict),
        "<h2>Summary</h2>",
        '<div class="summary">',
        _card("Actual calls", str(result.trace_calls_count)),
    ]
    if verdict.score is None:
        parts.append(_card("Score", "no gold: checks only"))
    else:
        parts.insert(-1, _card("Expected calls", str(len(result.gold_calls))))
        word = "pass" if verdict.passed else "fail"
        parts.append(
            _card(
                "Score",
                f"{verdict.score * 100:.1f}% ({verdict.grade}, {word})",
                _grade_class(verdict.score),
            )
        )
    parts.append(
        _card(
            "Violations", verdict.violations.describe(), "bad" if verdict.violations.total else ""
        )
    )
    counts = required_counts(result)
    recall = result.required_call_recall
    if counts is not None and recall is not None:
        parts.append(
            _card(
                "Required calls completed",
                f"{counts[0]} of {counts[1]} ({recall * 100:.0f}%)",
                _grade_class(recall),
            )
        )
    parts.append("</div>")
    error = result.input_error
    if error is not None:
        parts.append(
            f'<p class="incomplete">Trace incomplete: {_t(error)} — evaluated the '
            f"{result.trace_calls_count} calls read before it</p>"
        )
    pairing = pairing_note(metrics)
    if pairing is not None:
        parts.append(f'<p class="note">Note: {_t(pairing)}</p>')

    lines, hidden = input_lines(result)
    if lines:
        parts += ["<h2>Input</h2>", *_finding_list(lines, hidden)]
    parts += _call_list(result)

    parts.append("<h2>Behavior and Safety</h2>")
    findings = sorted(result.behavior_findings(), key=lambda f: _RANK.get(f[0], 3))
    if not findings:
        parts.append("<p>No failed calls, credentials or forbidden calls found.</p>")
    else:
        parts += _finding_list(findings)

    efficiency = section(metrics, "efficiency_metrics")
    redundant = number(efficiency.get("redundant_rate"))
    parts += ["<h2>Core Metrics</h2>", '<div class="summary">']
    for label, value in (
        ("Invocation Accuracy", number(metrics.get("invocation_accuracy"))),
        ("Selection Accuracy", result.selection_accuracy),
        ("Sequence Accuracy", result.sequence_accuracy),
        ("Argument F1", result.argument_f1),
    ):
        parts.append(_card(label, f"{value * 100:.1f}%", _grade_class(value)))
    red_css = "good" if redundant <= 0.2 else "warning" if redundant <= 0.5 else "bad"
    parts.append(_card("Redundant Call Rate", f"{redundant * 100:.1f}%", red_css))
    failed = failed_calls(result)
    if failed:
        parts.append(_card("Failed Calls", str(failed), "bad"))
    parts.append("</div>")

    issues, total = top_issues(metrics, 8)
    if issues:
        parts += ["<h2>Top Issues to Fix</h2>", "<ol>"]
        for issue in issues:
            parts.append(
                f"<li><strong>{_t(issue.tool)}</strong> {_t(issue.problem)}"
                f"<br><small>{_t(issue.fix)}</small></li>"
            )
        parts.append("</ol>")
        if total > len(issues):
            parts.append(f"<p>... and {total - len(issues)} more issue(s)</p>")

    correctness = section(metrics, "tool_correctness_metrics")
    missing = [str(t) for t in correctness.get("missing_tools") or ()]
    extra = [str(t) for t in correctness.get("extra_tools") or ()]
    if missing or extra:
        parts.append("<h2>Tool Coverage</h2>")
        if missing:
            parts.append(f"<p>Missing tools:</p><ul>{_list_items(missing)}</ul>")
        if extra:
            parts.append(f"<p>Extra tools:</p><ul>{_list_items(extra)}</ul>")

    parts += _performance(metrics)
    parts += ["<footer>Generated by toolscore</footer>", "</body></html>", ""]
    return redact_secrets("\n".join(parts))


def _banner(verdict: Verdict) -> str:
    """The verdict first: passed or failed under its criterion, and why."""
    if verdict.score is None:
        css = "fail" if verdict.violations.total else "pass"
        found = _t(verdict.violations.describe())
        text = f"<strong>Checks only</strong> (no gold) · violations: {found}"
        return f'<div class="banner {css}">{text}</div>'
    word = "PASSED" if verdict.passed else "FAILED"
    text = f"<strong>{word}</strong> · grade {_t(verdict.grade)} ({verdict.score * 100:.1f}%)"
    reasons = verdict.criterion.reasons(verdict)
    why = f": {'; '.join(reasons)}" if reasons else ""
    text += f" · pass rule: {_t(verdict.criterion.describe())}{_t(why)}"
    return f'<div class="banner {"pass" if verdict.passed else "fail"}">{text}</div>'


class _Step:
    """A call the trajectory kept: its tool and arguments (all :func:`row_for` reads)."""

    __slots__ = ("args", "tool")

    def __init__(self, tool: str, args: Any) -> None:
        self.tool = tool
        self.args = args


def _actual_calls(result: ReportResult) -> tuple[list[Any], int]:
    """The calls made, in order: kept on the result, else from the trajectory's steps (which
    hold every call up to a cap); and how many the trajectory left out."""
    kept = getattr(result, "trace_calls", None)
    if kept:
        return list(kept), 0
    trajectory = section(result.metrics, "trajectory_metrics")
    steps = [
        _Step(str(step["actual_tool"]), step.get("actual_args"))
        for step in trajectory.get("trajectory_details") or ()
        if isinstance(step, Mapping) and step.get("actual_tool") is not None
    ]
    return steps, int(number(trajectory.get("trajectory_details_omitted")))


def _call_list(result: ReportResult) -> list[str]:
    """Expected calls against the calls made, one row per aligned pair, with the arguments
    that differ (values redacted, cut to a line)."""
    expected = list(result.gold_calls)
    if not expected or not all(isinstance(getattr(e, "tool", None), str) for e in expected):
        return []
    actual, omitted = _actual_calls(result)
    rows = [row_for(e, a) for e, a in align(expected, actual)]
    out = [
        "<h2>Expected vs actual calls</h2>",
        '<table class="calls"><colgroup><col class="mark"><col class="num"><col><col>'
        "</colgroup><tr><th></th><th>#</th><th>expected</th><th>actual</th></tr>",
    ]
    for i, row in enumerate(rows[:MAX_CALL_ROWS], 1):
        exp = (
            "— extra —"
            if row.expected is None
            else call_text(row.expected.tool, row.expected.args, expected=True)
        )
        act = "— missing —" if row.actual is None else call_text(row.actual.tool, row.actual.args)
        details = "".join(f'<span class="detail">{_t(d)}</span>' for d in row.details)
        out.append(
            f'<tr class="{"ok" if row.ok else "bad"}"><td class="mark">{"✓" if row.ok else "✗"}'
            f"</td><td>{i}</td><td>{_t(exp)}{details}</td><td>{_t(act)}</td></tr>"
        )
    out.append("</table>")
    rest = len(rows) - MAX_CALL_ROWS
    if rest > 0 or omitted:
        hidden = max(rest, 0) + omitted
        out.append(f"<p>... and {hidden} more call(s) (see the JSON report)</p>")
    return out


def _performance(metrics: Mapping[str, Any]) -> list[str]:
    latency = section(metrics, "latency_metrics")
    cost = section(metrics, "cost_metrics")
    if not latency and not cost:
        return []
    parts = ["<h2>Performance Metrics</h2>", '<div class="summary">']
    if latency:
        parts.append(_card("Total duration", f"{number(latency.get('total_duration')):.3f}s"))
        parts.append(_card("Mean duration", f"{number(latency.get('average_duration')):.3f}s"))
    if cost:
        parts.append(_card("Total cost", f"${number(cost.get('total_cost')):.4f}"))
    parts.append("</div>")
    return parts


def write_html(result: ReportResult, path: str | os.PathLike[str]) -> None:
    """Write :func:`render_html` to ``path`` (UTF-8; see :func:`toolscore.outputs.write_report`)."""
    write_report(path, render_html(result).encode("utf-8"))
