"""A trace read in parts by several processes gives what one process gives."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from toolscore import api, evaluate_trace
from toolscore.calls import Finding, Location
from toolscore.parts import trace as parallel
from toolscore.pipeline import finish_sync
from toolscore.reports.json import CallSpool, FindingSpool, JsonReport, write_json_report

GOLD = [
    {"tool": "search", "args": {"q": "weather"}},
    {"tool": "fetch", "args": {"url": "https://x"}},
    {"tool": "search", "args": {"q": "news"}},
    {"tool": "write", "args": None},
]
RULES = [
    {"tool": "run_shell", "args": {"command": {"$contains": "rm -rf"}}, "reason": "no"},
    {"tool": "fetch", "args": {"url": {"$regex": "^http://"}}},
]
HARD_RULES = {
    "forbidden": RULES,
    "data_flow": {"sinks": ["write", "run_shell"], "sources": [{"tool": "fetch"}]},
    "order": [{"before": "search", "after": "write"}],
    "counts": [{"tool": "other", "max": 1}],
    "allow": ["search", "fetch", "write", "other"],
}
"""Every kind of hard rule a call can break, with the forbidden rules."""
KEY = "sk-ant-" + "aB3xY9" * 5
SECRET_TOOL = f"tool-{KEY}"
"""A tool whose name holds a credential: the hard rules' findings about it (the allowlist's)
reach the main process in a part's state, and are redacted there."""

call = st.fixed_dictionaries(
    {"tool": st.sampled_from(["search", "fetch", "run_shell", "write", "other", SECRET_TOOL])},
    optional={
        "args": st.sampled_from(
            [{}, {"q": "weather"}, {"q": "news"}, {"url": "http://x"}, {"url": "https://x"},
             {"command": "rm -rf /"}, {"token": KEY}, {"nested": {"k": [1, KEY]}}]
        ),
        "result": st.sampled_from(["ok", "", {"rows": [1, 2]}, None]),
        "error": st.sampled_from(["timeout", "boom"]),
        "duration": st.sampled_from([0.25, 1.5, 0]),
        "cost": st.sampled_from([0.001, 0.5]),
        "tag": st.sampled_from(["a", "b"]),  # an extra key: the call's metadata
    },
)  # fmt: skip
line = (
    call.map(json.dumps)
    | st.sampled_from(['{"name": "fetch", "arguments": {"url": "http://y"}}', "{oops", ""])
    | call.map(lambda c: json.dumps([c, c]))  # a list of calls on one line
)


def _write(tmp: Path, lines: list[str]) -> Path:
    path = tmp / "trace.jsonl"
    path.write_text("".join(f"{text}\n" for text in lines))
    return path


def _in_parts(
    path: Path,
    cuts: list[int],
    tmp: Path,
    per_process: int = 1,
    streamed: bool = False,
    rules: Any = RULES,
) -> tuple[dict[str, Any], Any, list[Any]]:
    """Evaluate ``path`` cut at the starts of lines ``cuts``, as ``toolscore eval`` does,
    each other process reading ``per_process`` parts; the calls go to a ``CallSpool`` for
    ``write_json_report``, or with ``streamed`` straight into a ``JsonReport`` (the CLI's
    way)."""
    data = path.read_bytes()
    starts = [0]
    for i, byte in enumerate(data):
        if byte == ord("\n"):
            starts.append(i + 1)
    bounds = sorted({0, *(starts[c] for c in cuts if 0 < c < len(starts) - 1), len(data)})
    plan = parallel.Plan(str(path), tuple(bounds), per_process)
    out = tmp / "parts.json"
    with contextlib.ExitStack() as stack:
        findings = stack.enter_context(FindingSpool(tmp))
        sink: CallSpool | JsonReport
        if streamed:
            sink = stack.enter_context(JsonReport(out, api.read_gold(GOLD)))
        else:
            sink = stack.enter_context(CallSpool(tmp))
        pipeline, gold, norm = api.open_run(
            GOLD, None, rules, strict=False, keep_calls=False, on_finding=findings, on_calls=sink
        )
        ruleset = api.read_rules(rules)
        parallel.run(
            pipeline,
            plan,
            lambda: api.builtin_checks(gold, ruleset, strict=False, keep_details=False),
        )
        finish_sync(pipeline)
        result = api.pipeline_result(pipeline, gold, norm, include_extras=True)
        if isinstance(sink, JsonReport):
            sink.finish(result, findings=findings)
        else:
            write_json_report(result, out, sink, findings=findings)
    return _comparable(result.to_dict()), _report(out), [f.to_json() for f in result.findings]


