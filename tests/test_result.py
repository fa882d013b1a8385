from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from toolscore.calls import Batch, Finding, ToolCall
from toolscore.checks._base import State
from toolscore.checks.expected import expected_check
from toolscore.errors import TruncatedTrace
from toolscore.matchers import Regex
from toolscore.result import (
    DEFAULT_WEIGHTS,
    EvaluationResult,
    call_record,
    compute_score,
    json_safe,
    normalize_weights,
    reduce,
)
from toolscore.verdict import (
    GRADE_BANDS,
    GRADE_ORDER,
    grade_at_least,
    letter_grade,
    parse_fail_under,
    passes,
    verdict_word,
)

# -- fakes for the checks other helpers write -------------------------------------------------


@dataclass(frozen=True)
class FakeErrors(State):
    eff: dict[str, Any] = field(default_factory=dict)
    failed_tools: list[tuple[str, int]] = field(default_factory=list)

    def metrics(self) -> dict[str, Any]:
        return {"efficiency_metrics": dict(self.eff)}


@dataclass(frozen=True)
class FakeSecrets(State):
    secrets: list[dict[str, Any]] = field(default_factory=list)

    def metrics(self) -> dict[str, Any]:
        return {"security_metrics": {"secret_count": len(self.secrets), "secrets": self.secrets}}


@dataclass(frozen=True)
class FakePolicy(State):
    violations: list[dict[str, Any]] = field(default_factory=list)

    def metrics(self) -> dict[str, Any]:
        return {
            "policy_metrics": {
                "violation_count": len(self.violations),
                "rule_count": 2,
                "violations": self.violations,
            }
        }


def tc(tool: str, args: Any = None, **meta: Any) -> ToolCall:
    return ToolCall(tool, args, metadata=dict(meta))


def evaluate(
    gold: list[ToolCall],
    trace: list[ToolCall],
    weights: dict[str, Any] | None = None,
    *,
    others: list[State] = (),  # type: ignore[assignment]
    keep: bool = True,
    include_extras: bool = False,
    input_error: Any = None,
) -> EvaluationResult:
    for i, c in enumerate(trace):
        c.index = i
    check = expected_check(gold, keep_details=keep)
    check.feed(Batch(calls=trace, done=trace))
    check.finish()
    return reduce(
        [check.state(), *others],
        weights=normalize_weights(weights),
        gold=gold,
        trace_calls=trace if keep else None,
        trace_calls_count=len(trace),
        findings=[],
        input_error=input_error,
        include_extras=include_extras,
    )


VERBATIM_SECRETS = [
    {
        "index": i,
        "tool": "fetch",
        "path": "headers.Authorization",
        "kind": "openai_api_key",
        "preview": "sk-p…cd",
    }
    for i in (1, 2)
]


def verbatim() -> EvaluationResult:
    key = "Bearer sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
    gold = [
        tc("search", {"q": "weather NYC"}),
        tc("fetch", {"url": "https://api.example.com/w"}),
        tc("summarize"),
    ]
    trace = [
        tc("search", {"q": "weather NYC"}),
        tc(
            "fetch",
            {"url": "https://api.example.com/w", "headers": {"Authorization": key}},
            error="timeout",
            is_error=True,
        ),
        tc(
            "fetch",
            {"url": "https://api.example.com/w", "headers": {"Authorization": key}},
            is_error=True,
        ),
        tc("run_shell", {"command": ["rm", "-rf", "/tmp/x"]}),
    ]
    errors = FakeErrors(
        {
            "identical_count": 1,
            "identical_rate": 0.25,
            "error_count": 2,
            "error_rate": 0.5,
            "retry_after_error_count": 1,
        },
        [("fetch", 2)],
    )
    policy = FakePolicy(
        [
            {
                "index": 3,
                "tool": "run_shell",
                "args": trace[3].args,
                "rule": 0,
                "reason": "destructive",
            }
        ]
    )
    return evaluate(gold, trace, others=[errors, FakeSecrets(VERBATIM_SECRETS), policy])


# -- weights ----------------------------------------------------------------------------------


def test_normalize_none_is_the_defaults() -> None:
    assert normalize_weights(None) == DEFAULT_WEIGHTS
    assert list(normalize_weights(None)) == list(DEFAULT_WEIGHTS)
    assert EvaluationResult.DEFAULT_WEIGHTS == DEFAULT_WEIGHTS
    assert EvaluationResult.RECORD_SCHEMA_VERSION == "2"


