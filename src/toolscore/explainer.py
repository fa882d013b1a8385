"""Per-metric explanations: why a metric scored what it did, and tips (Toolscore 1.10's
``toolscore.explainer``).

Each ``explain_*`` function turns one metric of a result into a :class:`MetricExplanation`:
a short description of the score, items (a wrong tool at a position, a missing tool, an
argument that differs) and tips. Calls are compared along the alignment the failure text uses
(:func:`toolscore.failures.align`), arguments as the score compares them; every message is
redacted. Lists are capped (:data:`MAX_ITEMS` items per metric, :data:`MAX_NAMES` names in a
sequence), so a long trace gives a short explanation.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .calls import ToolCall
from .failures import align
from .matchers import compare_values
from .redact import redact_secrets

__all__ = [
    "Explanation",
    "MetricExplanation",
    "explain_argument_metrics",
    "explain_efficiency_metrics",
    "explain_selection_accuracy",
    "explain_sequence_metrics",
    "explain_tool_correctness",
    "generate_explanations",
    "get_all_tips",
    "get_top_issues",
]

MAX_ITEMS = 50
"""Items kept per metric."""
MAX_NAMES = 20
"""Tool names shown in a sequence before ``...``."""
_SIMILAR = 0.5


@dataclass
class Explanation:
    """One thing a metric noticed."""

    category: str
    """``mismatch``, ``missing``, ``extra``, ``warning`` or ``info``."""
    message: str
    severity: str = "info"
    """``error``, ``warning`` or ``info``."""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class MetricExplanation:
    """A metric's score, what it means, what lowered it, and what to try."""

    metric_name: str
    score: float
    score_description: str
    items: list[Explanation] = field(default_factory=list)
    tips: list[str] = field(default_factory=list)


def _item(category: str, message: str, severity: str, **details: Any) -> Explanation:
    return Explanation(category, redact_secrets(message), severity, details)


def _similar(a: str, b: str) -> bool:
    return difflib.SequenceMatcher(None, a, b).ratio() >= _SIMILAR


def explain_selection_accuracy(
    gold_calls: Sequence[ToolCall], trace_calls: Sequence[ToolCall], accuracy: float
) -> MetricExplanation:
    """Position by position: a wrong tool (a warning when the names are similar), an extra
    call past the expected ones, an expected call never reached."""
    items: list[Explanation] = []
    n, m = len(gold_calls), len(trace_calls)
    matched = 0
    for i in range(max(n, m)):
        want = gold_calls[i].tool if i < n else None
        got = trace_calls[i].tool if i < m else None
        if want == got:
            matched += 1
        elif len(items) >= MAX_ITEMS:
            continue
        elif want is None and got is not None:
            items.append(
                _item(
                    "extra",
                    f"Position {i + 1}: Unexpected extra call to '{got}'",
                    "warning",
                    position=i,
                    tool=got,
                )
            )
        elif got is None and want is not None:
            items.append(
                _item(
                    "missing",
                    f"Position {i + 1}: Expected '{want}' but no call was made",
                    "error",
                    position=i,
                    tool=want,
                )
            )
        elif want is not None and got is not None:
            close = _similar(want, got)
            text = f"Position {i + 1}: Expected '{want}' but got '{got}'"
            items.append(
                _item(
                    "mismatch",
                    text + (" (similar names)" if close else ""),
                    "warning" if close else "error",
                    position=i,
                    expected=want,
                    actual=got,
                    **({"similar": True} if close else {}),
                )
            )
    absent = sorted({c.tool for c in gold_calls} - {c.tool for c in trace_calls})
    unexpected = sorted({c.tool for c in trace_calls} - {c.tool for c in gold_calls})
    tips = [
        redact_secrets(f"'{a}' might be equivalent to '{b}' - use --llm-judge to verify")
        for a in absent[:MAX_NAMES]
        for b in unexpected[:MAX_NAMES]
        if _similar(a, b)
    ]
    if not tips and any(i.category == "mismatch" for i in items):
        tips.append("Use --llm-judge flag to catch semantic equivalence")
    desc = f"{matched} of {max(n, m)} correct"
    return MetricExplanation("Selection Accuracy", accuracy, desc, items, tips)


def explain_tool_correctness(tool_correctness_metrics: Mapping[str, Any]) -> MetricExplanation:
    """The expected tools never called (errors) and the tools called but not expected."""
    m = tool_correctness_metrics
    absent = list(m.get("missing_tools") or ())
    unexpected = list(m.get("extra_tools") or ())
    items = [
        _item("missing", f"Expected tool '{t}' was never called", "error", tool=t)
        for t in absent[:MAX_ITEMS]
    ]
    items += [
        _item("extra", f"Tool '{t}' was called but not expected", "warning", tool=t)
        for t in unexpected[: max(0, MAX_ITEMS - len(items))]
    ]
    tips = (
        [
            "Check that your agent has access to all required tools",
            "Verify tool names match exactly (case-sensitive)",
        ]
        if absent
        else []
    )
    desc = f"{m.get('correct_count', 0)} of {m.get('total_expected', 0)} expected tools called"
    return MetricExplanation(
        "Tool Correctness", float(m.get("tool_correctness", 0.0)), desc, items, tips
    )


