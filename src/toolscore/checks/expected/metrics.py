"""The expected-calls check's metrics, computed from its state (Toolscore 1.10's definitions).

Empty cases are decided per metric, as Toolscore does; ``trajectory_details`` keeps at most
:data:`~.state.MAX_TAIL_DETAILS` trace-only tail steps unless ``keep_details``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...calls import ToolCall
    from .state import ExpectedPlan, ExpectedState

__all__ = ["extra_metrics", "gold_metrics", "score_metrics"]


def gold_metrics(s: ExpectedState) -> dict[str, Any]:
    """The gold-based metrics, in Toolscore's key order, then the latency and cost metrics
    (:func:`extra_metrics`)."""
    return {
        "invocation_accuracy": _invocation(s),
        "selection_accuracy": _selection(s),
        "tool_correctness_metrics": _tool_correctness(s),
        "sequence_metrics": _sequence(s),
        "trajectory_metrics": _trajectory(s),
        "argument_metrics": _arguments(s),
        "efficiency_metrics": _efficiency(s),
        "required_call_recall": _required_call_recall(s),
        **extra_metrics(s),
    }


def score_metrics(s: ExpectedState) -> dict[str, Any]:
    """The part of :func:`gold_metrics` the score and a dataset's per-trace record read
    (selection, argument F1, sequence accuracy, redundancy, required-call recall), each
    computed as there: what a dataset's worker needs without the trajectory, the tool lists
    and the extras."""
    return {
        "selection_accuracy": _selection(s),
        "sequence_metrics": _sequence(s),
        "argument_metrics": _arguments(s),
        "efficiency_metrics": _efficiency(s),
        "required_call_recall": _required_call_recall(s),
    }


def extra_metrics(s: ExpectedState) -> dict[str, Any]:
    """``latency_metrics`` and ``cost_metrics``, each only when its total is > 0."""
    out: dict[str, Any] = {}
    d = s.durations
    total = d.total.value()
    if total > 0:
        out["latency_metrics"] = {
            "total_duration": total,
            "average_duration": total / d.count,
            "max_duration": d.max,
            "min_duration": d.min,
        }
    c = s.costs
    total = c.total.value()
    if total > 0:
        out["cost_metrics"] = {
            "total_cost": total,
            "average_cost": total / c.count,
            "cost_by_tool": {tool: _float(v.value()) for tool, v in s.cost_by_tool.items()},
        }
    return out


def _float(value: float) -> float:
    """A per-tool cost as ``0.0 + cost + ...`` gives it: a float."""
    return value + 0.0


def _plan(s: ExpectedState) -> tuple[ExpectedPlan, list[ToolCall]]:
    assert s.plan is not None
    return s.plan, s.plan.gold


def _prf(correct: int, expected: int, actual: int, vacuous: int) -> dict[str, float]:
    if expected == 0 and actual == 0 and vacuous > 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    precision = correct / actual if actual > 0 else 0.0
    recall = correct / expected if expected > 0 else 0.0
    f1 = 2 * (precision * recall) / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _invocation(s: ExpectedState) -> float:
    plan, gold = _plan(s)
    if not gold and not s.calls:
        return 1.0
    if not gold or not s.calls:
        return 0.0
    gold_names = plan.gold_counts.keys()
    trace_names = s.counts.keys()
    correct = len(gold_names & trace_names)
    penalty = len(trace_names - gold_names) + len(gold_names - trace_names)
    return min(1.0, max(0.0, (correct - penalty * 0.5) / len(gold_names)))


def _selection(s: ExpectedState) -> float:
    plan, gold = _plan(s)
    if not s.calls:
        return 1.0 if not gold else 0.0
    if not gold:
        return 0.0
    hits = sum(n for name, n in s.counts.items() if name in plan.gold_counts)
    return hits / s.calls


def _tool_correctness(s: ExpectedState) -> dict[str, Any]:
    plan, gold = _plan(s)
    called = sorted(s.counts)
    if not gold:
        return {
            "tool_correctness": 1.0 if not s.calls else 0.0,
            "expected_tools": [],
            "called_tools": called,
            "missing_tools": [],
            "extra_tools": list(called),
            "correct_count": 0,
            "total_expected": 0,
        }
    expected = plan.gold_counts.keys()
    trace = s.counts.keys()
    correct = len(expected & trace)
    return {
        "tool_correctness": correct / len(expected),
        "expected_tools": sorted(expected),
        "called_tools": called,
        "missing_tools": sorted(expected - trace),
        "extra_tools": sorted(trace - expected),
        "correct_count": correct,
        "total_expected": len(expected),
        "strict_order": False,
    }


def _sequence(s: ExpectedState) -> dict[str, float]:
    _, gold = _plan(s)
    d = s.column[-1]  # both trackers: the distance last
    normalized = d / max(len(gold), s.calls, 1)
    return {
        "edit_distance": float(d),
        "normalized_distance": normalized,
        "sequence_accuracy": 1.0 - normalized,
    }


def _trajectory(s: ExpectedState) -> dict[str, Any]:
    plan, gold = _plan(s)
    n, m = len(gold), s.calls
    if not n:
        out: dict[str, Any] = {
            "trajectory_accuracy": 1.0 if not m else 0.0,
            "step_match_rate": 1.0 if not m else 0.0,
            "path_efficiency": 1.0,
            "correct_steps": 0,
            "total_expected_steps": 0,
            "trajectory_details": [],
        }
        return out
    if not m:
        return {
            "trajectory_accuracy": 0.0,
            "step_match_rate": 0.0,
            "path_efficiency": 0.0,
            "correct_steps": 0,
            "total_expected_steps": n,
            "trajectory_details": [
                _missing_step(s, i, "Agent did not execute this step") for i in range(n)
            ],
        }
    details = list(s.details)
    if m < n:
        # Gold-only steps go before nothing: the trace is shorter, so no tail follows.
        details.extend(
            _missing_step(s, i, "Agent stopped early - step not executed") for i in range(m, n)
        )
    rate = s.correct_steps / n
    efficiency = n / m if m > n else 1.0
    out = {
        "trajectory_accuracy": rate * efficiency,
        "step_match_rate": rate,
        "path_efficiency": efficiency,
        "correct_steps": s.correct_steps,
        "total_expected_steps": n,
        "trajectory_details": details,
    }
    tail_omitted = max(0, s.calls - plan.tail_end)
    if tail_omitted:
        out["trajectory_details_omitted"] = tail_omitted
    return out


def _missing_step(s: ExpectedState, i: int, error: str) -> dict[str, Any]:
    _, gold = _plan(s)
    g = gold[i]
    return {
        "step": i + 1,
        "expected_tool": g.tool,
        "actual_tool": None,
        "matches": False,
        "expected_args": g.args or {},
        "actual_args": {},
        "error": error,
    }


def _arguments(s: ExpectedState) -> dict[str, Any]:
    _, gold = _plan(s)
    if not gold and not s.calls:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    if not gold or not s.calls:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    pairing = s.pairing()
    correct = expected = actual = vacuous = 0
    for pos, g in enumerate(gold):
        cand = pairing.get(pos)
        if g.args is None:
            if cand is not None:
                vacuous += 1
            continue
        n_expected = len(g.args) if isinstance(g.args, dict) else 0
        if cand is None:
            expected += n_expected
            continue
        w, _, n_actual = cand
        correct += w
        expected += n_expected
        actual += n_actual
        if n_expected == 0 and n_actual == 0:
            vacuous += 1
    out: dict[str, Any] = _prf(correct, expected, actual, vacuous)
    wide = s.approximate_tools()
    if wide:
        plan, _ = _plan(s)
        out["pairing"] = {
            "method": "approximate",
            "exact_up_to": plan.exact_pairing_max,
            "candidates_per_gold_call": plan.approx_candidates,
            "tools": [
                {
                    "tool": tool,
                    "gold_calls": n,
                    "trace_calls": m,
                    **({"signatures_capped": True} if capped else {}),
                }
                for tool, n, m, capped in wide
            ],
        }
    return out


def _efficiency(s: ExpectedState) -> dict[str, Any]:
    plan, _ = _plan(s)
    if not s.calls:
        return {"redundant_count": 0, "total_calls": 0, "redundant_rate": 0.0}
    gold_counts = plan.gold_counts
    redundant = 0
    for name, n in s.counts.items():
        extra = n - gold_counts.get(name, 0)
        if extra > 0:
            redundant += extra
    return {
        "redundant_count": redundant,
        "total_calls": s.calls,
        "redundant_rate": redundant / s.calls,
    }


def _required_call_recall(s: ExpectedState) -> float | None:
    _, gold = _plan(s)
    if not gold:
        return None
    met = len(gold) - sum(s.needed.values())
    return met / len(gold)
