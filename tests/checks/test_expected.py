from __future__ import annotations

import functools
import heapq
import itertools
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import Batch, ToolCall
from toolscore.checks.expected import (
    BIT_PARALLEL_MIN_GOLD,
    MAX_TAIL_DETAILS,
    BitParallelDistance,
    ColumnDistance,
    ExpectedCheck,
    distance_tracker,
    expected_check,
)
from toolscore.checks.expected import pairing as pairing_mod
from toolscore.checks.expected import sequence as sequence_mod
from toolscore.matchers import ANY, compare_values

# -- helpers --------------------------------------------------------------------------------


def call(tool: str, args: Any = None, *, error: bool = False, **fields: Any) -> ToolCall:
    metadata = {"is_error": True} if error else {}
    return ToolCall(tool=tool, args=args, metadata=metadata, **fields)


def numbered(calls: list[ToolCall]) -> list[ToolCall]:
    for i, c in enumerate(calls):
        c.index = i
    return calls


def run(
    gold: list[ToolCall],
    trace: list[ToolCall],
    *,
    strict: bool = False,
    keep_details: bool = False,
    sizes: list[int] | None = None,
) -> ExpectedCheck:
    """Feed ``trace`` (in one batch, or in batches of ``sizes``) and finish."""
    check = expected_check(gold, strict=strict, keep_details=keep_details)
    trace = numbered(trace)
    if sizes is None:
        check.feed(Batch(calls=trace, done=trace))
    else:
        start = 0
        for size in sizes:
            chunk = trace[start : start + size]
            check.feed(Batch(calls=chunk, done=chunk))
            start += size
        rest = trace[start:]
        check.feed(Batch(calls=rest, done=rest))
    assert check.finish() == []
    return check


def metrics(gold: list[ToolCall], trace: list[ToolCall], **kw: Any) -> dict[str, Any]:
    return run(gold, trace, **kw).metrics()


# -- a reference implementation of Toolscore 1.10's metrics (whole lists, no streaming) ----


