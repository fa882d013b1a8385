"""Toolscore 1.10's ``toolscore.metrics.efficiency``: redundant, identical, failed and retried
calls."""

from __future__ import annotations

from typing import Any

from .._migration import metric_section, run_calls
from ..calls import ToolCall

__all__ = ["calculate_redundant_call_rate"]


def calculate_redundant_call_rate(
    gold_calls: list[ToolCall], trace_calls: list[ToolCall]
) -> dict[str, Any]:
    """The eight ``efficiency_metrics`` keys (``redundant_rate``, ``error_count``...)."""
    return metric_section(run_calls(gold_calls, trace_calls), "efficiency_metrics")
