"""The errors check (failures, retries, identical calls) and the signatures it relies on."""

from __future__ import annotations

import json
import math
import tracemalloc
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore._distinct import DistinctCounter
from toolscore._signature import (
    canonical_args,
    canonical_json,
    canonical_many,
    fingerprint,
    signature,
)
from toolscore.calls import Batch, ToolCall
from toolscore.checks.errors import ErrorsCheck, errors_check


def calls(*specs: tuple[str, Any] | tuple[str, Any, dict[str, Any]]) -> list[ToolCall]:
    out = []
    for i, spec in enumerate(specs):
        metadata = spec[2] if len(spec) == 3 else {}
        out.append(ToolCall(spec[0], spec[1], metadata=dict(metadata), index=i))
    return out


def run(items: list[ToolCall], *, one_by_one: bool = False) -> tuple[ErrorsCheck, list[Any]]:
    check = errors_check()
    findings = []
    if one_by_one:
        for call in items:
            findings += check.feed(Batch(calls=[call], done=[call]))
    else:
        findings += check.feed(Batch(calls=items, done=items))
    findings += check.finish()
    return check, findings


FAIL = {"is_error": True}


# --- signatures ---------------------------------------------------------------------------


def test_signature_key_order_none_and_empty() -> None:
    assert canonical_args({"a": 1, "b": 2}) == canonical_args({"b": 2, "a": 1})
    assert canonical_args(None) == canonical_args({}) == canonical_args([]) == canonical_args("")
    assert signature("t", None) == signature("t", {})
    assert signature("t", {}) != signature("u", {})


def test_signature_int_is_not_float() -> None:
    assert canonical_args({"n": 1}) != canonical_args({"n": 1.0})
    assert canonical_args({"n": True}) != canonical_args({"n": 1})


def test_signature_nan_and_infinity_are_not_null() -> None:
    nan = canonical_args({"x": math.nan})
    inf = canonical_args({"x": math.inf})
    null = canonical_args({"x": None})
    assert len({nan, inf, null, canonical_args({"x": -math.inf})}) == 4
    assert canonical_args({"x": [None, math.nan]}) == canonical_args({"x": [None, math.nan]})
    # orjson spells a NaN key "null" too; json spells it "NaN"
    assert canonical_args({math.nan: 1}) != canonical_args({None: 1})
    assert canonical_args({None: 1}) == canonical_args({"null": 1})
    # null without a NaN anywhere keeps the fast form
    assert null == b'{"x":null}'


def test_signature_values_orjson_rejects() -> None:
    big = {"n": 2**70}
    assert canonical_args(big) == canonical_args({"n": 2**70})
    assert canonical_args(big) != canonical_args({"n": 2**70 + 1})
    assert canonical_args({"s": "\ud800"}) != canonical_args({"s": "\ud801"})
    # non-string keys spelled as json spells them: {1: x} is {"1": x}, as in Toolscore
    assert canonical_args({1: "a"}) == canonical_args({"1": "a"})
    assert canonical_args({True: "a"}) == canonical_args({"true": "a"})
    # mixed-type keys crash Toolscore's sort_keys; here they only give a signature
    mixed = canonical_args({1: "a", "b": 2})
    assert mixed == canonical_args({1: "a", "b": 2})
    deep: Any = "leaf"
    for _ in range(400):
        deep = [deep]
    assert canonical_args({"d": deep}) == canonical_args({"d": deep})


def test_signature_non_serializable_values_go_through_str() -> None:
    when = datetime(2024, 5, 20, 7, 0)
    assert canonical_args({"t": when}) == canonical_args({"t": str(when)})
    assert canonical_args({"s": {1, 2}}) == canonical_args({"s": str({1, 2})})

    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no")

        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert canonical_args({"b": Broken()})  # no crash


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _toolscore_sig(value: Any) -> str:
    return json.dumps(value or {}, sort_keys=True, default=str)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_signature_equivalence_matches_toolscore(a: Any, b: Any) -> None:
    # NaN != NaN as a float, but both dump as "NaN": compare the canonical texts, as Toolscore does
    assert (canonical_args(a) == canonical_args(b)) == (_toolscore_sig(a) == _toolscore_sig(b))
    assert canonical_args(a) == canonical_args(a)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_trace_signature_equivalence_matches_toolscore(a: Any, b: Any) -> None:
    # the form used for calls read from a trace (msgspec) keeps the same equivalence
    assert (canonical_json(a) == canonical_json(b)) == (_toolscore_sig(a) == _toolscore_sig(b))
    # what a strict decoder gives: dicts with no NaN or infinity (no fallback form)
    strict = [v for v in (a, b) if isinstance(v, dict) and v and not canonical_json(v)[:1] == b"\0"]
    strict = [v for v in strict if b"null" not in canonical_json(v)]
    assert canonical_many(strict, "strict") == [canonical_json(v) for v in strict]