def test_normalize_divides_by_float_sum() -> None:
    w = normalize_weights({})
    assert w["selection_accuracy"] == 0.4 / 0.9999999999999999
    w = normalize_weights({"required_call_recall": 0.3})
    assert sum(w.values()) == pytest.approx(1.0)
    assert w["selection_accuracy"] == pytest.approx(0.3077, abs=1e-4)
    assert w["argument_f1"] == pytest.approx(0.2308, abs=1e-4)
    assert w["redundant_rate"] == pytest.approx(0.0769, abs=1e-4)
    assert w["required_call_recall"] == pytest.approx(0.2308, abs=1e-4)
    assert normalize_weights({"selection_accuracy": True})["selection_accuracy"] == 1 / 1.6


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"speed": 1}, "Unknown weight keys: {'speed'}. Valid keys: {'argument_f1', "),
        ({"argument_f1": math.nan}, "Weight for 'argument_f1' must be a finite number, got nan"),
        ({"argument_f1": math.inf}, "must be a finite number, got inf"),
        ({"argument_f1": "abc"}, "Weight for 'argument_f1' must be a finite number, got abc"),
        ({"argument_f1": None}, "must be a finite number, got None"),
        ({"argument_f1": -0.5}, "Weight for 'argument_f1' must be non-negative, got -0.5"),
        (
            {k: 0 for k in DEFAULT_WEIGHTS},
            "Weights sum to zero after merging with defaults; at least one weight must be "
            "positive.",
        ),
    ],
)
def test_normalize_errors(weights: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        normalize_weights(weights)
    assert message in str(info.value)


# -- score: the worked examples of §4 and §10.1 -----------------------------------------------


def test_perfect_score_float_noise() -> None:
    gold = [tc("a", {"x": 1}), tc("b")]
    perfect = evaluate(gold, [tc("a", {"x": 1}), tc("b")])
    assert perfect.score == 0.9999999999999999
    assert perfect.grade == "A"
    renormalized = evaluate(gold, [tc("a", {"x": 1}), tc("b")], {})
    assert renormalized.score == 1.0000000000000002


def test_empty_gold_and_trace() -> None:
    r = evaluate([], [])
    assert r.score == 0.9999999999999999
    assert r.required_call_recall is None


def test_gold_without_trace_scores_redundancy_only() -> None:
    assert evaluate([tc("a")], []).score == 0.1


def test_trace_without_gold_scores_zero() -> None:
    assert evaluate([], [tc("a")]).score == 0.0
    r = evaluate([], [tc("a")], {"required_call_recall": 1})
    assert r.score == pytest.approx(0.5, abs=1e-12)


def test_verbatim_run_score() -> None:
    r = verbatim()
    assert r.selection_accuracy == 0.75
    assert r.argument_f1 == pytest.approx(0.8, abs=1e-12)
    assert r.sequence_accuracy == 0.5
    assert r.metrics["efficiency_metrics"]["redundant_rate"] == 0.5
    assert r.score == 0.6900000000000001
    assert r.grade == "D"
    assert r.required_call_recall == 1 / 3
    weighted = evaluate(r.gold_calls, r.trace_calls or [], {"required_call_recall": 0.3}, others=[])
    assert weighted.score == 0.6076923076923078


def test_compute_score_order_and_none_recall() -> None:
    m = {
        "selection_accuracy": 1.0,
        "argument_metrics": {"f1": 1.0},
        "sequence_metrics": {"sequence_accuracy": 1.0},
        "efficiency_metrics": {"redundant_rate": 0.0},
        "required_call_recall": None,
    }
    assert compute_score(m, DEFAULT_WEIGHTS) == 0.9999999999999999
    assert compute_score({}, {**DEFAULT_WEIGHTS, "required_call_recall": 1.0}) == 0.1 + 1.0


# -- reducer ----------------------------------------------------------------------------------


def test_reduce_key_order_and_efficiency_merge() -> None:
    r = verbatim()
    assert list(r.metrics) == [
        "invocation_accuracy",
        "selection_accuracy",
        "tool_correctness_metrics",
        "sequence_metrics",
        "trajectory_metrics",
        "argument_metrics",
        "efficiency_metrics",
        "required_call_recall",
        "security_metrics",
        "policy_metrics",
    ]
    assert r.metrics["efficiency_metrics"] == {
        "redundant_count": 2,
        "total_calls": 4,
        "redundant_rate": 0.5,
        "identical_count": 1,
        "identical_rate": 0.25,
        "error_count": 2,
        "error_rate": 0.5,
        "retry_after_error_count": 1,
    }
    assert list(r.metrics["efficiency_metrics"]) == list(
        evaluate([], []).metrics["efficiency_metrics"]
    )


def test_reduce_without_other_checks_has_zero_efficiency() -> None:
    r = evaluate([tc("a")], [])
    assert r.metrics["efficiency_metrics"] == {
        "redundant_count": 0,
        "total_calls": 0,
        "redundant_rate": 0.0,
        "identical_count": 0,
        "identical_rate": 0.0,
        "error_count": 0,
        "error_rate": 0.0,
        "retry_after_error_count": 0,
    }
    assert "security_metrics" not in r.metrics
    assert "policy_metrics" not in r.metrics
    assert r.policy_violations == []


def test_reduce_extras_only_for_files() -> None:
    trace = [ToolCall("a", duration=0.5, cost=0.25), ToolCall("a", duration=1.0)]
    r = evaluate([tc("a")], trace, include_extras=True)
    assert list(r.metrics)[-2:] == ["latency_metrics", "cost_metrics"]
    assert r.metrics["latency_metrics"]["total_duration"] == 1.5
    assert r.metrics["cost_metrics"]["cost_by_tool"] == {"a": 0.25}
    trace = [ToolCall("a", duration=0.5, cost=0.25)]
    assert "latency_metrics" not in evaluate([tc("a")], trace).metrics


def test_reduce_with_no_checks() -> None:
    r = reduce(
        [],
        weights=DEFAULT_WEIGHTS,
        gold=[],
        trace_calls=None,
        trace_calls_count=0,
        findings=[],
        input_error=None,
        include_extras=True,
    )
    assert list(r.metrics) == ["efficiency_metrics"]
    assert r.score == 0.1 + 0.0


# -- the record -------------------------------------------------------------------------------


def test_to_dict_layout_and_strict_json() -> None:
    r = verbatim()
    d = r.to_dict()
    assert list(d) == [
        "schema_version",
        "score",
        "grade",
        "weights",
        "required_call_recall",
        "metrics",
        "calls",
        "gold_calls_count",
        "trace_calls_count",
    ]
    assert d["schema_version"] == "2"
    assert d["score"] == 0.6900000000000001
    assert d["weights"] == DEFAULT_WEIGHTS
    assert d["calls"]["expected"][2] == {"tool": "summarize", "args": None}
    assert d["calls"]["actual"][1] == {
        "tool": "fetch",
        "args": r.trace_calls[1].args,  # type: ignore[index]
        "result": None,
        "is_error": True,
        "error": "timeout",
        "duration": None,
        "cost": None,
    }
    assert d["calls"]["actual"][2]["error"] is None
    assert (d["gold_calls_count"], d["trace_calls_count"]) == (3, 4)
    json.dumps(d, allow_nan=False)


def test_to_dict_streamed_and_incomplete() -> None:
    err = TruncatedTrace("t.json", "the input ended inside a JSON value", offset=42)
    r = evaluate([tc("a")], [tc("a")], keep=False, input_error=err)
    d = r.to_dict()
    assert d["calls"]["actual"] == []
    assert d["trace_calls_count"] == 1
    assert d["incomplete"] == err.to_json()
    assert not r.complete
    assert r.input_error is err
    assert "incomplete" not in evaluate([tc("a")], [tc("a")]).to_dict()


def test_json_safe_leaves() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "<thing>"

    value = {
        "m": Regex("y.*"),
        "t": (1, 2.5, None, True),
        1: "int key",
        None: [math.nan, math.inf, -math.inf],
        "o": Thing(),
        "s": {1, 2},
    }
    out = json_safe(value)
    assert out == {
        "m": "Regex('y.*')",
        "t": [1, 2.5, None, True],
        "1": "int key",
        "None": ["nan", "inf", "-inf"],
        "o": "<thing>",
        "s": "{1, 2}",
    }
    json.dumps(out, allow_nan=False)


def test_call_record_is_json_safe() -> None:
    c = ToolCall(
        "t",
        {"x": (1, 2)},
        result={"ok": math.nan},
        duration=0.5,
        cost=0.1,
        metadata={"error": {"code": 1}},
    )
    assert call_record(c) == {
        "tool": "t",
        "args": {"x": [1, 2]},
        "result": {"ok": "nan"},
        "is_error": True,
        "error": {"code": 1},
        "duration": 0.5,
        "cost": 0.1,
    }
    assert call_record(ToolCall("t", metadata={"error": True}))["error"] is None


def test_matchers_in_gold_are_reprs() -> None:
    r = evaluate([tc("a", {"q": Regex("y.*")})], [tc("a", {"q": "yes"})])
    assert r.argument_f1 == 1.0
    assert r.to_dict()["calls"]["expected"] == [{"tool": "a", "args": {"q": "Regex('y.*')"}}]


# -- findings ---------------------------------------------------------------------------------


def test_behavior_findings_verbatim() -> None:
    assert verbatim().behavior_findings() == [
        ("error", "call 4 run_shell matches forbidden rule 1: destructive"),
        (
            "error",
            "call 2 fetch passes a credential (openai_api_key) in 'headers.Authorization': sk-p…cd",
        ),
        (
            "error",
            "call 3 fetch passes a credential (openai_api_key) in 'headers.Authorization': sk-p…cd",
        ),
        ("warning", "2 of 4 tool calls failed (fetch x2)"),
        ("warning", "1 call repeats a failed call with the same arguments"),
    ]


def test_behavior_findings_plural_and_tool_list() -> None:
    errors = FakeErrors(
        {"error_count": 4, "retry_after_error_count": 3},
        [("deploy", 2), ("read", 1), ("write", 1)],
    )
    policy = FakePolicy([{"index": 0, "tool": "x", "args": {}, "rule": 1, "reason": None}])
    trace = [tc("x") for _ in range(5)]
    r = evaluate([tc("x")], trace, others=[errors, policy])
    assert r.behavior_findings() == [
        ("error", "call 1 x matches forbidden rule 2"),
        ("warning", "4 of 5 tool calls failed (deploy x2, read, write)"),
        ("warning", "3 calls repeat a failed call with the same arguments"),
    ]
    assert evaluate([tc("x")], [tc("x")]).behavior_findings() == []


def test_findings_property_and_repr() -> None:
    f = Finding("errors", "failed_call", "warning", "call 1 a failed", call_index=0)
    r = EvaluationResult({}, dict(DEFAULT_WEIGHTS), [], None, 0, findings=[f])
    assert r.findings == [f]
    assert r.complete
    assert "score=" in repr(r)
    assert r.argument_f1 == 0.0 and r.sequence_accuracy == 0.0 and r.selection_accuracy == 0.0


# -- verdict ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "grade"),
    [
        (0.9, "A"),
        (0.8999999999, "B"),
        (1.5, "A"),
        (0.8, "B"),
        (0.7, "C"),
        (0.6, "D"),
        (0.59, "F"),
        (math.nan, "F"),
        (-1.0, "F"),
    ],
)
def test_letter_grade(score: float, grade: str) -> None:
    assert letter_grade(score) == grade


def test_grade_tables() -> None:
    assert GRADE_BANDS == ((0.9, "A"), (0.8, "B"), (0.7, "C"), (0.6, "D"))
    assert GRADE_ORDER == ("A", "B", "C", "D", "F")
    assert [verdict_word(s) for s in (0.95, 0.9, 0.75, 0.69)] == ["PASS", "PASS", "WARN", "FAIL"]


def test_fail_under() -> None:
    assert parse_fail_under("0.8") == 0.8
    assert parse_fail_under(" 1 ") == 1.0
    assert parse_fail_under("b") == "B"
    for bad in ("E", "1.5", "-0.1", "nan", "x", ""):
        with pytest.raises(ValueError):
            parse_fail_under(bad)
    assert grade_at_least("A", "C")
    assert grade_at_least("C", "C")
    assert not grade_at_least("D", "C")
    with pytest.raises(ValueError):
        grade_at_least("E", "A")
    assert passes(0.85, "B") and not passes(0.79, "B")
    assert passes(0.8, 0.8) and not passes(math.nan, 0.0)
