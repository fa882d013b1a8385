"""Toolscore 1.10's ``toolscore.metrics.arguments``: argument precision, recall and F1.

The pairing is this package's exact one-to-one pairing at every size (Toolscore 1.10 turns
greedy above 12 trace calls of a tool, which can pair worse).
"""

from __future__ import annotations

from typing import Any

from .._migration import run_calls
from ..calls import ToolCall

__all__ = ["calculate_argument_f1"]


def calculate_argument_f1(
    gold_calls: list[ToolCall], trace_calls: list[ToolCall], strict: bool = False
) -> dict[str, Any]:
    """``{"precision", "recall", "f1"}`` of the arguments of paired calls.

    Args:
        gold_calls: the expected calls.
        trace_calls: the calls made.
        strict: compare argument types exactly (``1 != 1.0``) and recurse.
    """
    section = run_calls(gold_calls, trace_calls, strict=strict).metrics["argument_metrics"]
    return {key: section[key] for key in ("precision", "recall", "f1")}
