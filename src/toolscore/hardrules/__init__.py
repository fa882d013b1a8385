"""Hard rules: pass/fail rules beside the graded score.

:mod:`.spec` reads and validates them (the rule file's object form), :mod:`.schemas` the
tools' JSON Schemas, :mod:`.matching` the argument and trajectory match modes, and
:mod:`.state` the mergeable states the check (:mod:`toolscore.checks.hardrules`) keeps.
"""

from __future__ import annotations

from .matching import args_match, value_match
from .schemas import ToolSchemas, tool_definitions
from .spec import (
    ARG_MODES,
    MATCH_MODES,
    ArgumentModes,
    CountRule,
    DataFlowRule,
    OrderRule,
    RuleSet,
    combine,
    load_gold_rules,
    load_rules,
    ruleset,
    ruleset_from_json,
)
from .state import Violation

__all__ = [
    "ARG_MODES",
    "MATCH_MODES",
    "ArgumentModes",
    "CountRule",
    "DataFlowRule",
    "OrderRule",
    "RuleSet",
    "ToolSchemas",
    "Violation",
    "args_match",
    "combine",
    "load_gold_rules",
    "load_rules",
    "ruleset",
    "ruleset_from_json",
    "tool_definitions",
    "value_match",
]
