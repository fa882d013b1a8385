"""The Markdown report: a short summary fit for a pull request or a GitHub job summary.

Unlike Toolscore 1.10 it does not dump every metric (its trajectory details repeat every
argument of every call, 66 MB of Markdown for a 30 MB trace): long lists are capped, the
metrics appendix leaves the per-step details out, and the whole text goes through
``redact_secrets`` so no credential is published.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson

from ..outputs import write_report
from ..redact import redact_secrets
from ..sanitize import shown
from ..verdict import judge
from . import ReportResult, failed_calls, input_lines, number, required_counts, section
from ._issues import top_issues
from ._pairing import pairing_note

__all__ = ["MAX_LIST", "compact_metrics", "render_markdown", "write_markdown"]

MAX_LIST = 50
"""Findings, tools and list items shown at most; the JSON report holds them all."""

_ICON = {"error": "🔴", "warning": "🟡", "info": "🔵"}
_RANK = {"error": 0, "warning": 1, "info": 2}
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\*[]<>|`"})
# what GitHub would make a link of in plain text: "http://...", "ftp://...", "www...."
_AUTOLINK = re.compile(r":(?=//)|(?<=www)\.", re.IGNORECASE)


def md_text(text: str) -> str:
    """Data as Markdown text: redacted, control characters and newlines shown escaped
    (:func:`toolscore.sanitize.visible`), and what would make Markdown or HTML of it escaped
    (``<img ...>``, ``[x](javascript:...)``, ``![](http://...)``, a code span), the ``:`` of
    ``://`` and the ``.`` of ``www.`` too, so that a URL is not made a link. An email
    address is still made a ``mailto:`` link by GitHub: no escape prevents it."""
    out = shown(text).translate(_MD_SPECIAL)
    if ":" in out or "." in out:
        out = _AUTOLINK.sub(lambda m: "\\" + m.group(), out)
    return out


def _status(value: float) -> str:
    if value >= 0.95:
        return "✅ Excellent"
    if value >= 0.85:
        return "🟢 Good"
    if value >= 0.70:
        return "🟡 Fair"
    return "🔴 Needs Improvement"


def _cap(items: list[Any], limit: int) -> list[Any]:
    if len(items) <= limit:
        return items
    return [*items[:limit], f"... and {len(items) - limit} more (see the JSON report)"]


def compact_metrics(metrics: Mapping[str, Any], limit: int = MAX_LIST) -> dict[str, Any]:
    """The metrics without what repeats the arguments, with long lists capped.

    ``trajectory_details`` becomes its length, policy violations lose their ``args``, and
    every list longer than ``limit`` keeps its first ``limit`` items plus a note.
    """

    def shrink(value: Any, key: str = "") -> Any:
        if key == "trajectory_details" and isinstance(value, list):
            return f"{len(value)} steps (see the JSON report)"
        if isinstance(value, Mapping):
            return {shown(str(k)): shrink(v, str(k)) for k, v in value.items() if str(k) != "args"}
        if isinstance(value, (list, tuple)):
            items = [shrink(v) for v in value[:limit]]
            if len(value) > limit:
                items.append(f"... and {len(value) - limit} more (see the JSON report)")
            return items
        if isinstance(value, str):
            return shown(value)
        return value

    return {shown(str(k)): shrink(v, str(k)) for k, v in metrics.items()}


def _json(value: Any) -> str:
    return orjson.dumps(
        value, default=repr, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    ).decode()


def _finding_list(lines: list[tuple[str, str]], hidden: int = 0) -> list[str]:
    """``(severity, message)`` lines as a capped Markdown list (``hidden`` more counted)."""
    out = [
        f"- {_ICON.get(severity, '⚪')} **{severity}**: {md_text(message)}"
        for severity, message in lines[:MAX_LIST]
    ]
    rest = max(len(lines) - MAX_LIST, 0) + hidden
    if rest:
        out.append(f"- ... and {rest} more (see the JSON report)")
    return out


def render_markdown(result: ReportResult, *, now: datetime | None = None) -> str:
    """The Markdown report as one (redacted) string.

    Args:
        result: the evaluation result.
        now: the time to print as "Generated" (default: now).
    """
    metrics = result.metrics
    when = (now or datetime.now()).strftime("%Y-%m-%d %H:%M:%S")
    out: list[str] = ["# Toolscore Evaluation Report", "", f"**Generated:** {when}", ""]

    out += ["## 📊 Summary", ""]
    verdict = judge(result)
    if verdict.has_gold:
        out.append(f"- **Expected Calls:** {len(result.gold_calls)}")
    out.append(f"- **Actual Calls:** {result.trace_calls_count}")
    if verdict.score is None:
        out.append("- **No gold: checks only** (no score or grade)")
    else:
        word = "pass" if verdict.passed else "fail"
        out.append(f"- **Score:** {verdict.score * 100:.1f}% (grade {verdict.grade}, {word})")
    out.append(f"- **Violations:** {verdict.violations.describe()}")
    counts = required_counts(result)
    if counts is not None:
        out.append(f"- **Required Calls Completed:** {counts[0]} of {counts[1]}")
    error = result.input_error
    if error is not None:
        out.append(
            f"- **Trace incomplete:** {md_text(str(error))} — evaluated the "
            f"{result.trace_calls_count} calls read before it"
        )
    for note in getattr(result, "notes", ()):  # gold side_effects not run (Toolscore 1.10)
        out.append(f"- **Note:** {md_text(note)}")
    pairing = pairing_note(metrics)
    if pairing is not None:
        out.append(f"- **Note:** {md_text(pairing)}")
    out.append("")

    out += ["## 🎯 Key Metrics", "", "| Metric | Value | Status |", "|--------|-------|--------|"]
    rows = (
        ("Invocation Accuracy", number(metrics.get("invocation_accuracy"))),
        ("Selection Accuracy", result.selection_accuracy),
        ("Argument F1 Score", result.argument_f1),
        ("Sequence Accuracy", result.sequence_accuracy),
    )
    for name, value in rows:
        out.append(f"| {name} | {value * 100:.2f}% | {_status(value)} |")
    out.append("")

    lines, hidden = input_lines(result)
    if lines:
        out += ["## 📥 Input", "", *_finding_list(lines, hidden), ""]

    out += ["## 🛡️ Behavior and Safety", ""]
    findings = sorted(result.behavior_findings(), key=lambda f: _RANK.get(f[0], 3))
    if not findings:
        out.append("No failed calls, credentials or forbidden calls found.")
    out += [*_finding_list(findings), ""]

    issues, total = top_issues(metrics, 8)
    if issues:
        out += ["## 🔧 Top Issues to Fix", ""]
        for i, issue in enumerate(issues, 1):
            out.append(f"{i}. **{md_text(issue.tool)}**: {md_text(issue.problem)}")
            out.append(f"   - {md_text(issue.fix)}")
        if total > len(issues):
            out.append(f"- ... and {total - len(issues)} more issue(s)")
        out.append("")

    efficiency = section(metrics, "efficiency_metrics")
    out += ["## ⚡ Efficiency Metrics", ""]
    out.append(f"- **Redundant Call Rate:** {number(efficiency.get('redundant_rate')) * 100:.1f}%")
    failed = failed_calls(result)
    if failed > 0:
        retries = int(number(efficiency.get("retry_after_error_count")))
        out.append(f"- **Failed Calls:** {failed}")
        out.append(f"- **Retries After Failure:** {retries}")
    out.append("")

    correctness = section(metrics, "tool_correctness_metrics")
    missing = list(correctness.get("missing_tools") or ())
    extra = list(correctness.get("extra_tools") or ())
    if missing or extra:
        out += ["## 🧰 Tool Coverage", ""]
        if missing:
            names = ", ".join(md_text(str(t)) for t in _cap(missing, MAX_LIST))
            out.append(f"- **Missing tools:** {names}")
        if extra:
            names = ", ".join(md_text(str(t)) for t in _cap(extra, MAX_LIST))
            out.append(f"- **Extra tools:** {names}")
        out.append("")

    out += ["## 📋 All Metrics", "", "<details>", "<summary>Click to expand</summary>", ""]
    out += ["```json", _json(compact_metrics(metrics)).replace("```", "` ` `"), "```", ""]
    out += ["</details>", "", "---", "*Generated by toolscore*", ""]
    return redact_secrets("\n".join(out))


def write_markdown(result: ReportResult, path: str | os.PathLike[str]) -> None:
    """Write :func:`render_markdown` to ``path`` (UTF-8; see
    :func:`toolscore.outputs.write_report`)."""
    write_report(path, render_markdown(result).encode("utf-8"))
