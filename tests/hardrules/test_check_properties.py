"""The hard-rules check against a plain reading of each rule, on open-ended traces: read
whole, a batch at a time, and in parts merged in order (as other processes read them)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import Batch, ToolCall
from toolscore.checks.hardrules import HardRulesCheck
from toolscore.hardrules import ruleset
from toolscore.hardrules.matching import args_match

TOOLS = ["a", "b", "c", "send", "read"]
KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PRIVATE = "/home/u/.ssh/id_rsa"

calls_st = st.lists(
    st.tuples(
        st.sampled_from(TOOLS),
        st.sampled_from([{}, {"q": 1}, {"q": 2}, {"q": 1, "x": 0}, {"path": PRIVATE}]),
        st.sampled_from([None, "ok", {"env": KEY}]),
    ),
    max_size=14,
)
order_st = st.lists(
    st.tuples(st.sampled_from(TOOLS), st.sampled_from(TOOLS)).filter(lambda p: p[0] != p[1]),
    max_size=3,
)
count_st = st.lists(
    st.tuples(
        st.sampled_from([*TOOLS, None]),
        st.none() | st.integers(0, 3),
        st.none() | st.integers(0, 3),
    ).filter(lambda c: (c[1] is not None or c[2] is not None) and (
        c[1] is None or c[2] is None or c[1] <= c[2])),
    max_size=3,
)  # fmt: skip
gold_st = st.lists(
    st.tuples(st.sampled_from(TOOLS[:3]), st.sampled_from([None, {"q": 1}, {"q": 2}])),
    max_size=4,
)
modes_st = st.sampled_from(["exact", "subset", "superset", "ignore"])


def _calls(raw: list[tuple[str, Any, Any]]) -> list[ToolCall]:
    return [ToolCall(t, dict(a), result=r, index=i) for i, (t, a, r) in enumerate(raw)]


def _spec(
    orders: list[tuple[str, str]],
    counts: list[tuple[str | None, int | None, int | None]],
    allow: list[str] | None,
    flow: int,
    match: bool,
    mode: str,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "order": [{"before": a, "after": b} for a, b in orders],
        "counts": [
            {k: v for k, v in (("tool", t), ("min", lo), ("max", hi)) if v is not None}
            for t, lo, hi in counts
        ],
    }
    if allow is not None:
        spec["allow"] = allow
    if flow:
        spec["data_flow"] = {
            "sinks": ["send"],
            "sources": [{"tool": "read", "args": {"path": PRIVATE}}],
        }
    if flow == 2:  # a list of two rules: a sink call both rules see is two violations
        spec["data_flow"] = [
            spec["data_flow"],
            {"sinks": ["send", "c"], "sources": [{"tool": "b", "args": {"q": 2}}],
             "credentials": False},
        ]  # fmt: skip
    if match:
        spec["match"] = ["strict", "unordered", "subset", "superset"]
        spec["arguments"] = {"mode": mode}
    return spec


def _oracle(
    spec: dict[str, Any], calls: list[ToolCall], gold: list[ToolCall]
) -> list[tuple[str, str, int | None]]:
    """Each rule read plainly over the whole list: ``(rule, kind, index)``."""
    out: list[tuple[str, str, int | None]] = []
    tools = [c.tool for c in calls]
    if "allow" in spec:
        out += [("allow", "tool_not_allowed", i) for i, t in enumerate(tools)
                if t not in spec["allow"]]  # fmt: skip
    for r, rule in enumerate(spec["order"]):
        for i, t in enumerate(tools):
            if t == rule["before"]:
                break
            if t == rule["after"]:
                out.append((f"order[{r}]", "order_violation", i))
                break
    for r, rule in enumerate(spec["counts"]):
        tool = rule.get("tool")
        hits = [i for i, t in enumerate(tools) if tool is None or t == tool]
        high = rule.get("max")
        if high is not None and len(hits) > high:
            kind = "step_budget_exceeded" if tool is None else "too_many_calls"
            out.append((f"counts[{r}]", kind, hits[high]))
    flows = spec.get("data_flow", [])
    for r, rule in enumerate(flows if isinstance(flows, list) else [flows]):
        rule_id = "data_flow" if isinstance(flows, dict) else f"data_flow[{r}]"
        source = rule["sources"][0]
        first = None
        for i, c in enumerate(calls):
            if (rule.get("credentials", True) and c.result == {"env": KEY}) or (
                c.tool == source["tool"] and c.args == source["args"]
            ):
                first = i
                break
        if first is not None:
            out += [(rule_id, "data_flow", i) for i, t in enumerate(tools)
                    if t in rule["sinks"] and i > first]  # fmt: skip
    out.sort(key=lambda v: (v[2], v[0]))
    for r, rule in enumerate(spec["counts"]):
        tool = rule.get("tool")
        n = sum(1 for t in tools if tool is None or t == tool)
        if rule.get("min") is not None and n < rule["min"]:
            out.append((f"counts[{r}]", "too_few_calls", None))
    if "match" in spec:
        mode = spec["arguments"]["mode"]

        def ok(g: ToolCall, c: ToolCall) -> bool:
            return g.tool == c.tool and args_match(g.args, c.args, mode)

        n, m = len(calls), len(gold)

        def injective(left: list[ToolCall], right: list[ToolCall], flip: bool) -> bool:
            for chosen in itertools.permutations(range(len(right)), len(left)):
                if all(
                    ok(right[j], x) if not flip else ok(x, right[j])
                    for x, j in zip(left, chosen, strict=True)
                ):
                    return True
            return False

        verdict = {
            "strict": n == m and all(ok(g, c) for g, c in zip(gold, calls, strict=True)),
            "unordered": n == m and injective(calls, gold, False),
            "subset": n <= m and injective(calls, gold, False),
            "superset": m <= n and injective(gold, calls, True),
        }
        for mode_name in ("strict", "unordered", "subset", "superset"):
            if not verdict[mode_name]:
                out.append((f"match:{mode_name}", "match_failed", None))
    return out


def _feed(check: HardRulesCheck, calls: list[ToolCall], cuts: list[int]) -> list[Any]:
    findings = []
    bounds = [0, *sorted(set(cuts)), len(calls)]
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            chunk = [ToolCall(c.tool, c.args, result=c.result, index=c.index - bounds[0])
                     for c in calls[lo:hi]]  # fmt: skip
            findings += check.feed(Batch(calls=chunk, done=chunk))
    return findings


def _reindexed(calls: list[ToolCall]) -> list[ToolCall]:
    return [ToolCall(c.tool, c.args, result=c.result, index=i) for i, c in enumerate(calls)]


@settings(max_examples=300, deadline=None)
@given(
    raw=calls_st,
    orders=order_st,
    counts=count_st,
    allow=st.none() | st.lists(st.sampled_from(TOOLS), unique=True),
    flow=st.integers(0, 2),
    match=st.booleans(),
    mode=modes_st,
    gold_raw=gold_st,
    cuts=st.lists(st.integers(0, 14), max_size=4),
    parts=st.lists(st.integers(0, 14), max_size=3),
)
def test_whole_batches_and_parts_agree_with_the_plain_reading(
    raw: list[tuple[str, Any, Any]],
    orders: list[tuple[str, str]],
    counts: list[tuple[str | None, int | None, int | None]],
    allow: list[str] | None,
    flow: int,
    match: bool,
    mode: str,
    gold_raw: list[tuple[str, Any]],
    cuts: list[int],
    parts: list[int],
) -> None:
    spec = _spec(orders, counts, allow, flow, match, mode)
    rules = ruleset(spec)
    if not rules.hard:
        return
    calls = _calls(raw)
    gold = [ToolCall(t, a, index=i) for i, (t, a) in enumerate(gold_raw)]
    expected = _oracle(spec, calls, gold)

    def seen(check: HardRulesCheck) -> list[tuple[str, str, int | None]]:
        return [(v.rule, v.kind, v.index) for v in check.violations]

    whole = HardRulesCheck(rules, gold)
    found = whole.feed(Batch(calls=calls, done=calls)) if calls else []
    found += whole.finish()
    assert seen(whole) == expected
    assert [(f.kind, f.call_index) for f in found] == [(k, i) for _, k, i in expected]

    batched = HardRulesCheck(rules, gold)
    found_b = _feed(batched, calls, cuts) + batched.finish()
    assert seen(batched) == expected
    assert [f.message for f in found_b] == [f.message for f in found]
    assert batched.state() == whole.state()

    # parts: the first read by the main check, the others by part checks, merged in order
    bounds = [0, *sorted({p for p in parts if 0 < p < len(calls)}), len(calls)]
    main = HardRulesCheck(rules, gold)
    found_p = _feed(main, calls[: bounds[1]], [])
    merged = main.state()
    for lo, hi in itertools.pairwise(bounds[1:]):
        part = HardRulesCheck(rules, gold)
        part.begin_part()
        assert _feed(part, _reindexed(calls[lo:hi]), cuts) == []  # kept for the merge
        assert part.finish() == []
        later = part.state()
        found_p += merged.findings_between(later)
        merged = merged.merge(later)
    main.resume(merged)
    found_p += main.finish()
    assert seen(main) == expected
    assert [f.message for f in found_p] == [f.message for f in found]
    assert main.state() == whole.state()


def test_two_flow_rules_after_their_sources_keep_call_order_across_batches() -> None:
    """Once both rules have their source, a later batch's sink calls are violations of
    each rule, in call order (then rule id), as reading the trace in one batch gives."""
    spec = _spec([], [], None, 2, False, "exact")
    rules = ruleset(spec)
    raw: list[tuple[str, Any, Any]] = [
        ("read", {"path": PRIVATE}, None), ("b", {"q": 2}, None),
        ("c", {}, None), ("send", {}, None), ("c", {}, None), ("send", {}, None),
    ]  # fmt: skip
    calls = _calls(raw)
    whole = HardRulesCheck(rules)
    found = whole.feed(Batch(calls=calls, done=calls))
    batched = HardRulesCheck(rules)
    found_b = _feed(batched, calls, [2])
    expected = [
        ("data_flow[1]", 2), ("data_flow[0]", 3), ("data_flow[1]", 3),
        ("data_flow[1]", 4), ("data_flow[0]", 5), ("data_flow[1]", 5),
    ]  # fmt: skip
    assert [(v.rule, v.index) for v in whole.violations] == expected
    assert [(v.rule, v.index) for v in batched.violations] == expected
    assert [f.message for f in found_b] == [f.message for f in found]
    assert batched.state() == whole.state()
