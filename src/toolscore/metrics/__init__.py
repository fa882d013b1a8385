"""Toolscore 1.10's ``toolscore.metrics`` package path: its metric functions over lists of calls.

Each function runs the lists through this package's one pipeline and reducer
(:func:`toolscore._migration.run_calls`) and reads its metric, so the numbers are those of
``evaluate``. Not here: the LLM judge and the model price table (not part of toolscore).
"""

from __future__ import annotations

from .accuracy import calculate_invocation_accuracy, calculate_selection_accuracy
from .arguments import calculate_argument_f1
from .cost import calculate_cost_attribution, calculate_latency
from .efficiency import calculate_redundant_call_rate
from .policy import check_forbidden_calls, load_forbidden_rules, rules_from_json
from .security import find_secrets, redact_secrets
from .sequence import calculate_edit_distance
from .side_effects import calculate_side_effect_success_rate
from .tool_correctness import (
    calculate_required_call_recall,
    calculate_tool_correctness,
    calculate_tool_correctness_with_args,
)
from .trajectory import calculate_partial_trajectory_accuracy, calculate_trajectory_accuracy

__all__ = [
    "calculate_argument_f1",
    "calculate_cost_attribution",
    "calculate_edit_distance",
    "calculate_invocation_accuracy",
    "calculate_latency",
    "calculate_partial_trajectory_accuracy",
    "calculate_redundant_call_rate",
    "calculate_required_call_recall",
    "calculate_selection_accuracy",
    "calculate_side_effect_success_rate",
    "calculate_tool_correctness",
    "calculate_tool_correctness_with_args",
    "calculate_trajectory_accuracy",
    "check_forbidden_calls",
    "find_secrets",
    "load_forbidden_rules",
    "redact_secrets",
    "rules_from_json",
]
