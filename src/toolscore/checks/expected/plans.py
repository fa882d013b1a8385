"""The expected-calls plans a process keeps: one per gold and options, built once.

Every door asks :func:`plan_for` (through :func:`~.check.expected_check`): the trials of a
dataset's task, the sessions of a live run and the calls of an ``evaluate()`` loop that share a
gold share its plan (its groups, signatures, start column). A gold is known by identity: the
doors hand the same list for the same gold (the gold lookup of a dataset and
:func:`toolscore.gold.gold_from_dicts` give one list per distinct content); a list whose calls
were replaced, added or removed since is planned again. A plan never changes once built, and a
gold's calls are read-only for the checks.

The cache holds at most :data:`KEPT` golds and :data:`KEPT_CALLS` gold calls, the least
recently used dropped first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from operator import is_

from ... import limits
from ...calls import ToolCall
from .state import ExpectedPlan

__all__ = ["KEPT", "KEPT_CALLS", "plan_for"]

KEPT = 256
"""The most golds whose plans are kept."""

KEPT_CALLS = 100_000
"""The most gold calls, over every kept gold (a huge gold is then planned each time)."""

_Options = tuple[bool, bool, int, int]
_PLANS: OrderedDict[int, tuple[Sequence[ToolCall], dict[_Options, ExpectedPlan]]] = OrderedDict()
_CALLS = [0]


def plan_for(
    gold: Sequence[ToolCall],
    strict: bool,
    keep_details: bool,
    exact_pairing_max: int | None = None,
    approx_candidates: int | None = None,
) -> ExpectedPlan:
    """The plan of ``gold`` with these options: the one built before for this very list
    (and these options), else a new one, kept."""
    options = (
        strict,
        keep_details,
        limits.exact_pairing_max() if exact_pairing_max is None else exact_pairing_max,
        limits.APPROX_PAIRING_CANDIDATES if approx_candidates is None else approx_candidates,
    )
    entry = _PLANS.get(id(gold))
    if entry is not None and _same(entry[0], gold):
        plan = entry[1].get(options)
        _PLANS.move_to_end(id(gold))
        if plan is None:
            plan = entry[1][options] = ExpectedPlan(list(gold), *options)
        return plan
    if entry is not None:  # the list was changed since its plan was built
        _drop(id(gold))
    plan = ExpectedPlan(list(gold), *options)
    if len(gold) <= KEPT_CALLS:
        _PLANS[id(gold)] = (tuple(gold), {options: plan})
        _CALLS[0] += len(gold)
        while len(_PLANS) > KEPT or _CALLS[0] > KEPT_CALLS:
            _drop(next(iter(_PLANS)))
    return plan


def _same(kept: Sequence[ToolCall], gold: Sequence[ToolCall]) -> bool:
    """``gold`` still holds the calls it held when its plan was built."""
    return len(kept) == len(gold) and all(map(is_, kept, gold))


def _drop(key: int) -> None:
    gold, _ = _PLANS.pop(key)
    _CALLS[0] -= len(gold)