def ref_levenshtein(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def ref_match(gold_args: Any, trace_args: Any, strict: bool) -> tuple[int, int, int]:
    g = gold_args or {}
    t = trace_args or {}
    correct = sum(1 for k, v in g.items() if k in t and compare_values(v, t[k], strict=strict))
    return correct, len(g), len(t)


def ref_exact(
    gi: list[int], tj: list[int], weight: dict[tuple[int, int], int]
) -> tuple[tuple[int, int], ...]:
    """Toolscore's exact search over one tool: golds in order; at each, "skip" first, then the
    unused trace calls in index order; a choice replaces the best only when its (pairs,
    weight) is greater."""

    @functools.cache
    def solve(p: int, used: int) -> tuple[tuple[int, int], tuple[tuple[int, int], ...]]:
        if p == len(gi):
            return (0, 0), ()
        best = solve(p + 1, used)
        for bit, j in enumerate(tj):
            if used >> bit & 1:
                continue
            (pairs, total), rest = solve(p + 1, used | (1 << bit))
            option = ((pairs + 1, total + weight[(gi[p], j)]), ((gi[p], j), *rest))
            if option[0] > best[0]:
                best = option
        return best

    return solve(0, 0)[1]


def ref_pairing(gold: list[ToolCall], trace: list[ToolCall], strict: bool) -> dict[int, int]:
    pairing: dict[int, int] = {}
    for tool in dict.fromkeys(g.tool for g in gold):
        gi = [i for i, g in enumerate(gold) if g.tool == tool]
        tj = [j for j, t in enumerate(trace) if t.tool == tool]
        if not tj:
            continue
        weight = {
            (i, j): 0 if gold[i].args is None else ref_match(gold[i].args, trace[j].args, strict)[0]
            for i in gi
            for j in tj
        }
        pairing.update(ref_exact(gi, tj, weight))
    return pairing


def ref_arguments(gold: list[ToolCall], trace: list[ToolCall], strict: bool) -> dict[str, float]:
    if not gold and not trace:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    if not gold or not trace:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    pairing = ref_pairing(gold, trace, strict)
    correct = expected = actual = vacuous = 0
    for i, g in enumerate(gold):
        j = pairing.get(i)
        if g.args is None:
            vacuous += j is not None
            continue
        if j is None:
            expected += len(g.args)
            continue
        c, e, a = ref_match(g.args, trace[j].args, strict)
        correct, expected, actual = correct + c, expected + e, actual + a
        vacuous += e == 0 and a == 0
    if expected == 0 and actual == 0 and vacuous > 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    p = correct / actual if actual else 0.0
    r = correct / expected if expected else 0.0
    f1 = 2 * (p * r) / (p + r) if p + r > 0 else 0.0
    return {"precision": p, "recall": r, "f1": f1}


def ref_step(g: ToolCall, t: ToolCall) -> bool:
    if g.tool != t.tool:
        return False
    targs = t.args or {}
    return all(k in targs and not (v != targs[k]) for k, v in (g.args or {}).items())


def ref_trajectory(gold: list[ToolCall], trace: list[ToolCall]) -> dict[str, Any]:
    n, m = len(gold), len(trace)

    def missing(i: int, error: str) -> dict[str, Any]:
        return {
            "step": i + 1,
            "expected_tool": gold[i].tool,
            "actual_tool": None,
            "matches": False,
            "expected_args": gold[i].args or {},
            "actual_args": {},
            "error": error,
        }

    if not n:
        v = 1.0 if not m else 0.0
        return {
            "trajectory_accuracy": v,
            "step_match_rate": v,
            "path_efficiency": 1.0,
            "correct_steps": 0,
            "total_expected_steps": 0,
            "trajectory_details": [],
        }
    if not m:
        return {
            "trajectory_accuracy": 0.0,
            "step_match_rate": 0.0,
            "path_efficiency": 0.0,
            "correct_steps": 0,
            "total_expected_steps": n,
            "trajectory_details": [missing(i, "Agent did not execute this step") for i in range(n)],
        }
    details = []
    correct = 0
    for i in range(min(n, m)):
        ok = ref_step(gold[i], trace[i])
        correct += ok
        details.append(
            {
                "step": i + 1,
                "expected_tool": gold[i].tool,
                "actual_tool": trace[i].tool,
                "matches": ok,
                "expected_args": gold[i].args or {},
                "actual_args": trace[i].args or {},
            }
        )
    details += [missing(i, "Agent stopped early - step not executed") for i in range(m, n)]
    details += [
        {
            "step": i + 1,
            "expected_tool": None,
            "actual_tool": trace[i].tool,
            "matches": False,
            "expected_args": {},
            "actual_args": trace[i].args or {},
            "error": "Unnecessary step - not in expected path",
        }
        for i in range(n, m)
    ]
    rate = correct / n
    eff = n / m if m > n else 1.0
    return {
        "trajectory_accuracy": rate * eff,
        "step_match_rate": rate,
        "path_efficiency": eff,
        "correct_steps": correct,
        "total_expected_steps": n,
        "trajectory_details": details,
    }


def ref_metrics(gold: list[ToolCall], trace: list[ToolCall], strict: bool = False) -> dict:
    gn = [g.tool for g in gold]
    tn = [t.tool for t in trace]
    sg, stt = set(gn), set(tn)
    if not gold and not trace:
        inv = 1.0
    elif not gold or not trace:
        inv = 0.0
    else:
        pen = len(stt - sg) + len(sg - stt)
        inv = min(1.0, max(0.0, (len(sg & stt) - pen * 0.5) / len(sg)))
    if not trace:
        sel = 1.0 if not gold else 0.0
    elif not gold:
        sel = 0.0
    else:
        sel = sum(1 for t in tn if t in sg) / len(tn)
    if not gold:
        tc: dict[str, Any] = {
            "tool_correctness": 1.0 if not trace else 0.0,
            "expected_tools": [],
            "called_tools": sorted(stt),
            "missing_tools": [],
            "extra_tools": sorted(stt),
            "correct_count": 0,
            "total_expected": 0,
        }
    else:
        tc = {
            "tool_correctness": len(sg & stt) / len(sg),
            "expected_tools": sorted(sg),
            "called_tools": sorted(stt),
            "missing_tools": sorted(sg - stt),
            "extra_tools": sorted(stt - sg),
            "correct_count": len(sg & stt),
            "total_expected": len(sg),
            "strict_order": False,
        }
    d = ref_levenshtein(gn, tn)
    nd = d / max(len(gn), len(tn), 1)
    if trace:
        red = sum(max(0, tn.count(t) - gn.count(t)) for t in stt)
        eff = {"redundant_count": red, "total_calls": len(tn), "redundant_rate": red / len(tn)}
    else:
        eff = {"redundant_count": 0, "total_calls": 0, "redundant_rate": 0.0}
    if gold:
        ok = [t.tool for t in trace if not t.is_error]
        rcr: float | None = sum(min(gn.count(t), ok.count(t)) for t in sg) / len(gold)
    else:
        rcr = None
    return {
        "invocation_accuracy": inv,
        "selection_accuracy": sel,
        "tool_correctness_metrics": tc,
        "sequence_metrics": {
            "edit_distance": float(d),
            "normalized_distance": nd,
            "sequence_accuracy": 1.0 - nd,
        },
        "trajectory_metrics": ref_trajectory(gold, trace),
        "argument_metrics": ref_arguments(gold, trace, strict),
        "efficiency_metrics": eff,
        "required_call_recall": rcr,
    }


# -- strategies -----------------------------------------------------------------------------

TOOLS = ["a", "b", "c"]
VALUES = [
    1,
    1.0,
    2,
    2**53,
    2**53 + 1,
    -(2**53) - 1,
    "1",
    " v",
    "v",
    "v\n",
    "xv",
    "",
    True,
    None,
    [1],
    {"k": 1},
]


def arg_dicts(keys: list[str] = ["x", "y", "z"]) -> st.SearchStrategy[dict[str, Any]]:  # noqa: B006
    return st.dictionaries(st.sampled_from(keys), st.sampled_from(VALUES), max_size=3)


@st.composite
def calls_strategy(draw: st.DrawFn, max_size: int, tools: list[str] = TOOLS) -> list[ToolCall]:
    n = draw(st.integers(0, max_size))
    out = []
    for _ in range(n):
        tool = draw(st.sampled_from(tools))
        args = draw(st.one_of(st.none(), arg_dicts()))
        out.append(call(tool, args, error=draw(st.booleans())))
    return out


def copies(calls: list[ToolCall]) -> list[ToolCall]:
    return [ToolCall(c.tool, c.args, metadata=dict(c.metadata)) for c in calls]


# -- worked examples from the reference -----------------------------------------------------


def verbatim_run() -> tuple[list[ToolCall], list[ToolCall]]:
    headers = {"Authorization": "Bearer sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"}
    gold = [
        call("search", {"q": "weather NYC"}),
        call("fetch", {"url": "https://api.example.com/w"}),
        call("summarize"),
    ]
    trace = [
        call("search", {"q": "weather NYC"}),
        ToolCall(
            "fetch",
            {"url": "https://api.example.com/w", "headers": headers},
            metadata={"error": "timeout", "is_error": True},
        ),
        call("fetch", {"url": "https://api.example.com/w", "headers": headers}, error=True),
        call("run_shell", {"command": ["rm", "-rf", "/tmp/x"]}),
    ]
    return gold, trace


def test_verbatim_run_numbers() -> None:
    gold, trace = verbatim_run()
    m = metrics(gold, trace)
    assert m["selection_accuracy"] == 0.75
    assert m["argument_metrics"]["precision"] == 2 / 3
    assert m["argument_metrics"]["recall"] == 1.0
    assert m["argument_metrics"]["f1"] == pytest.approx(0.8, abs=1e-12)
    assert m["sequence_metrics"] == {
        "edit_distance": 2.0,
        "normalized_distance": 0.5,
        "sequence_accuracy": 0.5,
    }
    assert m["efficiency_metrics"] == {
        "redundant_count": 2,
        "total_calls": 4,
        "redundant_rate": 0.5,
    }
    assert m["required_call_recall"] == 1 / 3
    assert m["invocation_accuracy"] == (2 - 0.5 * 2) / 3
    assert list(m) == [
        "invocation_accuracy",
        "selection_accuracy",
        "tool_correctness_metrics",
        "sequence_metrics",
        "trajectory_metrics",
        "argument_metrics",
        "efficiency_metrics",
        "required_call_recall",
    ]
    assert m == ref_metrics(gold, trace)


def test_invocation_example() -> None:
    gold = [call("search"), call("fetch"), call("summarize")]
    trace = [call("search"), call("fetch"), call("run_shell")]
    assert metrics(gold, trace)["invocation_accuracy"] == pytest.approx(1 / 3, abs=1e-12)


@pytest.mark.parametrize(
    ("gold", "trace", "distance", "accuracy"),
    [
        (["ab", "c"], ["a", "bc"], 2, 0.0),
        (["a", "b"], ["b", "a"], 2, 0.0),
        (["a", "b", "c"], ["a", "c", "b"], 2, 0.33333333333333337),
        ([], [], 0, 1.0),
        (["a"], [], 1, 0.0),
        ([], ["a", "b"], 2, 0.0),
    ],
)
def test_sequence_examples(
    gold: list[str], trace: list[str], distance: int, accuracy: float
) -> None:
    m = metrics([call(n) for n in gold], [call(n) for n in trace])["sequence_metrics"]
    assert m["edit_distance"] == float(distance)
    assert m["sequence_accuracy"] == accuracy


def test_tie_goes_to_later_gold() -> None:
    check = run([call("a", {"x": 1}), call("a", {"x": 1})], [call("a", {"x": 1})])
    assert check.pairing() == {1: 0}


def test_tie_between_trace_calls_changes_precision() -> None:
    gold = [call("a", {"x": 1})]
    forward = metrics(gold, [call("a", {"x": 1, "y": 2}), call("a", {"x": 1})])
    assert forward["argument_metrics"]["precision"] == 0.5
    reverse = metrics(gold, [call("a", {"x": 1}), call("a", {"x": 1, "y": 2})])
    assert reverse["argument_metrics"]["precision"] == 1.0


def test_more_than_twelve_trace_calls_is_optimal() -> None:
    # Toolscore's greedy path gives F1 0.9333 here; the optimum is 1.0.
    others = [{"z": i} for i in range(12)]
    gold = [call("a", {"x": 1}), call("a", {"x": 1, "y": 1})] + [call("a", o) for o in others]
    trace = [call("a", {"x": 1, "y": 1}), call("a", {"x": 1})] + [call("a", o) for o in others]
    m = metrics(gold, trace)["argument_metrics"]
    assert m == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


@pytest.mark.parametrize(
    ("gold", "trace", "expected"),
    [
        ([call("a", {})], [call("a", {"x": 1})], 0.0),
        ([call("a", None)], [call("b", {"x": 1})], 0.0),
        ([call("a", {"x": ANY})], [call("a", {"y": 1})], 0.0),
        ([call("a", {"x": ANY})], [call("a", {"x": None})], 1.0),
        ([call("a", None), call("b", None)], [call("a", {"q": 1}), call("b")], 1.0),
        ([call("a", {})], [call("a", {})], 1.0),
        ([call("a", {"c": "NYC"})], [call("a", {"c": " NYC "})], 1.0),
        ([call("a", {"c": {"n": "NYC"}})], [call("a", {"c": {"n": " NYC"}})], 0.0),
    ],
)
def test_argument_consequences(
    gold: list[ToolCall], trace: list[ToolCall], expected: float
) -> None:
    assert metrics(gold, trace)["argument_metrics"]["f1"] == expected


def test_strict_mode_types() -> None:
    gold = [call("a", {"n": 1})]
    assert metrics(gold, [call("a", {"n": 1.0})])["argument_metrics"]["f1"] == 1.0
    assert metrics(gold, [call("a", {"n": 1.0})], strict=True)["argument_metrics"]["f1"] == 0.0


def test_trajectory_treats_empty_gold_args_as_anything() -> None:
    m = metrics([call("a", {})], [call("a", {"x": 1})])["trajectory_metrics"]
    assert m["correct_steps"] == 1
    assert m["trajectory_accuracy"] == 1.0


def test_trajectory_empty_trace_and_empty_gold() -> None:
    m = metrics([call("a", {"x": 1}), call("b")], [])["trajectory_metrics"]
    assert m["path_efficiency"] == 0.0
    assert [d["error"] for d in m["trajectory_details"]] == ["Agent did not execute this step"] * 2
    assert m["trajectory_details"][1]["expected_args"] == {}
    m = metrics([], [call("a")])["trajectory_metrics"]
    assert (m["trajectory_accuracy"], m["path_efficiency"], m["trajectory_details"]) == (
        0.0,
        1.0,
        [],
    )


def test_trajectory_stopped_early_and_tail() -> None:
    gold = [call("a", {"x": 1}), call("b"), call("c")]
    m = metrics(gold, [call("a", {"x": 1, "y": 2})])["trajectory_metrics"]
    assert m["correct_steps"] == 1
    assert [d.get("error") for d in m["trajectory_details"]] == [
        None,
        "Agent stopped early - step not executed",
        "Agent stopped early - step not executed",
    ]
    m = metrics(gold[:1], [call("a", {"x": 1}), call("z", [1, 2])])["trajectory_metrics"]
    assert m["path_efficiency"] == 0.5
    assert m["trajectory_details"][1]["actual_args"] == [1, 2]


def test_trajectory_tail_is_capped_unless_keep_details() -> None:
    gold = [call("a")]
    trace = [call("a")] + [call("b") for _ in range(MAX_TAIL_DETAILS + 499)]
    m = metrics(gold, trace)["trajectory_metrics"]
    assert len(m["trajectory_details"]) == 1 + MAX_TAIL_DETAILS
    assert m["trajectory_details"][-1]["step"] == 1 + MAX_TAIL_DETAILS
    assert m["trajectory_details_omitted"] == 499
    m = metrics(gold, copies(trace), keep_details=True)["trajectory_metrics"]
    assert len(m["trajectory_details"]) == len(trace)
    assert "trajectory_details_omitted" not in m
    short = metrics(gold, trace[:10])["trajectory_metrics"]
    assert "trajectory_details_omitted" not in short


def test_tool_correctness_empty_gold_shape() -> None:
    m = metrics([], [call("b"), call("a"), call("b")])
    assert m["tool_correctness_metrics"] == {
        "tool_correctness": 0.0,
        "expected_tools": [],
        "called_tools": ["a", "b"],
        "missing_tools": [],
        "extra_tools": ["a", "b"],
        "correct_count": 0,
        "total_expected": 0,
    }
    assert m["efficiency_metrics"]["redundant_rate"] == 1.0
    assert m["required_call_recall"] is None


def test_empty_trace_efficiency_is_zero() -> None:
    m = metrics([call("a")], [])
    zero = {"redundant_count": 0, "total_calls": 0, "redundant_rate": 0.0}
    assert m["efficiency_metrics"] == zero
    assert m["selection_accuracy"] == 0.0
    assert m["invocation_accuracy"] == 0.0


@pytest.mark.parametrize(
    ("trace", "recall"),
    [
        ([call("search")], 0.5),
        ([call("search", error=True)], 0.0),
        ([call("search", error=True), call("search")], 0.5),
        ([call("search"), call("search", error=True), call("search")], 1.0),
        ([call("other")], 0.0),
    ],
)
def test_required_call_recall(trace: list[ToolCall], recall: float) -> None:
    assert metrics([call("search"), call("search")], trace)["required_call_recall"] == recall


def test_recall_waits_for_results() -> None:
    # A call read with its result pending counts for recall only once it is done.
    check = expected_check([call("a"), call("b")])
    first = numbered([call("a"), call("b")])
    first[0].complete = first[1].complete = False
    check.feed(Batch(calls=first, done=[]))
    first[1].metadata["is_error"] = True
    check.feed(Batch(calls=[], done=[first[0], first[1]]))
    check.finish()
    m = check.metrics()
    assert m["required_call_recall"] == 0.5
    assert m["selection_accuracy"] == 1.0


def test_latency_and_cost() -> None:
    trace = [
        call("a", duration=0.5, cost=0.01),
        call("b", duration="slow", cost="free"),
        call("a", duration=1.5, cost=0.02),
        call("b", duration=None, cost=True),
        call("c", duration=0.25),
    ]
    check = run([call("a")], trace)
    extra = check.extra_metrics()
    assert extra["latency_metrics"] == {
        "total_duration": 2.25,
        "average_duration": 0.75,
        "max_duration": 1.5,
        "min_duration": 0.25,
    }
    assert extra["cost_metrics"]["total_cost"] == 0.01 + 0.02
    assert extra["cost_metrics"]["average_cost"] == (0.01 + 0.02) / 2
    assert extra["cost_metrics"]["cost_by_tool"] == {"a": 0.0 + 0.01 + 0.02}
    assert run([call("a")], [call("a", duration=0.0)]).extra_metrics() == {}


def test_non_dict_args_do_not_crash() -> None:
    gold = [call("a", {"x": 1}), call("b", ["x"]), call("c", {"x": 1})]
    trace = [call("a", ["x", 1]), call("b", {"x": 1}), call("c", "x=1")]
    m = metrics(gold, trace)
    # a: list args match no key but count 2 actual; b: list gold args count as {}; c: 3 chars.
    assert m["argument_metrics"]["precision"] == 0.0
    assert m["argument_metrics"]["recall"] == 0.0


def test_expected_check_is_a_check() -> None:
    check = expected_check([])
    assert check.name == "expected"
    assert check.feed(Batch()) == []
    assert check.finish() == []
    assert check.finish() == []
    assert check.metrics()["selection_accuracy"] == 1.0


@pytest.mark.anyio
async def test_async_twins() -> None:
    gold, trace = verbatim_run()
    check = expected_check(gold)
    trace = numbered(trace)
    assert await check.afeed(Batch(calls=trace, done=trace)) == []
    assert await check.afinish() == []
    assert check.metrics()["selection_accuracy"] == 0.75


def test_large_gold_of_one_tool_is_exact_and_fast() -> None:
    # Toolscore's recursion fails here (RecursionError); we pair exactly.
    gold = [call("a", {"x": i % 7}) for i in range(1200)]
    trace = [call("a", {"x": i % 5}) for i in range(10)]
    m = metrics(gold, trace)["argument_metrics"]
    assert m["precision"] == 1.0
    assert m["recall"] == 10 / 1200


def test_many_distinct_gold_calls_of_one_tool() -> None:
    gold = [call("a", {"x": i, "y": i % 3}) for i in range(40)]
    trace = [call("a", {"x": i % 45, "y": i % 4}) for i in range(300)]
    check = run(gold, trace)
    m = check.metrics()["argument_metrics"]
    # Every gold x has its own exact trace call with the same x; y matches when i%3 == j%4.
    pairs = check.pairing()
    assert len(pairs) == 40
    assert len(set(pairs.values())) == 40
    assert m["recall"] == 1.0


# -- properties -------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=12),
    st.lists(st.sampled_from(["a", "b", "c", "e"]), max_size=30),
)
def test_distance_trackers_equal_reference(gold: list[str], trace: list[str]) -> None:
    expected = ref_levenshtein(gold, trace)
    column = ColumnDistance(gold)
    for name in trace:
        column.step(name)
    assert column.distance == expected
    if gold:
        bits = BitParallelDistance(gold)
        for name in trace:
            bits.step(name)
        assert bits.distance == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=9),
    st.lists(st.lists(st.sampled_from(["a", "b", "c", "e"]), max_size=12), max_size=4),
    st.sampled_from([1, 2, 5, 40]),
)
def test_bit_parallel_table_full_or_not(
    gold: list[str], batches: list[list[str]], table_max: int
) -> None:
    # the step table stops growing at STEP_TABLE_MAX; the steps after that are computed
    saved = sequence_mod.STEP_TABLE_MAX
    sequence_mod.STEP_TABLE_MAX = table_max
    try:
        bits = BitParallelDistance(gold)
        for batch in batches:
            bits.run(batch)
    finally:
        sequence_mod.STEP_TABLE_MAX = saved
    assert bits.distance == ref_levenshtein(gold, [name for batch in batches for name in batch])


