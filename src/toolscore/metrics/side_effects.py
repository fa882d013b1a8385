"""Toolscore 1.10's ``toolscore.metrics.side_effects``: gold calls' side effects, validated on
their paired trace calls (see :mod:`toolscore.side_effects`)."""

from __future__ import annotations

from typing import Any

from .._migration import indexed
from ..calls import Batch, ToolCall
from ..side_effects import SideEffectsCheck

__all__ = ["calculate_side_effect_success_rate"]


def calculate_side_effect_success_rate(
    gold_calls: list[ToolCall],
    trace_calls: list[ToolCall],
    validators: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``{"total_checks", "passed_checks", "success_rate", "details"}``.

    Args:
        gold_calls: the expected calls; ``metadata["side_effects"]`` names the checks.
        trace_calls: the calls made.
        validators: check name -> ``validator(call, expected)``; none by default (every
            check then fails with "No validator available"), as in Toolscore 1.10.
    """
    check = SideEffectsCheck(gold_calls, validators or {})
    calls = indexed(trace_calls)
    check.feed(Batch(calls=calls, done=calls))
    return check.state().values
