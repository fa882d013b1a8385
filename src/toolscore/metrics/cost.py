"""Toolscore 1.10's ``toolscore.metrics.cost``: latency and cost totals of the trace calls."""

from __future__ import annotations

from typing import Any

from .._migration import metric_section, run_calls
from ..calls import ToolCall

__all__ = ["calculate_cost_attribution", "calculate_latency"]


def calculate_latency(trace_calls: list[ToolCall]) -> dict[str, Any]:
    """Total, mean, max and min ``duration`` of the calls that record one (zeros if none)."""
    found = metric_section(run_calls([], trace_calls), "latency_metrics")
    return found or dict.fromkeys(
        ("total_duration", "average_duration", "max_duration", "min_duration"), 0.0
    )


def calculate_cost_attribution(trace_calls: list[ToolCall]) -> dict[str, Any]:
    """Total and mean ``cost`` of the calls that record one, and the sum per tool."""
    found = metric_section(run_calls([], trace_calls), "cost_metrics")
    return found or {"total_cost": 0.0, "average_cost": 0.0, "cost_by_tool": {}}
