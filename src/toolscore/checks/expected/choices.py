"""A gold with alternative calls: one expected-calls check per concrete gold, the best counts.

A gold item may list several acceptable calls (``{"$one_of": [call, call]}``); such a gold
stands for every gold with one alternative chosen at each position
(:func:`toolscore.gold.gold_choices`). :class:`ChoicesCheck` reads the trace once and feeds
each batch to one :class:`~.check.ExpectedCheck` per concrete gold; its state holds theirs,
merges them one by one (so parts of a trace merge as before), and gives the metrics of the
one whose score (:func:`toolscore.result.compute_score`, under the run's weights) is
highest, the first on a tie. So a gold of alternatives scores exactly as the best of its
alternatives would alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...calls import Batch, Finding, ToolCall
from ...failed import failures_of
from ...gold import gold_choices
from ...result import compute_score, normalize_weights
from .._base import BaseCheck, State
from .check import ExpectedCheck, expected_check

if TYPE_CHECKING:
    from ...hardrules.spec import RuleSet

__all__ = ["ChoicesCheck", "ChoicesState", "expected_for"]


@dataclass(frozen=True)
class ChoicesState(State):
    """The states of the checks of every concrete gold, in the order of
    :func:`~toolscore.gold.gold_choices`."""

    states: tuple[Any, ...]
    weights: tuple[tuple[str, float], ...]
    check: str = field(default="expected", kw_only=True)

    def merge(self, later: ChoicesState) -> ChoicesState:
        merged = tuple(a.merge(b) for a, b in zip(self.states, later.states, strict=True))
        return ChoicesState(merged, self.weights)

    def relocated(self, lines: int) -> ChoicesState:
        return ChoicesState(tuple(s.relocated(lines) for s in self.states), self.weights)

    def best(self) -> int:
        """The position of the concrete gold that scores highest (the first on a tie)."""
        weights = dict(self.weights)
        scores = [compute_score(s.score_metrics(), weights) for s in self.states]
        return scores.index(max(scores))

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = self.states[self.best()].metrics()
        return out

    def score_metrics(self) -> dict[str, Any]:
        """The score's metrics of the best concrete gold (see
        :meth:`~.state.ExpectedState.score_metrics`)."""
        out: dict[str, Any] = self.states[self.best()].score_metrics()
        return out


class ChoicesCheck(BaseCheck):
    """The expected-calls checks of every concrete gold, fed the same batches.

    Args:
        checks: one :class:`~.check.ExpectedCheck` per concrete gold.
        weights: the run's normalized weights (None: the default ones), which decide the
            best.
    """

    name = "expected"
    mergeable = True

    def __init__(
        self, checks: Sequence[ExpectedCheck], weights: Mapping[str, float] | None = None
    ) -> None:
        self.checks = list(checks)
        given = normalize_weights(None) if weights is None else weights
        self.weights = tuple(given.items())

    def begin_part(self) -> None:
        for check in self.checks:
            check.begin_part()

    def feed(self, batch: Batch) -> list[Finding]:
        for check in self.checks:
            check.feed(batch)
        return []

    def state(self) -> ChoicesState:
        return ChoicesState(tuple(c.state() for c in self.checks), self.weights)

    @property
    def gold(self) -> list[ToolCall]:
        """The best concrete gold so far."""
        return self.checks[self.state().best()].gold


def expected_for(
    gold: list[ToolCall],
    rules: RuleSet | None,
    *,
    strict: bool,
    keep_details: bool,
    score_only: bool,
    weights: Mapping[str, float] | None,
    trajectory: bool = True,
) -> BaseCheck:
    """The expected-calls check of ``gold`` under ``rules`` (argument modes opted into the
    score, free tools, what counts as a failed call): an
    :class:`~.check.ExpectedCheck`, or a :class:`ChoicesCheck` when the gold lists
    alternative calls. See
    :func:`toolscore.api.builtin_checks` for the options."""

    def one(gold: list[ToolCall]) -> ExpectedCheck:
        scored, view = gold, None
        if rules is not None and rules.arguments is not None and rules.arguments.score:
            # here: the hard rules' modules stay out of a plain evaluation's start-up
            from ...hardrules.matching import score_view

            scored, view = score_view(rules.arguments, gold)
        return expected_check(
            scored,
            strict=strict,
            keep_details=keep_details,
            arg_view=view,
            trajectory=trajectory and not score_only,
            free=() if rules is None else rules.free,
            failures=failures_of(rules),
        )

    choices = gold_choices(gold)
    if choices is None:
        return one(gold)
    return ChoicesCheck([one(g) for g in choices], weights)
