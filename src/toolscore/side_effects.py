"""Side-effect validation: a gold call's ``side_effects`` checked on the trace call paired
with it (Toolscore 1.10's ``side_effect_metrics``).

A gold call may name checks, ``{"tool": "fetch", "side_effects": {"http_ok": true}}``; each is
run by a validator (:mod:`toolscore.validators`) on the trace call the argument pairing gives
that gold call. The pairing is the one of argument F1 (the expected-calls check's, asked again
on the calls of the tools that have side effects: a tool's pairing depends only on its own
calls). Unpaired gold calls fail every check ("Tool call not found in trace").

Memory: :class:`SideEffectsCheck` keeps the trace calls of the tools whose gold calls name side
effects (the validators need the paired call itself), and nothing of the other calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .calls import Batch, Finding, ToolCall
from .checks._base import BaseCheck, State
from .checks.expected import expected_check
from .validators import Validator, default_validators

__all__ = [
    "SideEffectState",
    "SideEffectsCheck",
    "has_side_effects",
    "side_effect_checks",
    "side_effect_metrics",
]


def _effects(call: ToolCall) -> Mapping[str, Any]:
    effects = call.metadata.get("side_effects") if call.metadata else None
    return effects if isinstance(effects, Mapping) else {}


def has_side_effects(gold: Sequence[ToolCall]) -> bool:
    """Whether some gold call names a side-effect check."""
    return any(_effects(call) for call in gold)


def _run(check: str, validator: Validator | None, call: ToolCall, expected: Any) -> tuple[Any, str]:
    if validator is None:
        return False, "No validator available"
    try:
        passed = validator(call, expected)
    except Exception as exc:  # a validator's failure is that check's outcome, not the run's
        return False, f"Validator error: {exc}"
    return passed, "Validator passed" if passed else "Validator failed"


def side_effect_metrics(
    gold: Sequence[ToolCall],
    paired: Mapping[int, ToolCall],
    validators: Mapping[str, Validator],
) -> dict[str, Any]:
    """``{"total_checks", "passed_checks", "success_rate", "details"}`` for the gold calls'
    side effects, given the trace call paired with each gold position."""
    details: list[dict[str, Any]] = []
    for i, gold_call in enumerate(gold):
        for check, expected in _effects(gold_call).items():
            call = paired.get(i)
            if call is None:
                passed, reason = False, "Tool call not found in trace"
            else:
                passed, reason = _run(check, validators.get(check), call, expected)
            details.append(
                {"tool": gold_call.tool, "check": check, "passed": passed, "reason": reason}
            )
    passed_count = sum(1 for d in details if d["passed"])
    return {
        "total_checks": len(details),
        "passed_checks": passed_count,
        "success_rate": passed_count / len(details) if details else 1.0,
        "details": details,
    }


@dataclass(frozen=True)
class SideEffectState(State):
    """The validated side effects (``side_effect_metrics``)."""

    values: dict[str, Any] = field(default_factory=dict)

    def metrics(self) -> dict[str, Any]:
        return {"side_effect_metrics": self.values}


class SideEffectsCheck(BaseCheck):
    """Runs the gold calls' side-effect validators at the end of the trace.

    Args:
        gold: the expected calls (with ``metadata["side_effects"]`` from the gold file).
        validators: check name -> validator (default: :func:`default_validators`).
    """

    name = "side_effects"

    def __init__(
        self, gold: Sequence[ToolCall], validators: Mapping[str, Validator] | None = None
    ) -> None:
        self.gold = list(gold)
        self.validators = dict(default_validators() if validators is None else validators)
        self.tools = {call.tool for call in self.gold if _effects(call)}
        self.positions = [i for i, call in enumerate(self.gold) if call.tool in self.tools]
        self.pairing = expected_check([self.gold[i] for i in self.positions], trajectory=False)
        self.kept: list[ToolCall] = []

    def feed(self, batch: Batch) -> list[Finding]:
        # ``done`` calls have their result, which the validators read
        calls = [call for call in batch.done if call.tool in self.tools]
        if calls:
            self.pairing.feed(Batch(calls=calls, done=calls))
            self.kept.extend(calls)
        return []

    def state(self) -> SideEffectState:
        paired = {self.positions[g]: self.kept[t] for g, t in self.pairing.pairing().items()}
        return SideEffectState(
            side_effect_metrics(self.gold, paired, self.validators), check=self.name
        )


def side_effect_checks(gold: Sequence[ToolCall], checks: Sequence[Any] | None) -> list[Any] | None:
    """``checks`` with a :class:`SideEffectsCheck` added when the gold names side effects."""
    if not has_side_effects(gold):
        return None if checks is None else list(checks)
    return [*(checks or ()), SideEffectsCheck(gold)]