def test_bit_parallel_trackers_of_every_gold_length_share_their_steps() -> None:
    # one step table for golds of up to SHARED_STEPS_MAX_GOLD names: its keys tell the
    # lengths apart (a step of one length is not another's), trackers made one after another
    names = ["a", "b", "c", "d", "e"]
    for round_ in range(3):
        for m in [*range(2, 14), 62, 63, 64, 65, 127, 128]:
            gold = [names[(i * 3 + m) % 5] for i in range(m)]
            trace = [names[(i * 7 + m + round_) % 5] for i in range(m + 9)]
            bits = BitParallelDistance(gold)
            bits.run(trace)
            assert bits.distance == ref_levenshtein(gold, trace), (m, round_)


def test_bit_parallel_long_gold() -> None:
    gold = [f"t{i % 13}" for i in range(300)]
    trace = [f"t{(i * 7) % 17}" for i in range(250)]
    bits = BitParallelDistance(gold)
    for name in trace:
        bits.step(name)
    assert bits.distance == ref_levenshtein(gold, trace)


@settings(max_examples=150, deadline=None)
@given(calls_strategy(6), calls_strategy(10), st.booleans())
def test_metrics_equal_reference(gold: list[ToolCall], trace: list[ToolCall], strict: bool) -> None:
    check = run(gold, trace, strict=strict)
    assert check.metrics() == ref_metrics(gold, trace, strict)
    assert check.pairing() == ref_pairing(gold, trace, strict)