def test_fingerprint_is_signed_64_bit() -> None:
    fp = fingerprint("t", canonical_args({"a": 1}))
    assert -(2**63) <= fp < 2**63
    assert fp == fingerprint("t", canonical_args({"a": 1}))
    assert fp != fingerprint("t", canonical_args({"a": 2}))


# --- DistinctCounter ------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-40, 40), max_size=400),
    st.integers(2, 12),
    st.integers(2, 5) | st.sampled_from([8, 64]),  # a power of two: spills ordered by top bits
)
def test_distinct_counter_matches_python_set(values: list[int], memory: int, fanout: int) -> None:
    # tiny budgets force spills, and partitions bigger than the budget are split again
    counter = DistinctCounter(memory_entries=memory, fanout=fanout)
    half = len(values) // 2
    for v in values[:half]:
        counter.add(v)
    counter.update(values[half:])
    assert len(counter) == len(set(values))
    counter.update(values)  # counting again after a count: nothing new
    assert len(counter) == len(set(values))
    counter.close()
    assert len(counter) == 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-20, 20), max_size=200),
    st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-20, 20), max_size=200),
    st.integers(1, 8),
)
def test_distinct_counter_merge_is_a_union(a: list[int], b: list[int], memory: int) -> None:
    left = DistinctCounter(memory_entries=memory, fanout=3)
    right = DistinctCounter(memory_entries=memory, fanout=3)
    left.update(a)
    right.update(b)
    left.merge(right)
    assert len(left) == len(set(a) | set(b))
    assert len(right) == 0
    left.close()


def test_distinct_counter_memory_stays_bounded(tmp_path: Path) -> None:
    n = 300_000
    step = 0x9E3779B97F4A7C15
    counter = DistinctCounter(memory_entries=1 << 14, directory=tmp_path)
    tracemalloc.start()
    for start in range(0, n, 10_000):
        counter.update(((i * step) & (2**64 - 1)) - 2**63 for i in range(start, start + 10_000))
        counter.update([7, 7, 7])  # duplicates across spills count once
    _current, peak = tracemalloc.get_traced_memory()
    assert counter.spilled
    assert len(counter) == n + 1
    _current, count_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # 16k ints in a set: about 1.5 MB, whatever n is (an in-memory set of 300k: ~20 MB)
    assert peak < 4_000_000, peak
    assert count_peak < 4_000_000, count_peak
    assert any(tmp_path.iterdir())
    counter.close()
    assert not any(tmp_path.iterdir())


# --- the check ------------------------------------------------------------------------------


def test_toolscore_example_two_of_four_failed_one_retry() -> None:
    url = {"url": "https://api.example.com/w", "headers": {"Authorization": "Bearer x"}}
    items = calls(
        ("search", {"q": "weather NYC"}),
        ("fetch", url, {"error": "timeout", "is_error": True}),
        ("fetch", dict(url), FAIL),
        ("run_shell", {"command": ["rm", "-rf", "/tmp/x"]}),
    )
    check, findings = run(items)
    m = check.metrics()["efficiency_metrics"]
    assert m == {
        "identical_count": 1,
        "identical_rate": 0.25,
        "error_count": 2,
        "error_rate": 0.5,
        "retry_after_error_count": 1,
    }
    assert check.failed_tools == [("fetch", 2)]
    assert [(f.kind, f.call_index, f.message) for f in findings] == [
        ("failed_call", 1, "call 2 fetch failed: timeout"),
        ("retry_after_error", 2, "call 3 fetch repeats failed call 2 with the same arguments"),
        ("failed_call", 2, "call 3 fetch failed"),
    ]
    assert all(f.check == "errors" and f.severity == "warning" for f in findings)
    assert check.summary() == [
        ("warning", "2 of 4 tool calls failed (fetch x2)"),
        ("warning", "1 call repeats a failed call with the same arguments"),
    ]


