"""Reports: the console summary (rich), Markdown, HTML and the streamed JSON record.

Every human-facing report (console, Markdown, HTML) goes through redaction; the JSON record
keeps the arguments as recorded. Only :mod:`toolscore.reports.console` imports rich, and
nothing here is imported by ``import toolscore``.

Renderers read an :class:`~toolscore.result.EvaluationResult` through the small
:class:`ReportResult` protocol below, so they can be tested on any object of that shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._lazy import lazy_names
from ..verdict import verdict_word

if TYPE_CHECKING:
    from ..calls import Finding, ToolCall
    from ..errors import InputError
    from .console_report import print_error as print_error
    from .console_report import print_evaluation_summary as print_evaluation_summary
    from .console_report import print_progress as print_progress
    from .console_report import print_validation_result as print_validation_result
    from .csv_report import generate_csv_report as generate_csv_report
    from .html_report import generate_html_report as generate_html_report
    from .json_report import generate_json_report as generate_json_report
    from .markdown_report import generate_markdown_report as generate_markdown_report


__all__ = [
    "ReportResult",
    "failed_calls",
    "generate_csv_report",
    "generate_html_report",
    "generate_json_report",
    "generate_markdown_report",
    "input_lines",
    "number",
    "print_error",
    "print_evaluation_summary",
    "print_progress",
    "print_validation_result",
    "required_counts",
    "rule_violation_count",
    "secret_count",
    "section",
    "verdict_word",
    "violation_count",
]

# Toolscore 1.10's report functions, imported on first use: the console ones need rich, which
# the file writers and ``import toolscore.reports`` do not.
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "generate_csv_report": ".csv_report",
        "generate_html_report": ".html_report",
        "generate_json_report": ".json_report",
        "generate_markdown_report": ".markdown_report",
        "print_error": ".console_report",
        "print_evaluation_summary": ".console_report",
        "print_progress": ".console_report",
        "print_validation_result": ".console_report",
    },
    __all__,
)


class ReportResult(Protocol):
    """What the reports read from an evaluation result."""

    @property
    def score(self) -> float: ...
    @property
    def grade(self) -> str: ...
    @property
    def selection_accuracy(self) -> float: ...
    @property
    def argument_f1(self) -> float: ...
    @property
    def sequence_accuracy(self) -> float: ...
    @property
    def required_call_recall(self) -> float | None: ...
    @property
    def policy_violations(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def findings(self) -> Sequence[Finding]: ...
    @property
    def input_error(self) -> InputError | None: ...
    @property
    def input_findings(self) -> Sequence[Finding]: ...
    @property
    def input_problems(self) -> int: ...
    @property
    def metrics(self) -> Mapping[str, Any]: ...
    @property
    def gold_calls(self) -> Sequence[ToolCall]: ...
    @property
    def trace_calls_count(self) -> int: ...

    def behavior_findings(self) -> list[tuple[str, str]]: ...
    def to_dict(self) -> dict[str, Any]: ...


def section(metrics: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """``metrics[name]`` when it is a mapping, else an empty one (absent or skipped metric)."""
    value = metrics.get(name)
    return value if isinstance(value, Mapping) else {}


def number(value: Any, default: float = 0.0) -> float:
    """A metric value as a float (``default`` when absent or not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value)


def secret_count(result: ReportResult) -> int:
    """How many credential findings the security check reported."""
    return int(number(section(result.metrics, "security_metrics").get("secret_count")))


def rule_violation_count(result: ReportResult) -> int:
    """How many hard rules failed (allowlist, order, counts, schemas, data flow, match modes)."""
    return int(number(section(result.metrics, "rule_metrics").get("violation_count")))


def violation_count(result: ReportResult) -> int:
    """How many forbidden calls the policy check found (all of them: the result keeps the
    first :data:`~toolscore.capped.MAX_RECORDS` records)."""
    policy = section(result.metrics, "policy_metrics")
    return int(number(policy.get("violation_count"), len(result.policy_violations)))


def failed_calls(result: ReportResult) -> int:
    """How many calls failed (``efficiency_metrics.error_count``)."""
    return int(number(section(result.metrics, "efficiency_metrics").get("error_count")))


def required_counts(result: ReportResult) -> tuple[int, int] | None:
    """``(completed, required)`` for the "Required calls completed" line, or ``None``."""
    recall = result.required_call_recall
    if recall is None:
        return None
    total = len(result.gold_calls)
    return round(recall * total), total


def input_lines(result: ReportResult) -> tuple[list[tuple[str, str]], int]:
    """The readers' findings as ``(severity, message)`` lines (a malformed line, an item that
    is not a call, an empty input), and how many more input errors were counted than kept."""
    kept = list(result.input_findings)
    lines: list[tuple[str, str]] = [(f.severity, f.message) for f in kept]
    hidden = result.input_problems - sum(1 for f in kept if f.severity == "error")
    return lines, max(hidden, 0)