@settings(max_examples=60, deadline=None)
@given(calls_strategy(12, ["a", "b"]), calls_strategy(7, ["a", "b"]))
def test_pairing_many_golds_equals_reference(gold: list[ToolCall], trace: list[ToolCall]) -> None:
    assert run(gold, trace).pairing() == ref_pairing(gold, trace, False)


@settings(max_examples=60, deadline=None)
@given(calls_strategy(4, ["a"]), calls_strategy(15, ["a"]))
def test_pairing_beyond_twelve_equals_exact_search(
    gold: list[ToolCall], trace: list[ToolCall]
) -> None:
    # Past 12 trace calls Toolscore turns greedy; we match its exact search at any size.
    assert run(gold, trace).pairing() == ref_pairing(gold, trace, False)


@settings(max_examples=60, deadline=None)
@given(
    calls_strategy(5),
    calls_strategy(12),
    st.lists(st.integers(0, 4), max_size=6),
)
def test_batching_does_not_matter(
    gold: list[ToolCall], trace: list[ToolCall], sizes: list[int]
) -> None:
    one = run(gold, copies(trace))
    whole = (one.metrics(), one.pairing())
    for cut in ([1] * len(trace), sizes):  # each batch's calls kept a call at a time, or at once
        check = run(gold, copies(trace), sizes=cut)
        assert (check.metrics(), check.pairing()) == whole


