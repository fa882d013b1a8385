"""A later part's hard-rules state merged the way the parallel reader merges it: pickled,
relocated to the part's lines (kept as an offset, applied while merging) and asked for the
findings between before the merge (made once). Findings, with their lines, and states are
the whole trace's."""

from __future__ import annotations

import pickle
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_conformance_rules import KEY, TOOLS
from test_conformance_rules import RULES as CONFORMANCE_RULES

from toolscore.calls import Batch, Finding, Location, ToolCall
from toolscore.checks.hardrules import HardRulesCheck
from toolscore.hardrules import ruleset

# the conformance test's rules and tools, without the match modes (no expected calls here)
RULES = {k: v for k, v in CONFORMANCE_RULES.items() if k not in ("match", "arguments")}
SOURCE = "trace.jsonl"


def _call(tool: str, g: int, shift: int, secret: bool) -> ToolCall:
    """The trace's call ``g``, read ``shift`` calls (and lines) after its part's start."""
    args: dict[str, Any] = {"q": "x" if g % 4 else 3, "i": g}
    if tool == "read_file":
        args = {"path": "/home/u/.ssh/id_rsa" if g % 3 == 0 else "README.md"}
    result = {"token": KEY} if tool == "get_env" and secret else "ok"
    i = g - shift
    return ToolCall(tool, args, result=result, index=i, location=Location(SOURCE, i + 1))


def _feed(check: HardRulesCheck, calls: list[ToolCall], batch: int) -> list[Finding]:
    found: list[Finding] = []
    for at in range(0, len(calls), batch):
        chunk = calls[at : at + batch]
        found.extend(check.feed(Batch(calls=chunk, done=list(chunk))))
    return found


@settings(max_examples=80, deadline=None)
@given(
    tools=st.lists(st.sampled_from(TOOLS), min_size=2, max_size=60),
    secrets=st.lists(st.booleans(), min_size=60, max_size=60),
    cut_at=st.floats(0.05, 0.95),
    batch=st.integers(1, 9),
)
def test_a_relocated_part_merges_to_the_whole(
    tools: list[str], secrets: list[bool], cut_at: float, batch: int
) -> None:
    rules = ruleset(RULES)
    n = len(tools)
    cut = max(1, min(n - 1, int(n * cut_at)))
    whole_calls = [_call(t, g, 0, secrets[g]) for g, t in enumerate(tools)]
    whole = HardRulesCheck(rules)
    whole_found = _feed(whole, whole_calls, batch)

    first = HardRulesCheck(rules)
    found = _feed(first, whole_calls[:cut], batch)
    later = HardRulesCheck(rules)
    later.begin_part()
    # a part read alone numbers its calls and its lines from its own start
    part = [_call(t, g, cut, secrets[g]) for g, t in enumerate(tools) if g >= cut]
    assert _feed(later, part, batch) == []
    sent = pickle.loads(pickle.dumps(later.state())).relocated(cut)
    merged_first = first.state()
    found += merged_first.findings_between(sent)
    merged = merged_first.merge(sent)  # the merge findings_between made, not made again
    assert found == whole_found
    assert [f.location for f in found] == [f.location for f in whole_found]
    assert merged == whole.state()
    assert merged == replace(first.state()).merge(sent)  # a fresh merge (a copy remembers none)
    assert merged.metrics() == whole.state().metrics()

    # a relocated state made into a running one (a later part merged into another later
    # part) applies its offset too: the locations it keeps are the whole's
    again = HardRulesCheck(rules)
    again.begin_part()
    _feed(again, part, batch)
    state = pickle.loads(pickle.dumps(again.state())).relocated(cut)
    assert state.seq is not None and state.flow is not None
    settled_seq, settled_flow = state.seq.settled(), state.flow.settled()
    assert settled_seq.moved_lines == 0 and settled_flow.moved_lines == 0
    for v in (*settled_seq.violations, *settled_flow.violations):
        assert v.index is not None and v.where == Location(SOURCE, v.index + cut + 1)
    for i, loc in (*settled_seq.places, *settled_flow.places):
        assert loc == Location(SOURCE, i + cut + 1)
