"""Toolscore 1.10's ``toolscore.metrics.sequence``: the edit distance over tool names."""

from __future__ import annotations

from typing import Any

from .._migration import metric_section, run_calls
from ..calls import ToolCall

__all__ = ["calculate_edit_distance"]


def calculate_edit_distance(
    gold_calls: list[ToolCall], trace_calls: list[ToolCall]
) -> dict[str, Any]:
    """``{"edit_distance", "normalized_distance", "sequence_accuracy"}`` (Levenshtein)."""
    return metric_section(run_calls(gold_calls, trace_calls), "sequence_metrics")