@settings(max_examples=40, deadline=None)
@given(
    calls_strategy(4, ["a"]),
    st.lists(st.one_of(st.none(), arg_dicts()), min_size=17, max_size=40),
    st.lists(st.integers(0, 30), max_size=3),
)
def test_many_new_candidates_at_once_keep_what_one_at_a_time_keeps(
    gold: list[ToolCall], args: list[Any], sizes: list[int]
) -> None:
    """Past 16 new candidates for a gold group in one batch they are sorted in at once; one
    call a batch inserts each in place: the same pairing and metrics."""
    trace = [call("a", a) for a in args]
    one = run(gold, copies(trace), sizes=[1] * len(trace))
    for cut in (None, sizes):
        check = run(gold, copies(trace), sizes=cut)
        assert (check.metrics(), check.pairing()) == (one.metrics(), one.pairing())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=6), st.integers(1, 8))
def test_all_ties(gold_keys: list[int], m: int) -> None:
    # Identical args everywhere: every choice ties, so only the tie-break decides.
    gold = [call("a", {"x": 1}) if k else call("a", {"x": 2}) for k in gold_keys]
    trace = [call("a", {"x": 1}) for _ in range(m)]
    assert run(gold, trace).pairing() == ref_pairing(gold, trace, False)


def test_selection_of_distance_tracker() -> None:
    assert isinstance(distance_tracker([]), ColumnDistance)
    assert isinstance(
        distance_tracker(["a"] * BIT_PARALLEL_MIN_GOLD),
        BitParallelDistance,
    )


