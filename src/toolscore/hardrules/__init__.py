"""Hard rules: pass/fail rules beside the graded score.

:mod:`.spec` reads and validates them (the rule file's object form), :mod:`.schemas` the
tools' JSON Schemas, :mod:`.matching` the argument and trajectory match modes, and
:mod:`.state` the mergeable states the check (:mod:`toolscore.checks.hardrules`) keeps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .matching import args_match as args_match
    from .matching import value_match as value_match
    from .schemas import ToolSchemas as ToolSchemas
    from .schemas import tool_definitions as tool_definitions
    from .spec import ARG_MODES as ARG_MODES
    from .spec import MATCH_MODES as MATCH_MODES
    from .spec import ArgumentModes as ArgumentModes
    from .spec import CountRule as CountRule
    from .spec import DataFlowRule as DataFlowRule
    from .spec import OrderRule as OrderRule
    from .spec import RuleSet as RuleSet
    from .spec import combine as combine
    from .spec import load_gold_rules as load_gold_rules
    from .spec import load_rules as load_rules
    from .spec import ruleset as ruleset
    from .spec import ruleset_from_json as ruleset_from_json
    from .state import Violation as Violation

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

# Each name is imported at its first use: reading a rule file (.spec) does not load the
# matching machinery, the tools' schemas or the check's states.
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "args_match": ".matching",
        "value_match": ".matching",
        "ToolSchemas": ".schemas",
        "tool_definitions": ".schemas",
        "ARG_MODES": ".spec",
        "MATCH_MODES": ".spec",
        "ArgumentModes": ".spec",
        "CountRule": ".spec",
        "DataFlowRule": ".spec",
        "OrderRule": ".spec",
        "RuleSet": ".spec",
        "combine": ".spec",
        "load_gold_rules": ".spec",
        "load_rules": ".spec",
        "ruleset": ".spec",
        "ruleset_from_json": ".spec",
        "Violation": ".state",
    },
    __all__,
)
