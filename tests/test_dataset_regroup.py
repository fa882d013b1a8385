"""Lines of one trace that are not contiguous, far apart in a large JSON Lines file (past the
first MiB that is sniffed for interleaving): the trace is still scored once, whole, whether
its pieces fall in one part or in different byte ranges read by different workers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _cli import run_cli
from toolscore import evaluate
from toolscore.dataset import evaluate_dataset

EXPECTED = [
    {"tool": "search", "args": {"q": "flights"}},
    {"tool": "book", "args": {"flight": "BA117"}},
    {"tool": "pay", "args": {"amount": 420}},
]
PAD = "x" * 120


def _calls(trace_id: str) -> list[dict[str, Any]]:
    return [{"trace_id": trace_id, **call, "note": PAD} for call in EXPECTED]


@pytest.fixture(scope="module")
def scattered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """About 1.6 MB: 3,000 traces of three calls; three of them have their last call(s) far
    away (one at the very end, one three quarters in, one split three ways)."""
    base = tmp_path_factory.mktemp("scattered")
    ids = [f"task{i // 4:04d}/trial{i % 4}" for i in range(3000)]
    lines: list[dict[str, Any]] = []
    late: dict[int, list[dict[str, Any]]] = {}
    for i, trace_id in enumerate(ids):
        calls = _calls(trace_id)
        if trace_id == ids[5]:  # its last call at the end of the file
            late.setdefault(len(ids) - 1, []).append(calls.pop())
        elif trace_id == ids[10]:  # its last call past the first MiB
            late.setdefault(len(ids) * 3 // 4, []).append(calls.pop())
        elif trace_id == ids[20]:  # one call here, one past the first MiB, one at the end
            late.setdefault(len(ids) * 3 // 4 + 7, []).append(calls.pop(1))
            late.setdefault(len(ids) - 3, []).append(calls.pop())
        lines.extend(calls)
        lines.extend(late.pop(i, []))
    traces = base / "traces.jsonl"
    traces.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    gold = base / "gold.jsonl"
    gold.write_text(
        "".join(json.dumps({"trace_id": t, "expected": EXPECTED}) + "\n" for t in ids),
        encoding="utf-8",
    )
    assert traces.stat().st_size > 1.5 * (1 << 20)
    return gold, traces, [ids[5], ids[10], ids[20]]


def _check(result: Any, moved: list[str]) -> None:
    records = list(result)
    assert [r for r in records if r.status != "ok"] == []
    assert len(records) == 3000 == len({r.trace_id for r in records})
    whole = evaluate(EXPECTED, [{k: v for k, v in c.items()} for c in _calls("x")]).score
    for record in records:
        assert record.calls == 3, record
        assert record.score == pytest.approx(whole, abs=1e-9), record.trace_id
    by_id = {r.trace_id: r for r in records}
    for trace_id in moved:
        assert by_id[trace_id].passed is True


def test_pieces_in_one_part_are_one_trace(scattered: tuple[Path, Path, list[str]]) -> None:
    gold, traces, moved = scattered
    _check(evaluate_dataset(str(gold), str(traces), engine="inline"), moved)


def test_pieces_of_a_compressed_file_are_one_trace(
    tmp_path: Path, scattered: tuple[Path, Path, list[str]]
) -> None:
    # a compressed file read whole: its scattered traces are gathered from it decompressed
    import gzip

    gold, traces, moved = scattered
    packed = tmp_path / "traces.jsonl.gz"
    packed.write_bytes(gzip.compress(traces.read_bytes()))
    _check(evaluate_dataset(str(gold), str(packed), engine="inline"), moved)
    # large enough to be unpacked into the work directory and cut: gathered from the copy
    part_bytes = packed.stat().st_size // 2
    _check(evaluate_dataset(str(gold), str(packed), part_bytes=part_bytes, workers=2), moved)


def test_pieces_in_different_byte_ranges_are_one_trace(
    scattered: tuple[Path, Path, list[str]],
) -> None:
    gold, traces, moved = scattered
    pool = evaluate_dataset(str(gold), str(traces), engine="local", workers=2, part_bytes=100_000)
    _check(pool, moved)
    inline = evaluate_dataset(str(gold), str(traces), engine="inline", part_bytes=100_000)
    assert [r.trace_id for r in inline] == [r.trace_id for r in pool]


def test_cli_scores_scattered_traces_once(
    tmp_path: Path, scattered: tuple[Path, Path, list[str]]
) -> None:
    gold, traces, moved = scattered
    per = tmp_path / "per.jsonl"
    proc = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"), "--per-trace", str(per),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in per.read_text().splitlines()]
    assert len(rows) == 3000 and all(row["status"] == "ok" for row in rows)
    assert {row["trace_id"]: row["calls"] for row in rows if row["trace_id"] in moved} == {
        trace_id: 3 for trace_id in moved
    }


@pytest.mark.parametrize("part_bytes", [None, 100_000])
def test_a_scattered_trace_whose_gold_cannot_be_read_gets_its_error_record(
    tmp_path: Path, scattered: tuple[Path, Path, list[str]], part_bytes: int | None
) -> None:
    """The gold of a trace read in pieces (in one part, or in different byte ranges) is
    unusable: the trace gets one error record (worker.gold_error_record), at its first line,
    not one per piece nor "two files hold the same id"; every other trace is scored."""
    gold, traces, moved = scattered
    broken = moved[2]  # one call here, one past the first MiB, one at the end
    bad = tmp_path / "gold.jsonl"
    with gold.open(encoding="utf-8") as src, bad.open("w", encoding="utf-8") as dst:
        for line in src:
            if json.loads(line)["trace_id"] == broken:
                line = json.dumps({"trace_id": broken, "expected": [{"args": {}}]}) + "\n"
            dst.write(line)
    first = next(
        n
        for n, line in enumerate(traces.read_text(encoding="utf-8").splitlines(), 1)
        if json.loads(line)["trace_id"] == broken
    )
    extra = {} if part_bytes is None else {"part_bytes": part_bytes}
    result = evaluate_dataset(str(bad), str(traces), engine="inline", **extra)
    records = list(result)
    assert len(records) == 3000 == len({r.trace_id for r in records})
    (error,) = [r for r in records if r.status != "ok"]
    assert error.trace_id == broken and error.status == "error"
    assert error.score is None and error.source == str(traces) and error.line == first
    assert error.error is not None
    assert error.error.startswith(f"gold of {broken}: ") and "missing 'tool'" in error.error
    assert result.input_errors == 1