def _in_one(path: Path, tmp: Path, rules: Any = RULES) -> tuple[dict[str, Any], Any, list[Any]]:
    with CallSpool(tmp) as spool, FindingSpool(tmp) as findings:
        result = evaluate_trace(
            GOLD, path, "jsonl", forbidden=rules, on_calls=spool, on_finding=findings, workers=1
        )
        out = tmp / "one.json"
        write_json_report(result, out, spool, findings=findings)
    return _comparable(result.to_dict()), _report(out), [f.to_json() for f in result.findings]


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    """Latency and cost totals are sums of per-part sums: equal within rounding."""
    metrics = record["metrics"]
    for key in ("latency_metrics", "cost_metrics"):
        block = metrics.get(key)
        if block is not None:
            for name, value in list(block.items()):
                if isinstance(value, float):
                    block[name] = round(value, 9)
                elif isinstance(value, dict):
                    block[name] = {k: round(v, 9) for k, v in value.items()}
    return record


def _report(path: Path) -> Any:
    report = json.loads(path.read_bytes())
    del report["timestamp"]
    return _comparable(report)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(line, min_size=1, max_size=40),
    cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4),
    last_newline=st.booleans(),
    per_process=st.sampled_from([1, 2, 3]),
    streamed=st.booleans(),
)
def test_parts_give_what_one_process_gives(
    tmp_path: Path,
    lines: list[str],
    cuts: list[float],
    last_newline: bool,
    per_process: int,
    streamed: bool,
) -> None:
    # plan() only splits a file whose start it detected as custom calls, so it has a call
    path = _write(tmp_path, ['{"tool": "search"}', *lines])
    if not last_newline:
        path.write_bytes(path.read_bytes().rstrip(b"\n"))
    at = sorted({round(c * len(lines)) for c in cuts} & set(range(1, len(lines) + 1)))
    event(f"parts: {len(at) + 1}, {per_process} a process")
    assert _in_parts(path, at, tmp_path, per_process, streamed) == _in_one(path, tmp_path)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(line, min_size=1, max_size=40),
    cuts=st.lists(st.floats(0, 1), min_size=1, max_size=4),
    per_process=st.sampled_from([1, 2]),
)
def test_parts_with_hard_rules_give_the_findings_in_one_process_order(
    tmp_path: Path, lines: list[str], cuts: list[float], per_process: int
) -> None:
    # a later part's hard-rule violations reach the main process in the part's state, not
    # with its other findings: they still go out among them, in input and check order
    path = _write(tmp_path, ['{"tool": "search"}', *lines])
    at = sorted({round(c * len(lines)) for c in cuts} & set(range(1, len(lines) + 1)))
    one = _in_one(path, tmp_path, HARD_RULES)
    assert _in_parts(path, at, tmp_path, per_process, rules=HARD_RULES) == one


def test_hard_rule_findings_of_a_part_are_redacted(tmp_path: Path) -> None:
    calls = [{"tool": "search"}, {"tool": "fetch"}, {"tool": SECRET_TOOL}, {"tool": "write"}]
    path = _write(tmp_path, [json.dumps(c) for c in calls])
    record, report, findings = _in_parts(path, [2], tmp_path, rules=HARD_RULES)
    assert (record, report, findings) == _in_one(path, tmp_path, HARD_RULES)
    assert [(f["call_index"], f["kind"]) for f in findings if f["check"] == "rules"] == [
        (2, "tool_not_allowed"),
        (3, "data_flow"),
    ]
    assert KEY not in json.dumps(findings) and KEY not in json.dumps(report["findings"])