@pytest.mark.parametrize("one_by_one", [False, True])
def test_without_the_identical_count_findings_and_counts_are_the_same(one_by_one: bool) -> None:
    items = calls(
        ("a", {"x": 1}, FAIL),
        ("a", {"x": 1}, FAIL),
        ("a", {"x": 1}),
        ("b", {}, {"error": "boom", "is_error": True}),
        ("b", {}),
        ("a", {"x": 1}),
    )
    full, found = run(items, one_by_one=one_by_one)
    light = errors_check(count_identical=False)
    light_found = []
    for batch in [items] if not one_by_one else [[c] for c in items]:
        light_found += light.feed(Batch(calls=batch, done=batch))
    light_found += light.finish()
    assert [(f.kind, f.call_index, f.message) for f in light_found] == [
        (f.kind, f.call_index, f.message) for f in found
    ]
    assert light.failed_tools == full.failed_tools == [("a", 2), ("b", 1)]
    assert (light.error_count, light.retry_after_error_count) == (3, 3)
    assert full.identical_count == 4
    # its state says the identical calls were not counted, and merges like any other
    state = light.state()
    assert not state.identical
    assert "identical_count" not in state.metrics()["efficiency_metrics"]
    assert state.metrics()["efficiency_metrics"]["error_count"] == 3
    assert state.score_metrics() == {}
    assert state.merge(light.state()).errors == 6
    with pytest.raises(RuntimeError):
        _ = light.identical_count


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("ab"), st.sampled_from([{}, {"x": 1}, {"x": 2}]), st.booleans()),
        min_size=1,
        max_size=14,
    ),
    st.lists(st.integers(1, 13), max_size=4),
)
def test_without_the_identical_count_any_batching_finds_the_same(
    specs: list[tuple[str, dict[str, int], bool]], cuts: list[int]
) -> None:
    # the light check computes only the signatures around failures and a batch's ends
    items = calls(*((tool, args, FAIL if failed else {}) for tool, args, failed in specs))
    _, found = run(items)
    light = errors_check(count_identical=False)
    light_found = []
    bounds = [0, *sorted({c for c in cuts if c < len(items)}), len(items)]
    for start, end in pairwise(bounds):
        batch = items[start:end]
        light_found += light.feed(Batch(calls=batch, done=batch))
    light_found += light.finish()
    assert [(f.kind, f.call_index) for f in light_found] == [(f.kind, f.call_index) for f in found]


def test_retry_only_looks_at_the_previous_call() -> None:
    check, _ = run(calls(("a", {"x": 1}, FAIL), ("b", {}), ("a", {"x": 1})))
    assert check.retry_after_error_count == 0
    check, findings = run(calls(("a", {"x": 1}, FAIL), ("a", {"x": 1}, FAIL), ("a", {"x": 1})))
    assert check.retry_after_error_count == 2
    assert [f.kind for f in findings].count("retry_after_error") == 2
    assert check.summary()[-1] == (
        "warning",
        "2 calls repeat a failed call with the same arguments",
    )


def test_retry_needs_the_same_canonical_args() -> None:
    check, _ = run(calls(("a", {"n": 1}, FAIL), ("a", {"n": 1.0})))
    assert check.retry_after_error_count == 0
    check, _ = run(calls(("a", {"p": 1, "q": 2}, FAIL), ("a", {"q": 2, "p": 1})))
    assert check.retry_after_error_count == 1
    check, _ = run(calls(("a", None, FAIL), ("a", {})))
    assert check.retry_after_error_count == 1
    check, _ = run(calls(("a", {}, FAIL), ("b", {})))
    assert check.retry_after_error_count == 0


