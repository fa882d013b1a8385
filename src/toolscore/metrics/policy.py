"""Toolscore 1.10's ``toolscore.metrics.policy`` module path: forbidden-call rules."""

from __future__ import annotations

from ..rules import check_forbidden_calls, load_forbidden_rules, rules_from_json

__all__ = ["check_forbidden_calls", "load_forbidden_rules", "rules_from_json"]