def test_hard_rule_findings_of_a_part_keep_their_place(tmp_path: Path) -> None:
    fetch = {"tool": "fetch", "args": {"url": "https://x"}}
    write = {"tool": "write", "args": {}, "error": "denied"}
    path = _write(tmp_path, [json.dumps(c) for c in [fetch, write, write, fetch, write]])
    parts = _in_parts(path, [2], tmp_path, rules=HARD_RULES)
    assert parts == _in_one(path, tmp_path, HARD_RULES)
    kinds = [(f["call_index"], f["check"], f["kind"]) for f in parts[2]]
    # at one call: the errors check's finding, then the hard rules' (the checks' order)
    assert kinds.index((2, "errors", "failed_call")) < kinds.index((2, "rules", "data_flow"))
    assert kinds.index((2, "rules", "data_flow")) < kinds.index((4, "errors", "failed_call"))


def test_a_retry_across_a_boundary_is_found(tmp_path: Path) -> None:
    failed = {"tool": "fetch", "args": {"url": "https://x"}, "error": "timeout"}
    path = _write(tmp_path, [json.dumps(failed)] * 4)
    parts = _in_parts(path, [1, 2, 3], tmp_path)
    assert parts == _in_one(path, tmp_path)
    efficiency = parts[0]["metrics"]["efficiency_metrics"]
    assert efficiency["retry_after_error_count"] == 3
    assert efficiency["identical_count"] == 3
    messages = [f["message"] for f in parts[2]]
    assert "call 3 fetch repeats failed call 2 with the same arguments" in messages
    lines = [f["location"]["line"] for f in parts[2] if f["kind"] == "retry_after_error"]
    assert lines == [2, 3, 4]


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("per_process", "failing", "warned"),
    [
        (1, {1, 2}, 2),
        (2, {1}, 1),  # only the failed part is read here: the reader goes on with the next
        (2, {2}, 1),
    ],
)
def test_parts_whose_process_fails_are_read_by_the_main_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    per_process: int,
    failing: set[int],
    warned: int,
    streamed: bool,
) -> None:
    lines = [json.dumps({"tool": "search", "args": {"q": str(i)}, "error": "x"}) for i in range(30)]
    path = _write(tmp_path, lines)
    expected = _in_one(path, tmp_path)
    read_part = parallel.read_part
    main = os.getpid()

    def flaky(plan: parallel.Plan, k: int, *args: Any) -> Any:
        if k in failing and os.getpid() != main:  # fails in its own process only
            raise RuntimeError(f"part {k} fails")
        return read_part(plan, k, *args)

    monkeypatch.setattr(parallel, "read_part", flaky)
    with pytest.warns(RuntimeWarning, match="could not be read in a process of its own") as got:
        assert _in_parts(path, [10, 20], tmp_path, per_process, streamed) == expected
    assert len(got) == warned


def test_plan_cuts_large_custom_json_lines_at_line_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1000)
    path = _write(tmp_path, [json.dumps({"tool": "t", "args": {"i": i}}) for i in range(500)])
    data = path.read_bytes()
    split = parallel.plan(path, "auto", 3)
    # the main process's part, then a big and a small part for each of the other two
    assert split is not None and split.parts == 5 and split.per_process == 2
    assert split.processes == 2
    sizes = [b - a for a, b in itertools.pairwise(split.bounds)]
    assert sizes[2] < sizes[1] / 4 and sizes[4] < sizes[3] / 4
    assert abs(sizes[0] - sizes[1]) < len(data) / 20
    assert split.bounds[0] == 0 and split.bounds[-1] == len(data)
    assert all(data[b - 1 : b] == b"\n" for b in split.bounds[1:-1])
    assert parallel.plan(path, "auto", 1) is None
    assert parallel.plan(str(path), "openai", 3) is None  # not the custom format
    assert parallel.plan("-", "auto", 3) is None
    small = _write(tmp_path / "..", ["{}"])
    assert parallel.plan(small, "auto", 3) is None
    doc = tmp_path / "t.json"
    doc.write_text(json.dumps([{"tool": "t"}] * 200))
    assert parallel.plan(doc, "auto", 3) is None  # a JSON document is read in one


