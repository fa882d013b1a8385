"""Toolscore 1.10's ``toolscore.metrics.tool_correctness``: which expected tools were called,
and the required-call recall.

The set-based form and the recall are read from the one pipeline's result; the positional
``strict_order`` form is read from its trajectory steps (step *i* of the gold list against
call *i*).
"""

from __future__ import annotations

from typing import Any

from .._migration import metric_section, run_calls
from ..calls import ToolCall

__all__ = [
    "calculate_required_call_recall",
    "calculate_tool_correctness",
    "calculate_tool_correctness_with_args",
]


def calculate_tool_correctness(
    gold_calls: list[ToolCall], trace_calls: list[ToolCall], strict_order: bool = False
) -> dict[str, Any]:
    """The share of expected tools called (``strict_order``: of gold positions whose call at
    the same position has the same tool), with the tool lists."""
    result = run_calls(gold_calls, trace_calls)
    section = metric_section(result, "tool_correctness_metrics")
    if not strict_order or not gold_calls:
        return section
    steps = metric_section(result, "trajectory_metrics").get("trajectory_details") or []
    correct = sum(
        1
        for s in steps
        if s.get("expected_tool") is not None and s["expected_tool"] == s["actual_tool"]
    )
    return {
        "tool_correctness": correct / len(gold_calls),
        "expected_tools": section["expected_tools"],
        "called_tools": section["called_tools"],
        "expected_sequence": [c.tool for c in gold_calls],
        "called_sequence": [c.tool for c in trace_calls],
        "correct_count": correct,
        "total_expected": len(gold_calls),
        "strict_order": True,
    }


def calculate_tool_correctness_with_args(
    gold_calls: list[ToolCall], trace_calls: list[ToolCall]
) -> dict[str, Any]:
    """Each gold call, in order, takes the first unused trace call of its tool whose args are
    equal (``==``: matchers apply; gold args ``None`` accepts any)."""
    if not gold_calls:
        return {
            "tool_correctness_strict": 0.0 if trace_calls else 1.0,
            "matches": [],
            "mismatches": list(trace_calls),
        }
    pool = list(trace_calls)
    matches: list[tuple[ToolCall, ToolCall]] = []
    missed: list[ToolCall] = []
    for gold in gold_calls:
        found = next(
            (
                i
                for i, call in enumerate(pool)
                if call.tool == gold.tool and (gold.args is None or gold.args == call.args)
            ),
            None,
        )
        if found is None:
            missed.append(gold)
        else:
            matches.append((gold, pool.pop(found)))
    return {
        "tool_correctness_strict": len(matches) / len(gold_calls),
        "matches": matches,
        "mismatches": missed + pool,
        "match_count": len(matches),
        "total_expected": len(gold_calls),
    }


def calculate_required_call_recall(
    gold_calls: list[ToolCall], trace_calls: list[ToolCall]
) -> float | None:
    """The share of gold calls with a successful call of the same tool (``None``: no gold)."""
    value = run_calls(gold_calls, trace_calls).required_call_recall
    return None if value is None else float(value)
