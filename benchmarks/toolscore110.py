"""A timing model of Toolscore 1.10's ``evaluate()``, for the datasets benchmark only.

Toolscore 1.10 is not installable here, yet issue 12 asks for a speed-up over its
``evaluate()`` loop. The issue measured that loop on tau-bench (6.4 calls a trace) at 1.19x
this package's loop of the time (commit c115bff); the benchmark's traces are another shape (30
calls a trace over 8 tools), and the reference (section 16.2) says 1.10's costs grow with a
trace otherwise than c115bff's: an exact pairing whose work is exponential in a tool's trace
calls, up to 12; every pair of calls of a tool weighed; two JSON dumps a call.

This module does what ``../shared/reference/toolscore-1.10-behavior.md`` says 1.10's
``evaluate(expected, actual)`` does, in the plain way the reference describes it: the same
metrics in the same order (sections 2.4 and 3), the same data handling (1.2), the same
pairing (3.7: a memoized recursion over gold positions and a bitmask of used trace calls up to
12 trace calls of a tool, greedy above), the same credential scan (9), the same score (4).
``tests/test_model110.py`` checks its scores against this package's ``evaluate()``.

It is a model, not 1.10. ``python benchmarks/toolscore110.py`` times it on the reference's
measured cases of 1.10 (section 16.2) and, where ``../shared/corpus`` is, loops over
tau-bench with it and with this package's ``evaluate()``; ``benchmarks/datasets.py
--model-110`` times its loop over a dataset.

Not part of the package; needs ``Levenshtein`` (RapidFuzz's C code, as 1.10 used).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import Levenshtein

DEFAULT_WEIGHTS = {
    "selection_accuracy": 0.4,
    "argument_f1": 0.3,
    "sequence_accuracy": 0.2,
    "redundant_rate": 0.1,
    "required_call_recall": 0.0,
}
GRADE_BANDS = ((0.9, "A"), (0.8, "B"), (0.7, "C"), (0.6, "D"))
EXACT_PAIRING_LIMIT = 12

SECRET_PATTERNS = [
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
        ("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
        ("openai_api_key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}"),
        ("openai_api_key", r"\bsk-[A-Za-z0-9]{32,}"),
        ("github_token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b"),
        ("github_token", r"\bgithub_pat_[A-Za-z0-9_]{60,}"),
        ("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
        ("slack_token", r"\bxox[abprs]-[0-9A-Za-z-]{10,}"),
        ("stripe_secret_key", r"\b(?:sk|rk)_live_[0-9A-Za-z]{24,}"),
    )
]
_RANDOM_LOOKING = {"anthropic_api_key", "openai_api_key"}


@dataclass
class ToolCall:
    tool: str
    args: Any = None
    result: Any = None
    timestamp: float | None = None
    duration: float | None = None
    cost: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.tool:
            raise ValueError("Tool name cannot be empty")

    @property
    def is_error(self) -> bool:
        if self.metadata.get("is_error") is True:
            return True
        error = self.metadata.get("error")
        return bool(error) and error is not False


def _call_metadata(item: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if isinstance(item.get("metadata"), dict):
        metadata.update(item["metadata"])
    if item.get("id") is not None:
        metadata["id"] = item["id"]
    error = item.get("error")
    if isinstance(error, bool):
        metadata["is_error"] = error
    elif error:
        metadata["error"] = str(error)
        metadata["is_error"] = True
    if isinstance(item.get("is_error"), bool):
        metadata["is_error"] = item["is_error"]
    return metadata


def _dicts_to_tool_calls(items: list[Any]) -> list[ToolCall]:
    calls = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"Item at index {i} is not a dict")
        if not item.get("tool"):
            raise ValueError(f"Item at index {i} is missing 'tool' key")
        calls.append(
            ToolCall(
                tool=item["tool"],
                args=item.get("args"),
                result=item.get("result"),
                timestamp=item.get("timestamp"),
                duration=item.get("duration"),
                cost=item.get("cost"),
                metadata=_call_metadata(item),
            )
        )
    return calls


def compare_values(expected: Any, actual: Any, strict: bool = False) -> bool:
    if strict:
        return _strict_equal(expected, actual)
    if expected == actual:
        return True
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip() == actual.strip()
    return False


def _strict_equal(expected: Any, actual: Any) -> bool:
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, dict):
        return expected.keys() == actual.keys() and all(
            _strict_equal(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return len(expected) == len(actual) and all(
            _strict_equal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    return bool(expected == actual)


# -- metrics (section 3), in evaluate()'s order -------------------------------------------------


def invocation_accuracy(gold: list[ToolCall], trace: list[ToolCall]) -> float:
    if not gold and not trace:
        return 1.0
    if not gold or not trace:
        return 0.0
    expected, called = {g.tool for g in gold}, {t.tool for t in trace}
    correct = len(expected & called)
    penalty = len(called - expected) + len(expected - called)
    return min(1.0, max(0.0, (correct - 0.5 * penalty) / len(expected)))


def selection_accuracy(gold: list[ToolCall], trace: list[ToolCall]) -> float:
    if not trace:
        return 1.0 if not gold else 0.0
    if not gold:
        return 0.0
    expected = {g.tool for g in gold}
    return sum(1 for t in trace if t.tool in expected) / len(trace)


def tool_correctness(gold: list[ToolCall], trace: list[ToolCall]) -> dict[str, Any]:
    called = {t.tool for t in trace}
    if not gold:
        return {
            "tool_correctness": 1.0 if not trace else 0.0,
            "expected_tools": [],
            "called_tools": sorted(called),
            "missing_tools": [],
            "extra_tools": sorted(called),
            "correct_count": 0,
            "total_expected": 0,
        }
    expected = {g.tool for g in gold}
    correct = expected & called
    return {
        "tool_correctness": len(correct) / len(expected),
        "expected_tools": sorted(expected),
        "called_tools": sorted(called),
        "missing_tools": sorted(expected - called),
        "extra_tools": sorted(called - expected),
        "correct_count": len(correct),
        "total_expected": len(expected),
        "strict_order": False,
    }


def sequence_metrics(gold: list[ToolCall], trace: list[ToolCall]) -> dict[str, Any]:
    names_g, names_t = [g.tool for g in gold], [t.tool for t in trace]
    if not names_g and not names_t:
        return {"edit_distance": 0.0, "normalized_distance": 0.0, "sequence_accuracy": 1.0}
    d = Levenshtein.distance(names_g, names_t)
    normalized = d / max(len(names_g), len(names_t), 1)
    return {
        "edit_distance": float(d),
        "normalized_distance": normalized,
        "sequence_accuracy": 1.0 - normalized,
    }


def trajectory_metrics(gold: list[ToolCall], trace: list[ToolCall]) -> dict[str, Any]:
    if not gold:
        value = 1.0 if not trace else 0.0
        return {
            "trajectory_accuracy": value,
            "step_match_rate": value,
            "path_efficiency": 1.0,
            "correct_steps": 0,
            "total_expected_steps": 0,
            "trajectory_details": [],
        }
    details: list[dict[str, Any]] = []
    if not trace:
        for i, g in enumerate(gold):
            details.append(
                {
                    "step": i + 1,
                    "expected_tool": g.tool,
                    "actual_tool": None,
                    "matches": False,
                    "expected_args": g.args or {},
                    "actual_args": {},
                    "error": "Agent did not execute this step",
                }
            )
        return {
            "trajectory_accuracy": 0.0,
            "step_match_rate": 0.0,
            "path_efficiency": 0.0,
            "correct_steps": 0,
            "total_expected_steps": len(gold),
            "trajectory_details": details,
        }
    correct = 0
    for i in range(min(len(gold), len(trace))):
        g, t = gold[i], trace[i]
        matches = g.tool == t.tool
        if matches and g.args is not None:
            actual = t.args or {}
            for key, value in (g.args or {}).items():
                if key not in actual or value != actual[key]:
                    matches = False
                    break
        correct += matches
        details.append(
            {
                "step": i + 1,
                "expected_tool": g.tool,
                "actual_tool": t.tool,
                "matches": matches,
                "expected_args": g.args or {},
                "actual_args": t.args or {},
            }
        )
    for i in range(len(trace), len(gold)):
        details.append(
            {
                "step": i + 1,
                "expected_tool": gold[i].tool,
                "actual_tool": None,
                "matches": False,
                "expected_args": gold[i].args or {},
                "actual_args": {},
                "error": "Agent stopped early - step not executed",
            }
        )
    for i in range(len(gold), len(trace)):
        details.append(
            {
                "step": i + 1,
                "expected_tool": None,
                "actual_tool": trace[i].tool,
                "matches": False,
                "expected_args": {},
                "actual_args": trace[i].args or {},
                "error": "Unnecessary step - not in expected path",
            }
        )
    step_match_rate = correct / len(gold)
    path_efficiency = len(gold) / len(trace) if len(trace) > len(gold) else 1.0
    return {
        "trajectory_accuracy": step_match_rate * path_efficiency,
        "step_match_rate": step_match_rate,
        "path_efficiency": path_efficiency,
        "correct_steps": correct,
        "total_expected_steps": len(gold),
        "trajectory_details": details,
    }


def _weight(gold: ToolCall, call: ToolCall, strict: bool) -> int:
    if gold.args is None:
        return 0
    actual = call.args or {}
    return sum(
        1
        for key, value in gold.args.items()
        if key in actual and compare_values(value, actual[key], strict)
    )


def best_pairing(gold: list[ToolCall], trace: list[ToolCall], strict: bool) -> dict[int, int]:
    """Gold position -> trace position (section 3.7, step 2)."""
    pairs: dict[int, int] = {}
    for name in dict.fromkeys(g.tool for g in gold):
        gold_idx = [i for i, g in enumerate(gold) if g.tool == name]
        trace_idx = [j for j, t in enumerate(trace) if t.tool == name]
        if not trace_idx:
            continue
        weights = {(i, j): _weight(gold[i], trace[j], strict) for i in gold_idx for j in trace_idx}
        if len(trace_idx) <= EXACT_PAIRING_LIMIT:
            pairs.update(_exact_pairing(gold_idx, trace_idx, weights))
        else:
            free = list(trace_idx)
            for i in gold_idx:
                if not free:
                    break
                chosen = max(free, key=lambda j, i=i: (weights[(i, j)], -j))
                pairs[i] = chosen
                free.remove(chosen)
    return pairs


Chosen = tuple[int, int, tuple[tuple[int, int], ...]]
"""``(pairs, total weight, the pairs)`` of a pairing."""


def _exact_pairing(
    gold_idx: list[int], trace_idx: list[int], weights: dict[tuple[int, int], int]
) -> dict[int, int]:
    """The memoized recursion over gold positions with a bitmask of used trace calls: at
    each gold call, "skip" first, then each unused trace call in index order, a candidate
    replacing the best so far only when (pairs, weight) is strictly greater."""
    memo: dict[tuple[int, int], Chosen] = {}

    def best(k: int, used: int) -> Chosen:
        key = (k, used)
        found = memo.get(key)
        if found is not None:
            return found
        if k == len(gold_idx):
            result: Chosen = (0, 0, ())
        else:
            result = best(k + 1, used)  # skip this gold call
            i = gold_idx[k]
            for b, j in enumerate(trace_idx):
                if used & (1 << b):
                    continue
                sub = best(k + 1, used | (1 << b))
                candidate = (sub[0] + 1, sub[1] + weights[(i, j)], ((i, j), *sub[2]))
                if (candidate[0], candidate[1]) > (result[0], result[1]):
                    result = candidate
        memo[key] = result
        return result

    return dict(best(0, 0)[2])


def argument_metrics(gold: list[ToolCall], trace: list[ToolCall], strict: bool) -> dict[str, Any]:
    if not gold and not trace:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    if not gold or not trace:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    pairs = best_pairing(gold, trace, strict)
    correct = expected = actual = vacuous = 0
    for i, g in enumerate(gold):
        j = pairs.get(i)
        if g.args is None:
            if j is not None:
                vacuous += 1
            continue
        if j is None:
            expected += len(g.args)
            continue
        call_args = trace[j].args or {}
        correct += sum(
            1
            for key, value in g.args.items()
            if key in call_args and compare_values(value, call_args[key], strict)
        )
        expected += len(g.args)
        actual += len(call_args)
        if not g.args and not call_args:
            vacuous += 1
    if expected == 0 and actual == 0 and vacuous > 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    precision = correct / actual if actual else 0.0
    recall = correct / expected if expected else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _signature(call: ToolCall) -> tuple[str, str]:
    return (call.tool, json.dumps(call.args or {}, sort_keys=True, default=str))


def efficiency_metrics(gold: list[ToolCall], trace: list[ToolCall]) -> dict[str, Any]:
    n = len(trace)
    if not n:
        return {
            "redundant_count": 0,
            "total_calls": 0,
            "redundant_rate": 0.0,
            "identical_count": 0,
            "identical_rate": 0.0,
            "error_count": 0,
            "error_rate": 0.0,
            "retry_after_error_count": 0,
        }
    gold_counts = Counter(g.tool for g in gold)
    redundant = sum(
        max(0, count - gold_counts.get(tool, 0))
        for tool, count in Counter(t.tool for t in trace).items()
    )
    identical = n - len({_signature(t) for t in trace})
    errors = sum(1 for t in trace if t.is_error)
    retries = sum(
        1
        for prev, call in pairwise(trace)
        if prev.is_error and _signature(prev) == _signature(call)
    )
    return {
        "redundant_count": redundant,
        "total_calls": n,
        "redundant_rate": redundant / n,
        "identical_count": identical,
        "identical_rate": identical / n,
        "error_count": errors,
        "error_rate": errors / n,
        "retry_after_error_count": retries,
    }


def required_call_recall(gold: list[ToolCall], trace: list[ToolCall]) -> float | None:
    if not gold:
        return None
    ok = Counter(t.tool for t in trace if not t.is_error)
    return sum(min(n, ok.get(tool, 0)) for tool, n in Counter(g.tool for g in gold).items()) / len(
        gold
    )


def _strings(value: Any, path: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    out: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _strings(item, f"{path}[{i}]")
    return out


def _preview(kind: str, text: str) -> str:
    if kind == "private_key":
        return "-----BEGIN \u2026 PRIVATE KEY-----"
    return f"{text[:4]}\u2026{text[-2:]}"


def find_secrets(trace: list[ToolCall]) -> dict[str, Any]:
    secrets = []
    for index, call in enumerate(trace):
        for path, text in _strings(call.args or {}, ""):
            claimed: list[tuple[int, int]] = []
            for kind, pattern in SECRET_PATTERNS:
                for m in pattern.finditer(text):
                    start, end = m.span()
                    if any(start < e and s < end for s, e in claimed):
                        continue
                    found = m.group(0)
                    if kind in _RANDOM_LOOKING and not (
                        any(c.isdigit() for c in found)
                        and any(c.islower() for c in found)
                        and any(c.isupper() for c in found)
                    ):
                        continue
                    claimed.append((start, end))
                    secrets.append(
                        {
                            "index": index,
                            "tool": call.tool,
                            "path": path,
                            "kind": kind,
                            "preview": _preview(kind, found),
                        }
                    )
    return {"secret_count": len(secrets), "secrets": secrets}


@dataclass
class EvaluationResult:
    metrics: dict[str, Any]
    gold_calls: list[ToolCall]
    trace_calls: list[ToolCall]
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))

    @property
    def score(self) -> float:
        w = self.weights
        m = self.metrics
        recall = m.get("required_call_recall")
        return (
            w["selection_accuracy"] * m.get("selection_accuracy", 0.0)
            + w["argument_f1"] * m["argument_metrics"]["f1"]
            + w["sequence_accuracy"] * m["sequence_metrics"]["sequence_accuracy"]
            + w["redundant_rate"] * (1 - m["efficiency_metrics"].get("redundant_rate", 0.0))
            + w["required_call_recall"] * (1.0 if recall is None else recall)
        )

    @property
    def grade(self) -> str:
        for threshold, letter in GRADE_BANDS:
            if self.score >= threshold:
                return letter
        return "F"


def evaluate(expected: list[Any], actual: list[Any], *, strict: bool = False) -> EvaluationResult:
    """``evaluate(expected, actual)`` as section 2.4 has it (a list of call dicts as
    ``actual``: ``auto_extract`` returns it unchanged)."""
    if not isinstance(expected, list):
        raise TypeError(f"expected must be a list of dicts, got {type(expected).__name__}")
    gold = _dicts_to_tool_calls(expected)
    trace = _dicts_to_tool_calls(actual)
    metrics = {
        "invocation_accuracy": invocation_accuracy(gold, trace),
        "selection_accuracy": selection_accuracy(gold, trace),
        "tool_correctness_metrics": tool_correctness(gold, trace),
        "sequence_metrics": sequence_metrics(gold, trace),
        "trajectory_metrics": trajectory_metrics(gold, trace),
        "argument_metrics": argument_metrics(gold, trace, strict),
        "efficiency_metrics": efficiency_metrics(gold, trace),
        "required_call_recall": required_call_recall(gold, trace),
        "security_metrics": find_secrets(trace),
    }
    return EvaluationResult(metrics, gold, trace)


# -- python benchmarks/toolscore110.py: the model against the reference's timings of 1.10 ------


def _pairing_case(gold_calls: int, trace_calls: int, tools: int, greedy_values: int) -> float:
    """Seconds for :func:`best_pairing` of ``gold_calls`` and ``trace_calls`` calls spread
    over ``tools`` names (args ``{"x": i % greedy_values, "y": "a"}``)."""
    gold = [
        ToolCall(f"t{i % tools}", {"x": i % greedy_values, "y": "a"}) for i in range(gold_calls)
    ]
    trace = [
        ToolCall(f"t{i % tools}", {"x": i % greedy_values, "y": "a"}) for i in range(trace_calls)
    ]
    start = time.perf_counter()
    best_pairing(gold, trace, False)
    return time.perf_counter() - start


def _loop(evaluate_fn: Any, items: list[tuple[list[Any], list[Any]]], rounds: int) -> float:
    """Traces a second of ``evaluate_fn`` over ``items``, ``rounds`` times (after one)."""
    for gold, calls in items:
        evaluate_fn(gold, calls)
    start = time.perf_counter()
    for _ in range(rounds):
        for gold, calls in items:
            evaluate_fn(gold, calls).score  # noqa: B018 (the score is what a loop reads)
    return len(items) * rounds / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The 1.10 model against 1.10's timings.")
    here = Path(__file__).resolve().parent
    parser.add_argument("--corpus", default=str(here.parent.parent / "shared" / "corpus"))
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    names = _pairing_case(5_000, 5_000, 5_000, 1)
    print("| case (reference section 16.2) | model s | 1.10 s (reference) |")
    print("|---|---|---|")
    print(
        f"| exact pairing, 200 gold x 12 trace calls of one tool | "
        f"{_pairing_case(200, 12, 1, 1_000):.1f} | 11.8 |"
    )
    print(
        f"| greedy pairing, 2,000 x 2,000 calls of one tool | "
        f"{_pairing_case(2_000, 2_000, 1, 50):.1f} | 81 |"
    )
    print(
        f"| 20,000 tool names, 20,000 calls each side (from 5,000 x 16: the name scan is "
        f"quadratic) | {names * 16:.1f} | 100 |"
    )
    corpus = Path(args.corpus)
    if (corpus / "tau-bench-airline.jsonl").exists():
        from toolscore import evaluate as this_evaluate

        gold = {}
        for line in (corpus / "tau-bench-airline.gold.jsonl").read_bytes().splitlines():
            item = json.loads(line)
            gold[item["trace_id"]] = item["expected"]
        traces: dict[str, list[Any]] = {}
        for line in (corpus / "tau-bench-airline.jsonl").read_bytes().splitlines():
            item = json.loads(line)
            traces.setdefault(item["trace_id"], []).append(item)
        items = [(gold[t], calls) for t, calls in traces.items() if t in gold]
        model = _loop(evaluate, items, args.rounds)
        this = _loop(this_evaluate, items, args.rounds)
        print(
            f"tau-bench, {len(items)} traces x {args.rounds} rounds in memory: the model "
            f"{model:,.0f} traces/s, this package's evaluate() {this:,.0f} "
            f"({model / this:.2f}x; the issue: 1.10 at 810/680 = 1.19x c115bff's)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
