"""The records of a cut file's byte ranges are taken into a provisional tally as they come and
absorbed after the file's last range (or dropped, and the held records taken again, when a
trace came as pieces). Either way the run gives what taking the held records one by one
gives: that is what a run handing each record on (``on_record``) does, since a record handed
on cannot be taken back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _datasets import generate_dataset
from toolscore.dataset import aggregate, evaluate_dataset
from toolscore.dataset.records import TraceRecord


@pytest.fixture(scope="module")
def two_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A directory of three multi-trace files: a small one, read whole; a large one (about
    3.3 MB, cut into 40 kB byte ranges) holding one of its trace ids again; and a small one
    holding one of the large one's ids again (duplicates: error records)."""
    base = tmp_path_factory.mktemp("tally")
    generated = base / "generated.jsonl"
    gold = base / "gold.jsonl"
    generate_dataset(generated, gold, 600, seed=11)
    lines = generated.read_bytes().splitlines(keepends=True)
    ids = [json.loads(line)["trace_id"] for line in lines]

    def boundary(i: int) -> int:  # the first line of the trace after line i's
        while ids[i] == ids[i - 1]:
            i += 1
        return i

    def trace(i: int) -> list[bytes]:
        return [line for line, trace_id in zip(lines, ids, strict=True) if trace_id == ids[i]]

    cut = boundary(40)
    middle = boundary(len(lines) // 2)
    traces = base / "traces"
    traces.mkdir()
    (traces / "a.jsonl").write_bytes(b"".join(lines[:cut]))
    (traces / "b.jsonl").write_bytes(b"".join([*lines[cut:middle], *trace(0), *lines[middle:]]))
    (traces / "c.jsonl").write_bytes(b"".join(trace(middle)))
    return gold, traces


def _run(gold: Path, traces: Path, out: Path, name: str, **options: Any) -> dict[str, Any]:
    per_trace = out / f"{name}.jsonl"
    result = evaluate_dataset(
        str(gold), str(traces), part_bytes=40_000, per_trace=str(per_trace), **options
    )
    summary = result.summary()
    del summary["elapsed_s"], summary["traces_per_s"]
    try:
        return {
            "records": list(result),
            "summary": summary,
            "tasks": list(result.tasks),
            "errors": [r.trace_id for r in result.errors],
            "per_trace": per_trace.read_bytes(),
        }
    finally:
        result.close()


def _handed_on(records: list[TraceRecord]) -> Any:
    return records.append


@pytest.mark.parametrize("engine", ["inline", "local"])
def test_a_cut_file_gives_what_taking_its_records_one_by_one_gives(
    tmp_path: Path, two_files: tuple[Path, Path], engine: str
) -> None:
    gold, traces = two_files
    seen: list[TraceRecord] = []
    options: dict[str, Any] = {"engine": engine, "workers": 2}
    early = _run(gold, traces, tmp_path, "early", **options)
    one_by_one = _run(gold, traces, tmp_path, "one", on_record=_handed_on(seen), **options)
    assert early == one_by_one
    assert early["summary"]["traces"] == 602
    duplicates = [r for r in early["records"] if r.error and "already read earlier" in r.error]
    assert [Path(r.source).name for r in duplicates] == ["b.jsonl", "c.jsonl"]
    assert early["summary"]["statuses"]["error"] == 2
    assert [r.trace_id for r in seen] == [r.trace_id for r in early["records"]]


def test_a_file_with_a_scattered_trace_drops_the_provisional_tally(
    tmp_path: Path, two_files: tuple[Path, Path]
) -> None:
    gold, traces = two_files
    moved = tmp_path / "traces"
    moved.mkdir()
    (moved / "a.jsonl").write_bytes((traces / "a.jsonl").read_bytes())
    lines = (traces / "b.jsonl").read_bytes().splitlines(keepends=True)
    lines.append(lines.pop(3))  # a call of the file's first trace, at its very end
    (moved / "b.jsonl").write_bytes(b"".join(lines))
    early = _run(gold, moved, tmp_path, "early", engine="inline")
    one_by_one = _run(gold, moved, tmp_path, "one", engine="inline", on_record=lambda r: None)
    assert early == one_by_one
    first = json.loads(lines[0])["trace_id"]
    (record,) = [r for r in early["records"] if r.trace_id == first]
    assert record.status == "ok" and record.calls == sum(
        json.loads(line)["trace_id"] == first for line in lines
    )


def test_a_provisional_tally_past_the_tool_cap_is_not_merged(
    tmp_path: Path, two_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # merged, a tally that counted tools past the cap together would count under "(other
    # tools)" what one by one is counted by name: the held records are taken one by one
    monkeypatch.setattr(aggregate, "MAX_TOOLS", 4)
    gold, traces = two_files
    early = _run(gold, traces, tmp_path, "early", engine="inline")
    one_by_one = _run(gold, traces, tmp_path, "one", engine="inline", on_record=lambda r: None)
    assert early == one_by_one
    assert len(early["summary"]["tools"]) == 5