def _arg_items(expected: ToolCall, actual: ToolCall, position: int) -> list[Explanation]:
    want = expected.args if isinstance(expected.args, Mapping) else {}
    got = actual.args if isinstance(actual.args, Mapping) else {}
    tool = actual.tool
    items = [
        _item(
            "extra",
            f"'{tool}': Unexpected argument '{k}'",
            "warning",
            tool=tool,
            argument=k,
            position=position,
        )
        for k in got
        if k not in want
    ]
    for key, value in want.items():
        if key not in got:
            items.append(
                _item(
                    "missing",
                    f"'{tool}': Missing argument '{key}'",
                    "error",
                    tool=tool,
                    argument=key,
                )
            )
        elif not compare_values(value, got[key]):
            items.append(
                _item(
                    "mismatch",
                    f"'{tool}.{key}': Value mismatch - expected '{value}', got '{got[key]}'",
                    "warning",
                    tool=tool,
                    argument=key,
                )
            )
    return items


def explain_argument_metrics(
    gold_calls: Sequence[ToolCall],
    trace_calls: Sequence[ToolCall],
    argument_metrics: Mapping[str, Any],
) -> MetricExplanation:
    """The arguments that differ between aligned calls of the same tool."""
    items: list[Explanation] = []
    for position, (e, a) in enumerate(align(gold_calls, trace_calls)):
        if len(items) >= MAX_ITEMS:
            break
        if e is not None and a is not None and e.tool == a.tool and e.args is not None:
            items.extend(_arg_items(e, a, position))
    p = float(argument_metrics.get("precision", 0.0))
    r = float(argument_metrics.get("recall", 0.0))
    tips = []
    if p < r:
        tips.append("Low precision: Agent is passing extra/wrong arguments")
    elif r < p:
        tips.append("Low recall: Agent is missing required arguments")
    desc = f"Precision: {p:.1%}, Recall: {r:.1%}"
    return MetricExplanation(
        "Argument F1", float(argument_metrics.get("f1", 0.0)), desc, items[:MAX_ITEMS], tips
    )


def _names(calls: Sequence[ToolCall]) -> str:
    names = [c.tool for c in calls[:MAX_NAMES]]
    return " -> ".join(names) + (" -> ..." if len(calls) > MAX_NAMES else "")


def explain_sequence_metrics(
    gold_calls: Sequence[ToolCall],
    trace_calls: Sequence[ToolCall],
    sequence_metrics: Mapping[str, Any],
) -> MetricExplanation:
    """The two sequences of tool names, and how many calls one has more than the other."""
    distance = float(sequence_metrics.get("edit_distance", 0.0))
    items = [
        _item("info", f"Expected sequence: {_names(gold_calls)}", "info"),
        _item("info", f"Actual sequence: {_names(trace_calls)}", "info"),
    ]
    diff = len(trace_calls) - len(gold_calls)
    if diff > 0:
        items.append(_item("extra", f"Agent made {diff} extra tool call(s)", "warning"))
    elif diff < 0:
        items.append(
            _item("missing", f"Agent made {-diff} fewer tool call(s) than expected", "warning")
        )
    tips = []
    if distance > 0:
        tips.append(
            "Sequence is significantly different - review agent's planning logic"
            if distance > len(gold_calls) // 2
            else "Minor sequence differences - may be acceptable depending on task"
        )
    score = float(sequence_metrics.get("sequence_accuracy", 0.0))
    return MetricExplanation("Sequence Accuracy", score, f"Edit distance: {distance}", items, tips)


def explain_efficiency_metrics(efficiency_metrics: Mapping[str, Any]) -> MetricExplanation:
    """Redundant calls (beyond the expected count of their tool)."""
    count = int(efficiency_metrics.get("redundant_count", 0))
    total = int(efficiency_metrics.get("total_calls", 0))
    rate = float(efficiency_metrics.get("redundant_rate", 0.0))
    items, tips = [], []
    if count > 0:
        items.append(
            _item(
                "warning",
                f"Agent made {count} redundant/duplicate tool call(s)",
                "warning",
                redundant_count=count,
            )
        )
        tips.append("Consider caching tool results or improving planning")
    return MetricExplanation(
        "Redundant Call Rate", 1.0 - rate, f"{count} of {total} calls redundant", items, tips
    )


def generate_explanations(result: Any) -> dict[str, MetricExplanation]:
    """Every metric's explanation for a result (its kept calls; none for a streamed result
    evaluated without ``keep_calls``)."""
    gold = list(result.gold_calls)
    trace = list(result.trace_calls or ())
    metrics: Mapping[str, Any] = result.metrics

    def part(key: str) -> Mapping[str, Any]:
        value = metrics.get(key)
        return value if isinstance(value, Mapping) else {}

    return {
        "selection_accuracy": explain_selection_accuracy(gold, trace, result.selection_accuracy),
        "tool_correctness": explain_tool_correctness(part("tool_correctness_metrics")),
        "argument_metrics": explain_argument_metrics(gold, trace, part("argument_metrics")),
        "sequence_metrics": explain_sequence_metrics(gold, trace, part("sequence_metrics")),
        "efficiency_metrics": explain_efficiency_metrics(part("efficiency_metrics")),
    }


def get_all_tips(explanations: Mapping[str, MetricExplanation]) -> list[str]:
    """Every tip, once, in metric order."""
    return list(dict.fromkeys(tip for e in explanations.values() for tip in e.tips))


def get_top_issues(
    explanations: Mapping[str, MetricExplanation], max_issues: int = 5
) -> list[Explanation]:
    """The first ``max_issues`` items: errors, then warnings (info items are not issues)."""
    items = [item for e in explanations.values() for item in e.items]
    ranked = [i for i in items if i.severity == "error"] + [
        i for i in items if i.severity == "warning"
    ]
    return ranked[:max_issues]
