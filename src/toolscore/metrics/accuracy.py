"""Toolscore 1.10's ``toolscore.metrics.accuracy``: invocation and selection accuracy,
read from the one pipeline's result (:func:`toolscore._migration.run_calls`)."""

from __future__ import annotations

from .._migration import run_calls
from ..calls import ToolCall

__all__ = ["calculate_invocation_accuracy", "calculate_selection_accuracy"]


def calculate_invocation_accuracy(gold_calls: list[ToolCall], trace_calls: list[ToolCall]) -> float:
    """Whether the right tools were invoked: set overlap, penalised by missing and extra tools."""
    return float(run_calls(gold_calls, trace_calls).metrics["invocation_accuracy"])


def calculate_selection_accuracy(gold_calls: list[ToolCall], trace_calls: list[ToolCall]) -> float:
    """The share of trace calls whose tool is an expected one."""
    return float(run_calls(gold_calls, trace_calls).metrics["selection_accuracy"])
