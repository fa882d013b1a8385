"""The "Top issues to fix" list: a few ranked items built from metrics the checks computed.

Toolscore 1.10 aligns the expected and actual tool names with ``difflib.SequenceMatcher``, which
takes roughly quadratic time on long traces (11 s at 8000 calls). This list is **positional**
instead: it reads ``tool_correctness_metrics`` (tools never called, tools never expected) and
the positional ``trajectory_metrics.trajectory_details`` (step *i* of the gold file against call
*i* of the trace), so it costs one pass over data the checks already hold. An out-of-place call
therefore shows up as a wrong tool at its position rather than as a missing plus an extra call.

Every string here is redacted: argument values go through ``redact_value`` before ``repr``,
and the finished problem and fix texts through ``redact_secrets``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..matchers import OptionalArg, compare_values
from ..redact import redact_secrets, redact_value
from . import section

__all__ = [
    "Issue",
    "arg_lines",
    "extra",
    "missing",
    "redacted",
    "top_issues",
    "wrong_args",
    "wrong_tool",
]

_REPR_LIMIT = 40


@dataclass(frozen=True, slots=True)
class Issue:
    """One thing to fix; lower ``priority`` is more urgent."""

    priority: int
    tool: str
    problem: str
    fix: str


def _short(value: Any) -> str:
    text = repr(redact_value(value))
    return text if len(text) <= _REPR_LIMIT else text[:_REPR_LIMIT] + "..."


def arg_lines(expected: Any, actual: Any) -> list[str]:
    """``k: a != b`` per differing common key (compared as the score compares them), then
    ``missing: k`` and ``unexpected: k``; values redacted and cut to 40 characters."""
    if not isinstance(expected, Mapping) or not isinstance(actual, Mapping):
        return []
    lines: list[str] = []
    for key in sorted(set(expected) & set(actual), key=str):
        if not compare_values(expected[key], actual[key]):
            lines.append(f"{key}: {_short(expected[key])} != {_short(actual[key])}")
    lines.extend(
        f"missing: {key}"
        for key in sorted(set(expected) - set(actual), key=str)
        if expected[key].__class__ is not OptionalArg
    )
    lines.extend(f"unexpected: {key}" for key in sorted(set(actual) - set(expected), key=str))
    return lines


def missing(tool: str) -> Issue:
    """An expected call to ``tool`` never happened."""
    return Issue(
        0,
        tool,
        f"expected call to `{tool}` never happened",
        "Ensure the agent has this tool available and is prompted to use it for this task.",
    )


def _at(step: Any) -> str:
    """``"step N: "``, or nothing for an issue found by alignment rather than position."""
    return "" if step is None else f"step {step}: "


def wrong_tool(step: Any, expected: str, actual: str) -> Issue:
    """``actual`` was called where ``expected`` was (at gold step ``step``, or None)."""
    return Issue(
        1,
        actual,
        f"{_at(step)}called `{actual}` where `{expected}` was expected",
        f"Adjust the prompt or tool descriptions so the agent picks `{expected}` here.",
    )


def wrong_args(step: Any, tool: str, lines: list[str]) -> Issue:
    """``tool`` was called with other arguments (``lines``: :func:`arg_lines`)."""
    return Issue(
        2,
        tool,
        f"{_at(step)}`{tool}` called with unexpected arguments ({'; '.join(lines)})",
        "Align the arguments with what's expected, or relax the spec with a matcher like "
        "ANY/Regex if the value may vary.",
    )


def extra(tool: str) -> Issue:
    """A call to ``tool`` that was not expected."""
    return Issue(
        3,
        tool,
        f"unexpected extra call to `{tool}`",
        "Remove the redundant call, or add it to the expected spec if it is intended.",
    )


def _positional(details: Any, keep: int) -> tuple[list[Issue], int]:
    """Mismatched steps present on both sides: up to ``keep`` issues, and how many in all."""
    kept: list[Issue] = []
    total = 0
    if not isinstance(details, list):
        return kept, total
    for step in details:
        if not isinstance(step, Mapping) or step.get("matches"):
            continue
        expected, actual = step.get("expected_tool"), step.get("actual_tool")
        if not isinstance(expected, str) or not isinstance(actual, str):
            continue  # a tail step: reported as a missing or extra tool
        if expected != actual:
            issue = wrong_tool(step.get("step"), expected, actual)
        else:
            lines = arg_lines(step.get("expected_args"), step.get("actual_args"))
            if not lines:
                continue
            issue = wrong_args(step.get("step"), actual, lines)
        total += 1
        if len(kept) < keep:
            kept.append(issue)
    return kept, total


def redacted(issue: Issue) -> Issue:
    """``issue`` with its tool, problem and fix redacted."""
    return Issue(
        issue.priority,
        redact_secrets(issue.tool),
        redact_secrets(issue.problem),
        redact_secrets(issue.fix),
    )


def top_issues(metrics: Mapping[str, Any], limit: int = 8) -> tuple[list[Issue], int]:
    """The most urgent issues, and how many there are in all.

    Args:
        metrics: the result's metrics, in Toolscore's layout.
        limit: how many issues to return at most.

    Returns:
        Up to ``limit`` issues, most urgent first (missing tools, wrong tool at a position,
        wrong arguments at a position, extra tools), and the total count of issues.
    """
    correctness = section(metrics, "tool_correctness_metrics")
    absent = [str(t) for t in correctness.get("missing_tools") or ()]
    unexpected = [str(t) for t in correctness.get("extra_tools") or ()]
    details = section(metrics, "trajectory_metrics").get("trajectory_details")
    positional, positional_total = _positional(details, limit)
    ranked = [missing(t) for t in absent[:limit]]
    ranked.extend(positional)
    ranked.extend(extra(t) for t in unexpected[:limit])
    ranked.sort(key=lambda issue: issue.priority)  # stable: keeps each group's order
    total = len(absent) + positional_total + len(unexpected)
    shown = [redacted(i) for i in ranked[:limit]]
    return shown, total