def test_failure_semantics_follow_toolcall_is_error() -> None:
    items = calls(
        ("a", {}, {"error": "boom", "is_error": False}),  # truthy error wins
        ("b", {}, {"is_error": "true"}),  # a string is not True
        ("c", {}, {"error": ""}),
        ("d", {}, {"is_error": True}),
    )
    check, findings = run(items)
    assert check.error_count == 2
    assert [f.tool for f in findings] == ["a", "d"]


def test_failed_tools_ties_in_first_failure_order() -> None:
    check, _ = run(
        calls(("z", {}, FAIL), ("y", {"i": 1}, FAIL), ("z", {"i": 2}, FAIL), ("y", {"i": 3}, FAIL))
    )
    assert check.failed_tools == [("z", 2), ("y", 2)]
    check, _ = run(calls(("z", {}, FAIL), ("y", {"i": 1}, FAIL), ("y", {"i": 3}, FAIL)))
    assert check.failed_tools == [("y", 2), ("z", 1)]
    assert check.summary()[0][1] == "3 of 3 tool calls failed (y x2, z)"


def test_error_text_is_redacted_and_cut() -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    long = "x" * 500
    items = calls(("a", {}, {"error": f"denied for {key}"}), ("b", {}, {"error": long}))
    _, findings = run(items)
    assert key not in findings[0].message
    assert "[REDACTED aws_access_key_id: AKIA…OP]" in findings[0].message
    assert len(findings[1].message) < 230
    assert findings[1].message.endswith("…")


def test_empty_trace_rates_are_zero() -> None:
    check, findings = run([])
    assert findings == []
    assert check.metrics()["efficiency_metrics"] == {
        "identical_count": 0,
        "identical_rate": 0.0,
        "error_count": 0,
        "error_rate": 0.0,
        "retry_after_error_count": 0,
    }
    assert check.summary() == []


def test_only_done_calls_count() -> None:
    check = errors_check()
    pending = ToolCall("a", {}, index=0, complete=False)
    assert check.feed(Batch(calls=[pending], done=[])) == []
    assert check.total_calls == 0
    pending.metadata["is_error"] = True
    pending.complete = True
    findings = check.feed(Batch(calls=[], done=[pending]))
    assert [f.kind for f in findings] == ["failed_call"]


call_specs = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from([None, {}, {"x": 1}, {"x": 1.0}, {"y": [1, 2]}]),
        st.booleans(),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(call_specs)
def test_matches_a_direct_computation_and_batching_does_not_matter(
    specs: list[tuple[str, Any, bool]],
) -> None:
    items = calls(*[(t, a, {"is_error": True} if f else {}) for t, a, f in specs])
    check, findings = run(items)
    check2, findings2 = run(items, one_by_one=True)
    assert findings == findings2
    assert check.metrics() == check2.metrics()
    sigs = [(c.tool, _toolscore_sig(c.args)) for c in items]
    retries = sum(
        1 for i in range(1, len(items)) if items[i - 1].is_error and sigs[i - 1] == sigs[i]
    )
    m = check.metrics()["efficiency_metrics"]
    assert m["retry_after_error_count"] == retries
    assert m["identical_count"] == len(items) - len(set(sigs))
    assert m["error_count"] == sum(1 for _, _, f in specs if f)


@pytest.mark.anyio
async def test_async_twins() -> None:
    check = errors_check()
    items = calls(("a", {}, FAIL), ("a", {}))
    findings = await check.afeed(Batch(calls=items, done=items))
    assert [f.kind for f in findings] == ["failed_call", "retry_after_error"]
    assert await check.afinish() == []


def test_corpus_counts(corpus: Any) -> None:
    import orjson

    check = errors_check()
    prev_trace = None
    retries = 0
    for line in (corpus / "toolbench.jsonl").read_bytes().splitlines():
        d = orjson.loads(line)
        if d["trace_id"] != prev_trace:  # one check per trace
            retries += check.retry_after_error_count
            check = errors_check()
            prev_trace = d["trace_id"]
        call = ToolCall(d["tool"], d.get("args"), metadata={"is_error": d.get("is_error", False)})
        call.index = d["index"]
        check.feed(Batch(calls=[call], done=[call]))
    retries += check.retry_after_error_count
    assert retries == 25  # as the corpus README states