def test_nan_values_do_not_break_pairing() -> None:
    nan = math.nan
    gold = [call("a", {"x": nan}), call("a", {"x": nan})]
    trace = [call("a", {"x": nan}), call("a", {"x": 1})]
    check = run(gold, trace)
    assert check.pairing() == ref_pairing(gold, trace, False)


# -- the pairing against the big-int assignment it replaced -----------------------------------


def old_min_cost_assignment(edges: list[list[tuple[int, int]]]) -> list[int]:
    """The successive shortest paths on big integer costs that the pairing used before."""
    n = len(edges)
    u = [0] * n
    v: dict[int, int] = {}
    col_row: dict[int, int] = {}
    row_col = [0] * n
    for s in range(n):
        dist: dict[int, int] = {}
        pred: dict[int, int] = {}
        done: dict[int, int] = {}
        heap: list[tuple[int, int]] = []
        for c, w in edges[s]:
            d = w - u[s] - v.get(c, 0)
            if c not in dist or d < dist[c]:
                dist[c] = d
                pred[c] = s
                heapq.heappush(heap, (d, c))
        sink: int | None = None
        delta = 0
        while heap:
            d, c = heapq.heappop(heap)
            if c in done or d != dist[c]:
                continue
            done[c] = d
            r = col_row.get(c)
            if r is None:
                sink, delta = c, d
                break
            base = d - u[r]
            for c2, w in edges[r]:
                if c2 in done:
                    continue
                nd = base + w - v.get(c2, 0)
                if c2 not in dist or nd < dist[c2]:
                    dist[c2] = nd
                    pred[c2] = r
                    heapq.heappush(heap, (nd, c2))
        assert sink is not None
        u[s] += delta
        for c, d in done.items():
            if c != sink:
                v[c] = v.get(c, 0) + d - delta
                u[col_row[c]] += delta - d
        c = sink
        while True:
            r = pred[c]
            prev = row_col[r]
            row_col[r] = c
            col_row[c] = r
            if r == s:
                break
            c = prev
    return row_col


