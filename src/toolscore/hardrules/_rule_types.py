"""What a rule file holds once validated: the rules of each kind and :class:`RuleSet` (see
:mod:`toolscore.hardrules.spec`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..failed import FailureRules
from ..rules import Rule

MatchMode = Literal["strict", "unordered", "subset", "superset"]
ArgMode = Literal["exact", "ignore", "subset", "superset"]
MATCH_MODES: tuple[MatchMode, ...] = ("strict", "unordered", "subset", "superset")
ARG_MODES: tuple[ArgMode, ...] = ("exact", "ignore", "subset", "superset")


@dataclass(frozen=True)
class OrderRule:
    """``before`` must be called before any call to ``after`` (reported at the first call to
    ``after`` with no call to ``before`` ahead of it)."""

    id: str
    before: str
    after: str
    reason: str | None = None


@dataclass(frozen=True)
class CountRule:
    """Calls to ``tool`` (every call when ``tool`` is None: a step budget) must number at
    least ``min`` and at most ``max``. Too many is reported at the first call past ``max``;
    too few at the end of the trace."""

    id: str
    tool: str | None
    min: int | None = None
    max: int | None = None
    reason: str | None = None


@dataclass(frozen=True)
class DataFlowRule:
    """A call to a ``sinks`` tool after a *source*: a call whose result carried a credential
    (``credentials``) or a call matching one of ``sources`` (forbidden-rule form: a read of a
    private path). Reported at each sink call after the first source."""

    id: str
    sinks: frozenset[str]
    sources: tuple[Rule, ...] = ()
    credentials: bool = True
    reason: str | None = None


@dataclass(frozen=True)
class ArgumentModes:
    """How arguments are compared: a default mode, one per tool, and one per argument of a
    tool. ``exact``: same keys, every value matches; ``ignore``: not compared; ``subset``:
    every expected argument is there and matches, extra actual arguments do not cost;
    ``superset``: every actual argument was expected and matches, missing ones do not cost.
    A per-argument mode applies to that argument's value: ``ignore`` drops it; ``subset`` /
    ``superset`` compare a dict's keys or a list's items one way only.

    ``score``: the modes also change the graded argument F1 (opt-in; off by default, so
    existing scores stay as they were): ``ignore`` leaves arguments out, ``subset`` does not
    count actual arguments that no expected call of the tool has. ``superset`` decides the
    match modes only (the score's pairing counts matched arguments per expected call).
    Per-argument ``subset``/``superset`` modes decide the match modes only."""

    mode: ArgMode = "exact"
    tools: Mapping[str, ArgMode] = field(default_factory=dict)
    args: Mapping[str, Mapping[str, ArgMode]] = field(default_factory=dict)
    score: bool = False

    def tool_mode(self, tool: str) -> ArgMode:
        return self.tools.get(tool, self.mode)

    def arg_modes(self, tool: str) -> Mapping[str, ArgMode]:
        return self.args.get(tool, {})


@dataclass(frozen=True)
class RuleSet:
    """Forbidden rules and hard rules, validated (see the module docstring)."""

    forbidden: tuple[Rule, ...] = ()
    allow: frozenset[str] | None = None
    allow_id: str = "allow"
    allow_reason: str | None = None
    order: tuple[OrderRule, ...] = ()
    counts: tuple[CountRule, ...] = ()
    schemas: Any = None
    """A :class:`~toolscore.hardrules.schemas.ToolSchemas`, or None."""
    data_flow: tuple[DataFlowRule, ...] = ()
    match: tuple[MatchMode, ...] = ()
    arguments: ArgumentModes | None = None
    has_forbidden: bool = False
    """A forbidden list was given (even empty): the policy check runs."""
    failures: FailureRules | None = None
    """What counts as a failed call (None: the defaults of :mod:`toolscore.failed`)."""
    free: tuple[str, ...] = ()
    """Globs of tools the gold does not judge (see ``expected_check``'s ``free``)."""

    @property
    def hard(self) -> bool:
        """Any rule besides the forbidden ones (the hard-rules check runs)."""
        return bool(
            self.allow is not None
            or self.order
            or self.counts
            or self.schemas is not None
            or self.data_flow
            or self.match
        )

    def rule_count(self) -> int:
        """How many hard rules: each order, count and data-flow rule, the allowlist, each
        schema, each match mode."""
        schemas = 0 if self.schemas is None else len(self.schemas)
        allow = 0 if self.allow is None else 1
        return (
            len(self.order) + len(self.counts) + len(self.data_flow) + allow + schemas
            + len(self.match)
        )  # fmt: skip
