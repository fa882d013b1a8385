"""The argument pairing past the exact threshold (toolscore.checks.expected.approx): the switch,
the flag in every report, its bounds against the exact pairing, and parts merging to the whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolscore import limits
from toolscore.calls import Batch, ToolCall
from toolscore.checks.expected import expected_check
from toolscore.checks.expected.approx import lenient_key, strict_key
from toolscore.checks.expected.pairing import call_weights, key_hits
from toolscore.errors import UsageError
from toolscore.matchers import Regex, compare_values
from toolscore.testing import assert_parts_merge


def calls(items: list[tuple[str, Any]]) -> list[ToolCall]:
    out = [ToolCall(tool=t, args=a) for t, a in items]
    for i, c in enumerate(out):
        c.index = i
    return out


def feed(check: Any, trace: list[ToolCall], batch: int = 3) -> Any:
    for i in range(0, len(trace), batch):
        part = trace[i : i + batch]
        check.feed(Batch(calls=part, done=part))
    return check


GOLD = calls([("search", {"q": f"t{i % 4}", "n": 10, "lang": "en"}) for i in range(6)])
TRACE = calls(
    [("search", {"q": f"t{j % 5}", "n": 10 if j % 3 else 20, "lang": "en"}) for j in range(20)]
    + [("other", {"x": 1})]
)


def test_threshold_switches_to_the_flagged_approximation() -> None:
    exact = feed(expected_check(GOLD, exact_pairing_max=6), TRACE).metrics()
    assert "pairing" not in exact["argument_metrics"]
    approx = feed(expected_check(GOLD, exact_pairing_max=5), TRACE).metrics()
    assert approx["argument_metrics"]["pairing"] == {
        "method": "approximate",
        "exact_up_to": 5,
        "candidates_per_gold_call": limits.APPROX_PAIRING_CANDIDATES,
        "tools": [{"tool": "search", "gold_calls": 6, "trace_calls": 20}],
    }
    # Every gold call of "search" finds an exact match: the same scores.
    for key in ("precision", "recall", "f1"):
        assert approx["argument_metrics"][key] == exact["argument_metrics"][key]


def test_no_flag_when_the_wide_tool_is_not_called() -> None:
    trace = calls([("other", {"x": 1})])
    metrics = feed(expected_check(GOLD, exact_pairing_max=1), trace).metrics()
    assert "pairing" not in metrics["argument_metrics"]


def test_default_threshold_and_environment_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(limits.EXACT_PAIRING_ENV, raising=False)
    assert limits.exact_pairing_max() == limits.EXACT_PAIRING_MAX_GOLD == 2000
    monkeypatch.setenv(limits.EXACT_PAIRING_ENV, "3")
    assert expected_check(GOLD).plan.exact_pairing_max == 3
    assert list(expected_check(GOLD).plan.approx) == ["search"]
    monkeypatch.setenv(limits.EXACT_PAIRING_ENV, "-1")
    with pytest.raises(UsageError, match="whole number"):
        expected_check(GOLD)


def test_candidates_per_gold_call_are_capped() -> None:
    gold = calls([("a", {"k": 1, "i": i}) for i in range(50)])
    trace = calls([("a", {"k": 1, "i": j % 60}) for j in range(600)])
    check = feed(expected_check(gold, exact_pairing_max=10, approx_candidates=4), trace, 50)
    state = check.state()
    assert max(len(c) for c in state.candidates) <= 4
    log = state.approx["a"]
    assert len(log.firsts) == 50
    assert all(len(calls) <= 4 for _, calls in log.buckets)
    # Each gold call i < 50 has its own trace calls (both args): all pairs are full.
    assert feed(expected_check(gold, exact_pairing_max=10), trace).metrics()["argument_metrics"][
        "recall"
    ] == pytest.approx(1.0)


# -- the index keys agree with Toolscore's comparison ---------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["a", " a", "a ", "b", "1", "", " "]),
    st.text(max_size=4),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(expected=json_values, actual=json_values, strict=st.booleans())
def test_index_keys_match_exactly_when_the_comparison_does(
    expected: Any, actual: Any, strict: bool
) -> None:
    key = strict_key if strict else lenient_key
    if isinstance(expected, float) and expected != expected:
        return  # a NaN gold value is not indexed: it matches nothing
    matched = key_hits(expected, [actual], strict) == [1]
    assert (key(expected) == key(actual)) == matched


# -- against the exact pairing ----------------------------------------------------------------

small_args = st.dictionaries(
    st.sampled_from("abc"), st.sampled_from([0, 1, 2, "x", " x", 1.0, True]), max_size=3
)
tools = st.sampled_from(["s", "t"])
call_lists = st.lists(st.tuples(tools, small_args), max_size=25)


def _true_weight(gold: ToolCall, trace: ToolCall, strict: bool) -> int:
    items = list(gold.args.items()) if isinstance(gold.args, dict) else []
    args = trace.args if isinstance(trace.args, dict) else {}
    return call_weights(items, [args], strict)[0] if items else 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    gold_items=st.lists(st.tuples(tools, small_args), min_size=1, max_size=14),
    trace_items=call_lists,
    cap=st.integers(1, 4),
    strict=st.booleans(),
)
def test_approximation_is_a_bounded_valid_pairing(
    gold_items: list[tuple[str, Any]],
    trace_items: list[tuple[str, Any]],
    cap: int,
    strict: bool,
) -> None:
    gold, trace = calls(gold_items), calls(trace_items)
    exact = feed(expected_check(gold, strict=strict), trace)
    wide = feed(
        expected_check(gold, strict=strict, exact_pairing_max=0, approx_candidates=cap), trace
    )
    exact_pairs = exact.state().pairing()
    pairs = wide.state().pairing()
    # As many pairs per tool as the exact pairing (min(gold, trace) of each tool) ...
    for tool in ("s", "t"):
        n = sum(1 for g in gold if g.tool == tool)
        m = sum(1 for c in trace if c.tool == tool)
        assert sum(1 for p in pairs if gold[p].tool == tool) == min(n, m)
    # ... one-to-one within a tool, each weight at most the pair's real one ...
    positions = [q for _, q, _ in pairs.values()]
    assert len(set(positions)) == len(positions)
    for p, (w, q, _) in pairs.items():
        assert trace[q].tool == gold[p].tool
        assert 0 <= w <= _true_weight(gold[p], trace[q], strict)
    # ... so never more matched arguments than the exact pairing, which maximizes them.
    assert sum(w for w, _, _ in pairs.values()) <= sum(w for w, _, _ in exact_pairs.values())
    ma, me = wide.metrics()["argument_metrics"], exact.metrics()["argument_metrics"]
    assert ma["recall"] <= me["recall"]


@settings(max_examples=60, deadline=None)
@given(gold_items=st.lists(st.tuples(tools, small_args), max_size=10), trace_items=call_lists)
def test_below_the_threshold_results_equal_the_exact_solver(
    gold_items: list[tuple[str, Any]], trace_items: list[tuple[str, Any]]
) -> None:
    gold, trace = calls(gold_items), calls(trace_items)
    at_threshold = feed(expected_check(gold, exact_pairing_max=len(gold)), trace)
    exact = feed(expected_check(gold, exact_pairing_max=10**9), trace)
    assert at_threshold.state().approx == {}
    assert at_threshold.metrics() == exact.metrics()
    assert at_threshold.pairing() == exact.pairing()


@settings(max_examples=60, deadline=None)
@given(
    gold_items=st.lists(st.tuples(tools, small_args), min_size=1, max_size=10),
    trace_items=call_lists,
    cuts=st.lists(st.integers(0, 25), max_size=3),
    batch=st.integers(1, 5),
)
def test_parts_merge_to_the_whole_above_the_threshold(
    gold_items: list[tuple[str, Any]],
    trace_items: list[tuple[str, Any]],
    cuts: list[int],
    batch: int,
) -> None:
    gold, trace = calls(gold_items), calls(trace_items)
    cuts = sorted(min(c, len(trace)) for c in cuts)
    assert_parts_merge(
        lambda: expected_check(gold, exact_pairing_max=1, approx_candidates=2),
        trace,
        cuts,
        batch=batch,
    )


def test_matcher_gold_values_are_compared_call_by_call() -> None:
    gold = calls([("s", {"q": Regex(r"t\d"), "n": i}) for i in range(4)])
    trace = calls([("s", {"q": f"t{j}", "n": j % 4}) for j in range(8)])
    check = feed(expected_check(gold, exact_pairing_max=1), trace)
    assert check.metrics()["argument_metrics"]["recall"] == 1.0
    assert compare_values(Regex(r"t\d"), "t3")


# -- the reports flag it ----------------------------------------------------------------------


def test_cli_reports_flag_the_approximate_pairing(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    trace = tmp_path / "trace.jsonl"
    gold.write_text(json.dumps([{"tool": "search", "args": {"q": f"t{i}"}} for i in range(4)]))
    trace.write_text(
        "".join(json.dumps({"tool": "search", "args": {"q": f"t{j}"}}) + "\n" for j in range(9))
    )
    out = tmp_path / "r.json"
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    env = {**os.environ, limits.EXACT_PAIRING_ENV: "3", "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "toolscore", "eval", str(gold), str(trace), "-o", str(out)]
    done = subprocess.run(
        [*cmd, "--markdown", str(md), "--html", str(html)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    line = "Argument pairing approximate for search (4 gold calls, 9 in the trace)"
    assert line in done.stdout
    assert line in md.read_text()
    assert line in html.read_text()
    arguments = json.loads(out.read_text())["metrics"]["argument_metrics"]
    assert arguments["pairing"]["method"] == "approximate"
    assert arguments["f1"] == 1.0
    # Exact (the default threshold): no flag anywhere.
    env.pop(limits.EXACT_PAIRING_ENV)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "approximate" not in done.stdout
    assert "pairing" not in json.loads(out.read_text())["metrics"]["argument_metrics"]


def test_signature_cap_is_flagged_and_bounds_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every item shared by two gold calls is common, and 2 signatures per gold call are kept:
    # a trace of more distinct signatures keeps the first 12 and is flagged. Parts of a trace
    # then still stay within the bounds and carry the flag (their result may differ).
    from toolscore.checks.expected import approx

    monkeypatch.setattr(approx, "COMMON_ITEM_GROUPS", 1)
    monkeypatch.setattr(approx, "SIGNATURES_PER_GOLD_CALL", 2)
    gold = calls([("s", {"a": i % 3, "b": i % 2, "c": i % 4}) for i in range(6)])
    trace = calls([("s", {"a": j % 5, "b": (j // 5) % 3, "c": (j // 15) % 5}) for j in range(80)])

    def make() -> Any:
        return expected_check(gold, exact_pairing_max=1, approx_candidates=3)

    check = feed(make(), trace)
    log = check.state().approx["s"]
    assert log.capped
    assert len(log.buckets) == 12
    assert max(len(b) for _, b in log.buckets) == 3
    tools = check.metrics()["argument_metrics"]["pairing"]["tools"]
    assert tools == [{"tool": "s", "gold_calls": 6, "trace_calls": 80, "signatures_capped": True}]
    # Below the cap (the first 12 calls hold 12 signatures): parts merge to the whole.
    assert_parts_merge(make, trace[:12], [3, 7], batch=2)
    assert not feed(make(), trace[:12]).state().approx["s"].capped
    # Above it, a merge of parts keeps the bounds and the flag.
    first = feed(make(), trace[:40])
    later = make()
    later.begin_part()
    feed(later, calls([(c.tool, c.args) for c in trace[40:]]))
    merged = first.state().merge(later.state())
    assert merged.approx["s"].capped
    assert len(merged.approx["s"].buckets) == 12
    assert len(merged.pairing()) == 6


@pytest.mark.parametrize("shape", ["search", "combinations"])
def test_large_gold_benchmark_runs_small(shape: str) -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "large_gold.py"
    env = {**os.environ, limits.EXACT_PAIRING_ENV: "10"}
    done = subprocess.run(
        [sys.executable, str(script), "--cases", "40x400", "--shape", shape],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"{shape}:     40 gold x     400 trace calls:" in done.stdout
    assert "pairing approximate, exit 0" in done.stdout
