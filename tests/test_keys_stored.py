"""Ids and names holding a key, where they are stored: a baseline keeps them redacted with a
hash of the raw text (and a run still matches them exactly); a dataset's per-trace record
redacts its trace id, task, source file and tool names (its JSON line and its Parquet row)."""

from __future__ import annotations

import json
from pathlib import Path

from _secrets import PLANTED, assert_no_secrets
from toolscore.baseline import (
    TraceSummary,
    baseline_name,
    compare,
    finding_key,
    load_baseline,
    write_baseline,
)
from toolscore.calls import Finding
from toolscore.dataset.records import TraceRecord, record_fields, record_line, record_lines

KEY = PLANTED["github_token"][0]
OTHER = KEY[:12] + "Qq1Ww2Ee3R" + KEY[22:]  # another key with the same preview


def _summary(findings: dict[str, int] | None = None, score: float = 1.0) -> TraceSummary:
    return TraceSummary(score=score, grade="A", required=(1, 1), findings=findings or {})


def test_baseline_name_redacts_hashes_and_is_idempotent() -> None:
    assert baseline_name("task-1/trial-2") == "task-1/trial-2"
    name = baseline_name(f"run-{KEY}")
    assert name.startswith("run-[REDACTED github_token: ghp_…Vb] #") and KEY not in name
    assert baseline_name(name) == name
    assert baseline_name(f"run-{OTHER}") != name  # two keys stay two traces


def test_a_baseline_keeps_no_key_and_a_run_still_matches_it(tmp_path: Path) -> None:
    tool_key = finding_key(Finding("secrets", "github_token", "error", "m", 0, f"send_{KEY}"))
    assert KEY not in tool_key
    runs = {f"run-{KEY}": _summary({tool_key: 1}), f"run-{OTHER}": _summary(score=0.5)}
    path = tmp_path / "b.json"
    write_baseline(path, runs)
    text = path.read_text("utf-8")
    assert_no_secrets(text)
    assert KEY[4:] not in text and OTHER[4:] not in text
    loaded = load_baseline(path)
    same = compare(loaded, runs)
    assert same.passed and not same.notes, same.lines()
    worse = dict(runs)
    worse[f"run-{OTHER}"] = _summary(score=0.1)
    result = compare(loaded, worse)
    assert [r.kind for r in result.regressions] == ["score", "score"]  # the trace, the mean
    assert_no_secrets("\n".join(result.lines()))


def test_a_baseline_written_with_raw_ids_still_matches(tmp_path: Path) -> None:
    # a file from before ids were redacted: read, its ids and keys are named as now
    raw_key = f"secrets:github_token:send_{KEY}"
    path = tmp_path / "old.json"
    entries = {
        f"run-{KEY}": _summary({raw_key: 1}).to_json(),
        "plain": _summary().to_json(),
    }
    path.write_text(
        json.dumps({"aggregate": {}, "format": "toolscore-baseline", "traces": entries,
                    "version": 1}),
        encoding="utf-8",
    )  # fmt: skip
    loaded = load_baseline(path)
    assert_no_secrets(repr(loaded.traces))
    now = {f"run-{KEY}": _summary({baseline_name(raw_key): 1}), "plain": _summary()}
    assert compare(loaded, now).passed


def test_per_trace_records_redact_ids_names_and_files() -> None:
    record = TraceRecord(
        trace_id=f"run-{KEY}",
        task=f"task-{KEY}",
        source=f"traces/{KEY}.jsonl",
        tools={f"send_{KEY}": [2, 1, 0], f"send_{OTHER}": [1, 0, 0], "fetch": [1, 0, 0]},
        findings={"secrets/github_token": 2},
    )
    line = record_line(record).decode()
    assert_no_secrets(line)
    data = json.loads(line)
    assert data["trace_id"].startswith("run-[REDACTED github_token: ")
    assert data["source"].startswith("traces/[REDACTED")
    # two tools alike once redacted are one row, their counts summed
    assert sorted(data["tools"].values()) == [[1, 0, 0], [3, 1, 0]]
    assert record.trace_id == f"run-{KEY}"  # the record itself is untouched
    plain = TraceRecord(trace_id="t1", task="t", tools={"fetch": [1, 0, 0]})
    assert record_fields(plain)["tools"] is not None and record_fields(plain)["trace_id"] == "t1"


def test_a_batch_of_record_lines_redacts_as_each_line_does() -> None:
    """The driver writes a batch of records with one prefilter search for all of them: a key
    in one record's id, task, file or tool name is redacted there, and the clean records of
    the batch are written as they are, line for line what ``record_line`` gives."""
    clean = [
        TraceRecord(trace_id=f"t{i}", task="t", source="a.jsonl", tools={"fetch": [1, 0, 0]})
        for i in range(3)
    ]
    dirty = [
        TraceRecord(trace_id=f"run-{KEY}", task="t"),
        TraceRecord(trace_id="t9", task=f"task-{KEY}"),
        TraceRecord(trace_id="t8", task="t", source=f"traces/{KEY}.jsonl"),
        TraceRecord(trace_id="t7", task="t", tools={f"send_{KEY}": [1, 0, 0]}),
    ]
    for batch in ([], clean, clean + dirty[:1], dirty + clean, dirty):
        lines = record_lines(batch)
        assert lines == b"".join(record_line(r) for r in batch)
        assert_no_secrets(lines.decode())
    assert record_lines(clean).count(b"\n") == 3