def test_eval_with_workers_writes_the_same_report(tmp_path: Path) -> None:
    # past 2 x 16 MB, so that `toolscore eval` really forks
    record = {
        "tool": "search",
        "args": {"q": "weather", "blob": "x" * 900},
        "result": "ok",
        "duration": 0.5,
    }
    text = "".join(
        json.dumps({**record, "error": "t"} if i % 97 == 0 else record) + "\n"
        for i in range(34_000)
    )
    path = tmp_path / "big.jsonl"
    path.write_text(text)
    assert path.stat().st_size > 2 * parallel.PARALLEL_MIN_BYTES
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(GOLD))
    reports = []
    for workers in ("1", "2"):
        out = tmp_path / f"r{workers}.json"
        done = subprocess.run(
            [sys.executable, "-m", "toolscore", "eval", str(gold), str(path), "-o", str(out),
             "--workers", workers],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        reports.append(_report(out))
    assert reports[0] == reports[1]
    assert reports[1]["summary"]["trace_calls_count"] == 34_000
    assert len(reports[1]["calls"]["actual"]) == 34_000
    assert reports[1]["summary"]["failed_calls"] == math.ceil(34_000 / 97)


def test_evaluate_trace_with_workers_gives_the_result_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 2000)
    lines = [
        json.dumps({"tool": t, "args": {"q": "weather", "i": i}, "error": "x" if i % 5 else None})
        for i, t in enumerate(["search", "fetch", "write"] * 60)
    ]
    path = _write(tmp_path, lines)
    assert parallel.plan(path, "auto", 3) is not None
    seen: list[int] = []
    one = evaluate_trace(GOLD, path, forbidden=RULES, workers=1)
    parts = evaluate_trace(GOLD, path, forbidden=RULES, workers=3, on_bytes=seen.append)
    assert _comparable(parts.to_dict()) == _comparable(one.to_dict())
    assert [f.to_json() for f in parts.findings] == [f.to_json() for f in one.findings]
    assert sum(seen) == path.stat().st_size  # every part's bytes, told to the main process


def test_a_finding_moves_by_its_fields_and_its_message_follows() -> None:
    retry = Finding(
        "errors", "retry_after_error", "warning", None, 2, "fetch", Location("t.jsonl", 3),
        template="call {call} {tool} repeats failed call {previous} with the same arguments",
    )  # fmt: skip
    bad = Finding(
        "input", "malformed_line", "error", None, None, None, Location("t.jsonl", 7),
        detail="not JSON", template="{location}: {detail}",
    )  # fmt: skip
    plain = Finding("secrets", "aws_access_key", "error", "call 1 x: key", 0, "x", None, "AKIA...")
    for finding in (retry, bad, plain):
        assert Finding.from_values(finding.values()) == finding
        assert finding.moved(0, 0) == finding
    assert retry.message == "call 3 fetch repeats failed call 2 with the same arguments"
    moved = Finding.from_values(retry.values()).moved(10, 20)
    assert moved.message == "call 13 fetch repeats failed call 12 with the same arguments"
    assert (moved.call_index, moved.location) == (12, Location("t.jsonl", 23))
    assert bad.moved(10, 20).message == "t.jsonl:27: not JSON"
    # a plain message is text, not fields: it stays as it is, only the fields move
    assert plain.moved(10, 20).message == "call 1 x: key"
    assert plain.moved(10, 20).call_index == 10
    # a brace in a field is text, not a placeholder
    odd = Finding("x", "y", "info", None, 0, "t", detail="{call}", template="{tool}: {detail}")
    assert odd.message == "t: {call}"


def test_a_file_whose_calls_name_traces_is_read_by_one_process(tmp_path: Path) -> None:
    """Parts would each see one trace id: such a file is read whole, so a second id is said
    (never merged silently) whatever ``workers`` asks."""
    rows = [{"trace_id": t, "tool": "search", "args": {"q": "x" * 200}} for t in "ab" * 200]
    path = _write(tmp_path, [json.dumps(r) for r in rows])
    old = parallel.PARALLEL_MIN_BYTES
    parallel.PARALLEL_MIN_BYTES = 1024
    try:
        assert parallel.plan(str(path), "auto", 2) is None
        result = evaluate_trace([{"tool": "search"}], path, workers=2)
    finally:
        parallel.PARALLEL_MIN_BYTES = old
    assert [f.kind for f in result.input_findings] == ["several_traces"]
