"""Smoke tests for benchmarks/formats.py: every generated format reads back exactly (no timing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from _bench import load_benchmark
from toolscore.sources import iter_batches
from toolscore.sources.detect import detect

SIZE = 50_000


bench = load_benchmark("formats")


@pytest.mark.parametrize("case", bench.CASES, ids=lambda case: case.key)
def test_generated_trace_reads_back(tmp_path: Path, case: object) -> None:
    path = tmp_path / f"trace.{case.layout}"  # type: ignore[attr-defined]
    written = bench.write_trace(path, case, SIZE, seed=3)
    size = path.stat().st_size
    assert SIZE <= size < SIZE + 20_000
    assert written > 20  # about 1 KB per call

    found = detect(path.read_bytes(), final=True, source=str(path))
    assert (found.layout, found.dialect) == (case.layout, case.dialect)  # type: ignore[attr-defined]

    calls = done = 0
    for batch in iter_batches(path, format="auto"):
        assert batch.error is None
        assert not batch.findings
        calls += len(batch.calls)
        done += len(batch.done)
    assert calls == done == written

    again = tmp_path / "again"
    assert bench.write_trace(again, case, SIZE, seed=3) == written
    assert again.read_bytes() == path.read_bytes()


def test_measure_checks_detection_and_counts(tmp_path: Path) -> None:
    case = next(c for c in bench.CASES if c.key == "otel-json")
    path = tmp_path / "otel.json"
    written = bench.write_trace(path, case, SIZE)
    run = bench.measure(path, case, written, "50KB")
    assert run.calls == written
    assert run.detected[:2] == ["json", "otel"]
    assert run.rss_mb > 0
    assert run.problems() == []

    wrong = bench.Run(**{**vars(run), "written": written + 1, "detected": ["jsonl", "mcp", ""]})
    assert len(wrong.problems()) == 3


def test_parse_size() -> None:
    assert bench.parse_size("100MB") == 100_000_000
    assert bench.parse_size("1.5KiB") == 1536
    with pytest.raises(Exception, match="bad size"):
        bench.parse_size("ten")