def old_pair_tool(golds: list[list[tuple[int, int, int]]], m: int) -> list[int | None]:
    """The pairing before: weight, then the preference in gold order, in one big integer."""
    n = len(golds)
    firsts = {cands[0][1] for cands in golds}
    if len(firsts) == n and m >= n:
        return [0] * n
    base = n + 1
    weight_unit = base**n
    values: dict[tuple[int, int], int] = {}
    scale = weight_unit
    for p, cands in enumerate(golds):
        scale //= base
        rank_of = {pos: rank for rank, pos in enumerate(sorted(c[1] for c in cands), 1)}
        for w, pos, _ in cands:
            values[p, pos] = w * weight_unit - rank_of[pos] * scale
    top = max(values.values())
    by_gold = m >= n
    rows: dict[int, list[tuple[int, int]]] = {}
    for (p, pos), value in values.items():
        row, col = (p, pos) if by_gold else (pos, p)
        rows.setdefault(row, []).append((col, top - value))
    keys = list(rows)
    cols = old_min_cost_assignment([rows[k] for k in keys])
    chosen: dict[int, int] = {}
    for row, col in zip(keys, cols, strict=True):
        p, pos = (row, col) if by_gold else (col, row)
        chosen[p] = pos
    out: list[int | None] = []
    for p, cands in enumerate(golds):
        taken = chosen.get(p)
        out.append(None if taken is None else next(i for i, c in enumerate(cands) if c[1] == taken))
    return out


