"""Toolscore 1.10's ``toolscore.metrics.trajectory``: the positional step comparison, and the
order-free overlap of tool names."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._migration import metric_section, run_calls
from ..calls import ToolCall

__all__ = ["calculate_partial_trajectory_accuracy", "calculate_trajectory_accuracy"]


def calculate_trajectory_accuracy(
    gold_calls: list[ToolCall], trace_calls: list[ToolCall]
) -> dict[str, Any]:
    """Step *i* of the gold list against call *i*: ``trajectory_accuracy``,
    ``step_match_rate``, ``path_efficiency`` and the steps."""
    return metric_section(run_calls(gold_calls, trace_calls), "trajectory_metrics")


def _name(tool: str, loose: bool) -> str:
    return tool.lower().replace("_", "").replace("-", "") if loose else tool


def calculate_partial_trajectory_accuracy(
    gold_calls: list[ToolCall],
    trace_calls: list[ToolCall],
    allow_tool_name_variations: bool = False,
) -> dict[str, float]:
    """How many gold calls' tools the trace called, counted with multiplicity, over the gold
    count (order ignored); ``allow_tool_name_variations`` ignores case, ``_`` and ``-``."""
    if not gold_calls:
        return {"partial_trajectory_accuracy": 0.0 if trace_calls else 1.0}
    loose = allow_tool_name_variations
    want = Counter(_name(c.tool, loose) for c in gold_calls)
    got = Counter(_name(c.tool, loose) for c in trace_calls)
    overlap = sum((want & got).values())
    return {"partial_trajectory_accuracy": overlap / len(gold_calls)}
