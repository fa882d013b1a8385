"""One verdict through every door: the same gold, traces and rules give the same score
(1e-9), violation count and pass verdict whichever way they are evaluated.

Doors held together here, on random gold, traces (empty ones included) and rules (a rule
file's, and a keyed gold line's own):

- ``evaluate`` (in memory), the reference;
- ``evaluate_trace`` (a gold file that is an object with its own rules, a trace file);
- ``evaluate_stream`` and ``watch`` (the async drivers);
- ``watch_sessions`` (interleaved traces, a pipeline per session);
- ``evaluate_dataset`` (a keyed gold whose lines carry rules, one multi-trace file; inline
  in the property test, the process pool and the command line in the tests below it).

``TOOLSCORE_DOOR_EXAMPLES`` raises the number of examples (1,000 once, by hand).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import run_cli
from _secrets import PLANTED
from toolscore import evaluate, evaluate_stream, evaluate_trace
from toolscore.dataset import evaluate_dataset
from toolscore.gold import Gold, gold_from_dicts
from toolscore.hardrules.spec import ruleset_from_json
from toolscore.live import watch
from toolscore.live_sessions import watch_sessions
from toolscore.sessions import ClosedSession
from toolscore.verdict import Verdict

EXAMPLES = int(os.environ.get("TOOLSCORE_DOOR_EXAMPLES", "60"))
TOOLS = ("search", "fetch", "rm", "send")
KEY = PLANTED["github_token"][0]

_args = st.dictionaries(
    st.sampled_from(("q", "url", "n")),
    st.one_of(st.sampled_from(("x", "y", KEY)), st.integers(0, 2)),
    max_size=2,
)
_gold_call = st.fixed_dictionaries({"tool": st.sampled_from(TOOLS), "args": _args})
_call = st.fixed_dictionaries(
    {"tool": st.sampled_from(TOOLS), "args": _args},
    optional={  # every way a call is read as failed, and as not
        "is_error": st.sampled_from((True, False, "yes")),
        "error": st.sampled_from(("boom", "", True, False, 0, {"code": 1})),
        "result": st.sampled_from(
            ("ok", "Error: no", {"status": 500}, {"error": "x"}, {"success": False}, {"n": 1})
        ),
    },
)
_file_rules = st.fixed_dictionaries(
    {},
    optional={
        "forbidden": st.lists(
            st.fixed_dictionaries({"tool": st.sampled_from(TOOLS)}), min_size=0, max_size=2
        ),
        "max_calls": st.integers(1, 4),
        "failures": st.fixed_dictionaries(
            {"remove": st.lists(st.sampled_from(("is_error", "error", "result.status")))}
        ),
    },
)
_line_rules = st.fixed_dictionaries(
    {},
    optional={
        "match": st.lists(
            st.sampled_from(("strict", "unordered", "subset", "superset")),
            min_size=1,
            max_size=2,
            unique=True,
        ),
        "rules": st.fixed_dictionaries(
            {}, optional={"allow": st.lists(st.sampled_from(TOOLS), min_size=1, unique=True)}
        ),
    },
)
_case = st.tuples(st.lists(_gold_call, max_size=3), st.lists(_call, max_size=5), _line_rules)
_dataset = st.tuples(st.lists(_case, min_size=1, max_size=4), _file_rules)


def _same(got: Verdict, want: Verdict, door: str) -> None:
    assert got.score is not None and want.score is not None, door
    assert abs(got.score - want.score) <= 1e-9, door
    assert got.violations.total == want.violations.total, (door, got, want)
    # (the share of required calls made without failing: the failed-call reading's)
    assert got.required_call_recall == want.required_call_recall, (door, got, want)
    assert got.passed == want.passed, (door, got, want)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _run_doors(tmp: Path, cases: list[Any], file_rules: dict[str, Any]) -> None:
    rule_file = tmp / "rules.json"
    rule_file.write_text(json.dumps(file_rules), "utf-8")
    wants: dict[str, Verdict] = {}
    rows: list[dict[str, Any]] = []
    gold_lines: list[dict[str, Any]] = []
    for n, (gold, trace, own) in enumerate(cases):
        trace_id = f"t{n}"
        want = evaluate(gold, trace, forbidden=file_rules, rules=_own(own)).verdict()
        wants[trace_id] = want
        gold_lines.append({"trace_id": trace_id, "expected": gold, **own})
        rows += [{"trace_id": trace_id, **call} for call in trace]
        # one trace through the file door: a gold object with its own rules, a trace file
        gold_file = tmp / f"{trace_id}.gold.json"
        gold_file.write_text(json.dumps({"calls": gold, **own}), "utf-8")
        trace_file = tmp / f"{trace_id}.json"
        trace_file.write_text(json.dumps(trace), "utf-8")
        _same(evaluate_trace(gold_file, trace_file, forbidden=rule_file).verdict(), want, "file")
        # the async drivers
        streamed = anyio.run(_stream, gold_file, trace_file, rule_file)
        _same(streamed.verdict(), want, "evaluate_stream")
        live = anyio.run(_watch, gold_file, trace_file, rule_file)
        _same(live.verdict(), want, "watch")
    gold_path = _write_jsonl(tmp / "gold.jsonl", gold_lines)
    traces_path = _write_jsonl(tmp / "traces.jsonl", rows)
    # a dataset: a keyed gold whose lines carry their own rules; the empty trials included
    result = evaluate_dataset(
        str(gold_path), str(traces_path), forbidden=str(rule_file), engine="inline"
    )
    records = {r.trace_id: r for r in result if r.status != "no_gold"}
    assert set(records) == set(wants)
    # (a traces file without a line, when every trial is empty, is a trace without gold)
    assert all(r.calls == 0 for r in result if r.status == "no_gold")
    for trace_id, want in wants.items():
        record = records[trace_id]
        got = Verdict(
            record.score,
            record.grade,
            record.required_call_recall,
            want.violations.__class__(forbidden=record.violations),
            record.passed,
            want.criterion,
        )
        _same(got, want, f"dataset {trace_id}")
    result.close()
    # sessions: the same traces interleaved in one stream, a pipeline each
    if rows:
        closed = anyio.run(_sessions, gold_lines, traces_path, rule_file)
        for trace_id, done in closed.items():
            _same(done.verdict, wants[trace_id], f"session {trace_id}")
        assert set(closed) == {r["trace_id"] for r in rows}


def _own(own: dict[str, Any]) -> dict[str, Any] | None:
    spec: dict[str, Any] = dict(own.get("rules") or {})
    if "match" in own:
        spec["match"] = own["match"]
    return spec or None


async def _stream(gold: Path, trace: Path, rules: Path) -> Any:
    return await evaluate_stream(gold, trace, forbidden=rules)


async def _watch(gold: Path, trace: Path, rules: Path) -> Any:
    async with watch(trace, gold=gold, forbidden=rules) as run:
        return await run.wait()


async def _sessions(
    gold_lines: list[dict[str, Any]], traces: Path, rules: Path
) -> dict[str, ClosedSession]:
    golds: dict[str, Gold] = {}
    for line in gold_lines:
        own = _own(line)
        golds[line["trace_id"]] = Gold(
            gold_from_dicts(line["expected"]), None if own is None else ruleset_from_json(own)
        )
    closed: dict[str, ClosedSession] = {}
    async with watch_sessions(
        traces, trace_key="trace_id", gold_for=golds.get, forbidden=rules
    ) as run:
        async for event in run:
            if isinstance(event, ClosedSession):
                closed[event.session] = event
    return closed


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=_dataset)
def test_every_door_gives_the_same_verdict(tmp_path_factory: Any, data: Any) -> None:
    cases, file_rules = data
    _run_doors(tmp_path_factory.mktemp("doors"), cases, file_rules)


def _fixed_dataset(tmp: Path, n: int) -> tuple[Path, Path, Path, dict[str, Verdict]]:
    """A seeded dataset of ``n`` traces (a fifth of them without a call) and its verdicts."""
    import random

    rng = random.Random(7)
    file_rules = {"forbidden": [{"tool": "rm"}], "max_calls": 4}
    rule_file = tmp / "rules.json"
    rule_file.write_text(json.dumps(file_rules), "utf-8")
    gold_lines, rows, wants = [], [], {}
    for i in range(n):
        gold = [{"tool": rng.choice(TOOLS), "args": {"q": rng.choice("xy")}} for _ in range(2)]
        trace = [] if i % 5 == 0 else [
            {"tool": rng.choice(TOOLS), "args": {"q": rng.choice("xy")}}
            for _ in range(rng.randint(1, 6))
        ]  # fmt: skip
        own = {"match": ["superset"]} if i % 3 == 0 else {}
        trace_id = f"task{i // 4}/trial{i % 4}"
        wants[trace_id] = evaluate(gold, trace, forbidden=file_rules, rules=_own(own)).verdict()
        gold_lines.append({"trace_id": trace_id, "expected": gold, **own})
        rows += [{"trace_id": trace_id, **call} for call in trace]
    return (
        _write_jsonl(tmp / "gold.jsonl", gold_lines),
        _write_jsonl(tmp / "traces.jsonl", rows),
        rule_file,
        wants,
    )


def test_the_process_pool_and_the_command_line_agree_with_evaluate(tmp_path: Path) -> None:
    gold, traces, rules, wants = _fixed_dataset(tmp_path, 120)
    pool = evaluate_dataset(
        str(gold), str(traces), forbidden=str(rules), engine="local", workers=2, part_bytes=2_000
    )
    records = {r.trace_id: r for r in pool}
    assert len(records) == len(wants) == 120
    violations = 0
    for trace_id, want in wants.items():
        record = records[trace_id]
        assert record.score == pytest.approx(want.score, abs=1e-9)
        assert (record.violations, record.passed) == (want.violations.total, want.passed)
        violations += want.violations.total
    assert pool.aggregate.violations == violations > 0
    assert pool.pass_rate == sum(bool(w.passed) for w in wants.values()) / len(wants)
    pool.close()
    out = tmp_path / "report.json"
    proc = run_cli(
        "eval", str(gold), str(traces), "--forbidden", str(rules), "-o", str(out),
        "--fail-on-violations",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # violations, as counted by evaluate
    summary = json.loads(out.read_text("utf-8"))["summary"]
    assert summary["violations"] == violations


def test_one_trace_through_the_command_line(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"calls": [{"tool": "search"}], "match": ["superset"]}))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([{"tool": "fetch", "args": {}}]))
    want = evaluate([{"tool": "search"}], [{"tool": "fetch", "args": {}}], rules={
        "match": ["superset"]
    }).verdict()  # fmt: skip
    out = tmp_path / "r.json"
    proc = run_cli("eval", str(gold), str(trace), "-o", str(out), "--fail-on-violations")
    assert proc.returncode == 1, proc.stderr  # the gold object's match rule is broken
    summary = json.loads(out.read_text("utf-8"))["summary"]
    assert summary["violations"] == want.violations.total == 1
    assert summary["passed"] is want.passed is False
    assert summary["score"] == pytest.approx(want.score, abs=1e-9)