def ranked(cands: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    return sorted(cands, key=lambda c: (-c[0], c[1]))


@st.composite
def candidate_lists(
    draw: st.DrawFn, max_n: int = 30, max_m: int = 30
) -> tuple[list[list[tuple[int, int, int]]], int]:
    """Candidate lists as the check builds them: with m >= n each gold keeps n trace calls
    (its n best, or any n), with m < n all of them; weights with many ties."""
    n = draw(st.integers(1, max_n))
    m = draw(st.integers(1, max_m))
    positions = list(
        itertools.accumulate(draw(st.lists(st.integers(1, 3), min_size=m, max_size=m)))
    )
    top = draw(st.integers(0, 3))
    if draw(st.booleans()):
        # Few kinds of gold and trace calls: whole rows and columns tie.
        kinds = draw(st.integers(1, 4))
        table = draw(st.lists(st.integers(0, top), min_size=kinds * kinds, max_size=kinds * kinds))
        gk = draw(st.lists(st.integers(0, kinds - 1), min_size=n, max_size=n))
        tk = draw(st.lists(st.integers(0, kinds - 1), min_size=m, max_size=m))
        weight = [[table[gk[p] * kinds + tk[j]] for j in range(m)] for p in range(n)]
    else:
        flat = draw(st.lists(st.integers(0, top), min_size=n * m, max_size=n * m))
        weight = [flat[p * m : (p + 1) * m] for p in range(n)]
    any_n = m > n and draw(st.booleans())
    golds = []
    for p in range(n):
        cands = [(weight[p][j], positions[j], (p + j) % 3) for j in range(m)]
        if m >= n:
            if any_n:
                keep = draw(st.permutations(range(m)))[:n]
                cands = [cands[j] for j in keep]
            else:
                cands = ranked(cands)[:n]
        golds.append(ranked(cands))
    return golds, m


@settings(max_examples=400, deadline=None)
@given(candidate_lists())
def test_pair_tool_equals_big_int_assignment(
    case: tuple[list[list[tuple[int, int, int]]], int],
) -> None:
    golds, m = case
    assert pairing_mod.pair_tool(golds, m) == old_pair_tool(golds, m)


@settings(max_examples=200, deadline=None)
@given(candidate_lists(max_n=12, max_m=12))
def test_min_cost_assignment_duals(case: tuple[list[list[tuple[int, int, int]]], int]) -> None:
    # The properties the pairing relies on: a complete assignment of the rows, and duals with
    # reduced costs >= 0, 0 on the assigned edges, v <= 0, v == 0 on unassigned columns.
    golds, m = case
    rows = golds
    if len(golds) > m:  # rows = trace calls, as _pair_tool has them
        by_pos: dict[int, list[tuple[int, int, int]]] = {}
        for p, cands in enumerate(golds):
            for w, pos, _ in cands:
                by_pos.setdefault(pos, []).append((w, p, 0))
        rows = [sorted(r, reverse=True) for r in by_pos.values()]
    top = max(c[0][0] for c in rows)
    row_col, u, v = pairing_mod.min_cost_assignment(rows, top)
    assert len(set(row_col)) == len(rows)
    for r, edges in enumerate(rows):
        for w, c, _ in edges:
            reduced = top - w - u[r] - v.get(c, 0)
            assert reduced >= 0
            assert reduced == 0 or row_col[r] != c
        assert row_col[r] in {c for _, c, _ in edges}
    assert all(d < 0 for d in v.values())
    assert set(v) <= set(row_col)


TIED_ARGS = [None, {}, {"x": 1}, {"y": 1}, {"x": 1, "y": 1}, {"x": 2, "y": 1}, {"x": 1, "y": 2}]


@st.composite
def tied_calls(draw: st.DrawFn, max_size: int, extra: list[Any]) -> list[ToolCall]:
    size = draw(st.integers(0, max_size))
    tools = st.sampled_from(["a", "a", "a", "b"])
    return [call(draw(tools), draw(st.sampled_from(TIED_ARGS + extra))) for _ in range(size)]


@settings(max_examples=150, deadline=None)
@given(tied_calls(8, []), tied_calls(12, [{"x": 1, "y": 1, "z": 0}, {"z": 0}]))
def test_pairing_heavy_ties_equals_reference(gold: list[ToolCall], trace: list[ToolCall]) -> None:
    # Weights 0, 1 or 2 everywhere: the preference in gold order decides most pairs.
    check = run(gold, trace)
    assert check.pairing() == ref_pairing(gold, trace, False)
    assert check.metrics()["argument_metrics"] == ref_arguments(gold, trace, False)


def test_2000_golds_many_colliding_best_candidates() -> None:
    # Gold i matches both args of trace j when j % 700 == i, else only "a": the 700 first
    # golds all want trace calls 0..699 first, the 1300 others tie everywhere. The most weight
    # gives each gold i < 700 one of its own trace calls (2 args) and every other gold 1 arg:
    # 700 * 2 + 1300 = 2700 of 4000. In gold order each then takes the earliest it can: i.
    gold = [call("a", {"a": 1, "b": i}) for i in range(2000)]
    trace = [call("a", {"a": 1, "b": j % 700}) for j in range(2000)]
    check = run(gold, trace)
    assert check.pairing() == {i: i for i in range(2000)}
    m = check.metrics()["argument_metrics"]
    assert m["recall"] == 2700 / 4000
    assert m["precision"] == 2700 / 4000


def test_2000_golds_300_trace_calls() -> None:
    # All 300 trace calls are paired; 600 matched args need trace j with gold j for every j
    # (any other pair matches only "a"); the golds from 300 on are left unpaired.
    gold = [call("a", {"a": 1, "b": i}) for i in range(2000)]
    trace = [call("a", {"a": 1, "b": j % 700}) for j in range(300)]
    check = run(gold, trace)
    assert check.pairing() == {i: i for i in range(300)}
    m = check.metrics()["argument_metrics"]
    assert m["recall"] == 600 / 4000
    assert m["precision"] == 1.0
    assert m["f1"] == 2 * 0.15 / 1.15


def test_1000_identical_golds_999_trace_calls() -> None:
    # Every pairing has 999 pairs of 1 arg: gold 0 skips (the others can take every trace
    # call), then each gold takes the earliest trace call left.
    gold = [call("a", {"a": 1}) for _ in range(1000)]
    trace = [call("a", {"a": 1}) for _ in range(999)]
    check = run(gold, trace)
    assert check.pairing() == {i: i - 1 for i in range(1, 1000)}
    assert check.metrics()["argument_metrics"]["recall"] == 999 / 1000


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), st.sampled_from(VALUES)), max_size=3),
    st.lists(arg_dicts(), max_size=pairing_mod.ROW_WEIGHTS_MAX + 8),
    st.booleans(),
)
def test_call_weights_count_matching_gold_keys(
    items: list[tuple[str, Any]], dicts: list[dict[str, Any]], strict: bool
) -> None:
    # a few calls go a call at a time, more a key at a time over the column: either way, per
    # call, the gold keys whose value compare_values matches
    want = [
        sum(1 for key, expected in items if key in d and compare_values(expected, d[key], strict))
        for d in dicts
    ]
    assert pairing_mod.call_weights(items, dicts, strict) == want
    small = pairing_mod.ROW_WEIGHTS_MAX
    for threshold in (-1, len(dicts)):  # all by columns, all by rows
        pairing_mod.ROW_WEIGHTS_MAX = threshold
        try:
            assert pairing_mod.call_weights(items, dicts, strict) == want
        finally:
            pairing_mod.ROW_WEIGHTS_MAX = small
