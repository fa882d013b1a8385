"""Per-kind records (forbidden calls, credentials) are capped in memory with exact counts; the
JSON report and --findings get every finding."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from _cli import run_cli
from toolscore import evaluate_trace
from toolscore.calls import ToolCall
from toolscore.capped import MAX_RECORDS
from toolscore.checks.policy import PolicyCheck, policy_check

KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
RULES = [{"tool": "run_shell", "args": {"command": {"$regex": "rm -rf"}}, "reason": "destructive"}]
N = MAX_RECORDS + 2_000


def _trace(tmp_path: Path) -> tuple[Path, Path, Path]:
    trace = tmp_path / "trace.jsonl"
    with open(trace, "w", encoding="utf-8") as fh:
        for i in range(N):
            call = {"tool": "run_shell", "args": {"command": f"rm -rf /x{i} {KEY}"}}
            fh.write(json.dumps(call) + "\n")
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "run_shell"}]', encoding="utf-8")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES), encoding="utf-8")
    return gold, trace, rules


def test_records_are_capped_and_counts_exact(tmp_path: Path) -> None:
    gold, trace, rules = _trace(tmp_path)
    result = evaluate_trace(str(gold), str(trace), forbidden=str(rules))
    policy = result.metrics["policy_metrics"]
    assert policy["violation_count"] == N
    assert len(result.policy_violations) == MAX_RECORDS
    assert policy["violations_omitted"] == N - MAX_RECORDS
    security = result.metrics["security_metrics"]
    assert security["secret_count"] == N
    assert len(security["secrets"]) == MAX_RECORDS
    assert security["secrets_omitted"] == N - MAX_RECORDS


def test_the_cli_counts_and_streams_every_finding(tmp_path: Path) -> None:
    gold, trace, rules = _trace(tmp_path)
    report, findings = tmp_path / "r.json", tmp_path / "f.jsonl"
    proc = run_cli(
        "eval", str(gold), str(trace), "--forbidden", str(rules),
        "--fail-on-violations", "-o", str(report),
    )  # fmt: skip
    assert proc.returncode == 1
    assert f"ERROR {2 * N} violation(s) found" in proc.stderr
    record = json.loads(report.read_text(encoding="utf-8"))
    assert record["summary"]["policy_violations"] == N
    kinds = [f["kind"] for f in record["findings"]]
    assert kinds.count("forbidden_call") == N
    assert kinds.count("github_token") == N
    watch = run_cli("watch", str(trace), "--forbidden", str(rules), "--findings", str(findings))
    lines = findings.read_text(encoding="utf-8").splitlines()
    assert sum('"forbidden_call"' in line for line in lines) == N, watch.stderr


def test_merged_parts_keep_the_cap_and_the_count() -> None:
    def checked(calls: range) -> PolicyCheck:
        policy = policy_check([{"tool": "run_shell"}])
        for i in calls:
            policy.check_call(ToolCall("run_shell", {"command": "x"}, index=i))
        policy.calls = len(calls)
        return policy

    first, later = checked(range(MAX_RECORDS - 10)), checked(range(100))
    assert later.violation_count == 100
    merged = first.state().merge(later.state())
    assert merged.violation_count == MAX_RECORDS + 90
    assert len(merged.violations) == MAX_RECORDS
    assert merged.violations[-1]["index"] == MAX_RECORDS - 1  # the later part's 10th, moved
    assert merged.report()["violations_omitted"] == 90


def test_a_batch_of_findings_is_spooled_without_holding_each_record() -> None:
    """orjson's result takes 4 KiB whatever its length: 4,000 findings held as a list of
    records took 16 MB on their way to the report; one buffer takes what they say."""
    import tracemalloc

    from toolscore.calls import Finding, Location
    from toolscore.reports.json import FindingSpool, joined

    found = [
        Finding("policy", "forbidden_call", "error", None, i, "run_shell",
                Location("t.jsonl", i + 1), rule=0, detail="delete",
                template="call {call} {tool} matches forbidden rule {rule}: {detail}")
        for i in range(4_000)
    ]  # fmt: skip
    texts = [b'{"a":1}', b'{"b":[2]}']
    out, n = joined(iter(texts), b",\n")
    assert (bytes(out), n) == (b'{"a":1},\n{"b":[2]},\n', 2)
    with FindingSpool() as spool:
        spool(found[:10])  # the writer thread and the file, made before measuring
        tracemalloc.start()
        try:
            spool(found)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert spool.count == 4_010
    size = sum(len(orjson.dumps(f.to_json())) + 6 for f in found)
    assert peak < 3 * size < 4_000 * 4096 // 4, (peak, size)


def test_findings_memory_benchmark_runs_within_its_target() -> None:
    """benchmarks/findings_memory.py: 60,000 calls with a forbidden call each peak within
    1.25x of the same calls without, in fresh processes (the closing figure is 500,000)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "findings_memory.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--calls", "60000"], capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "findings counted: 60,000" in proc.stdout


def test_the_findings_spool_writes_any_field_value(tmp_path: Path) -> None:
    """A finding's line is written by orjson without options; a field a user's check filled
    with what that refuses (an integer beyond 64 bits, an object) goes the long way, as any
    value in the report does."""
    from toolscore.calls import Finding, Location
    from toolscore.reports.json import FindingSpool, dumps

    found = [
        Finding("policy", "forbidden_call", "error", None, 3, "run_shell", Location("t", 4),
                rule=0, detail="delete", template="call {call} {tool}: {detail}"),
        Finding("mine", "odd", "warning", 2**70, 5, "t", None),
        Finding("mine", "odd", "warning", None, 6, "t", None, preview=object()),  # type: ignore[arg-type]
    ]  # fmt: skip
    with FindingSpool(tmp_path) as spool:
        spool(found)
        out = tmp_path / "findings"
        spool.save(out)
    lines = out.read_bytes().split(b",\n    ")
    assert lines[:3] == [dumps(f.to_json()) for f in found] and lines[3] == b""
    assert orjson.loads(lines[0])["message"] == "call 4 run_shell: delete"
    assert json.loads(lines[1])["message"] == 2**70
    assert json.loads(lines[2])["preview"].startswith("<object object")


def test_a_dataset_record_counts_every_finding_past_the_kept_ones(tmp_path: Path) -> None:
    # a trace with more findings than a result keeps: its record's counts are exact
    from toolscore.dataset import evaluate_dataset
    from toolscore.pipeline import MAX_KEPT_FINDINGS

    n = MAX_KEPT_FINDINGS + 500
    traces = tmp_path / "traces.jsonl"
    with open(traces, "w", encoding="utf-8") as fh:
        for i in range(n):
            call = {"trace_id": "t1", "tool": "run_shell", "args": {"command": f"ls {i}"}}
            fh.write(json.dumps({**call, "result": "Error: no", "is_error": True}) + "\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"trace_id": "t1", "expected": [{"tool": "run_shell"}]}\n', encoding="utf-8")
    result = evaluate_dataset(str(gold), str(traces))
    (record,) = list(result)
    assert record.findings["errors/failed_call"] == n
    assert record.failed_calls == n
    result.close()
