"""Datasets of compressed files: ``.gz`` and ``.zst`` traces, local and in object storage."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from _cli import run_cli
from _datasets import COMPRESS, shaped_dataset
from toolscore.dataset import TraceRecord, evaluate_dataset


def _rows(records: Any) -> list[dict[str, Any]]:
    out = []
    for record in records:
        assert isinstance(record, TraceRecord)
        out.append(msgspec.structs.asdict(record) | {"source": None, "order": None, "ci": None})
    return out


@pytest.mark.parametrize("ext", [".gz", ".zst"])
@pytest.mark.parametrize("opts", [{}, {"interleaved": True}])
def test_a_compressed_multi_trace_file_is_read_trace_by_trace(
    tmp_path: Path, generated60: tuple[Path, Path], ext: str, opts: dict[str, Any]
) -> None:
    # before, a compressed file was always one trace: one record, every gold entry without
    # a trace
    gold, traces = generated60
    packed = tmp_path / f"traces.jsonl{ext}"
    packed.write_bytes(COMPRESS[ext](traces.read_bytes()))
    plain = evaluate_dataset(str(gold), str(traces), engine="inline", **opts)
    got = evaluate_dataset(str(gold), str(packed), engine="inline", **opts)
    assert len(_rows(got)) == 60
    assert _rows(got) == _rows(plain)
    assert {r.source for r in got} == {str(packed)}


@pytest.mark.parametrize("ext", [".gz", ".zst"])
def test_a_large_compressed_file_is_unpacked_and_cut_into_ranges(
    tmp_path: Path, generated60: tuple[Path, Path], ext: str
) -> None:
    # read whole, a compressed file's records all come back at once, from one worker; past
    # part_bytes it is decompressed into the work directory and its copy cut into ranges
    from toolscore.dataset.inputs import list_inputs, plan_parts

    gold, traces = generated60
    packed = tmp_path / f"traces.jsonl{ext}"
    packed.write_bytes(COMPRESS[ext](traces.read_bytes()))
    size = packed.stat().st_size
    plan = {"key": None, "task_key": None, "force_interleaved": False, "part_bytes": size // 4}
    unpacked = plan_parts(list_inputs(str(packed), {}), unpack_dir=str(tmp_path), **plan)
    assert len(unpacked) > 4 and all(p.end is not None for p in unpacked)
    assert {p.inputs[0].local for p in unpacked} == {str(tmp_path / "unpacked-0.jsonl")}
    assert (tmp_path / "unpacked-0.jsonl").read_bytes() == traces.read_bytes()
    whole = plan_parts(list_inputs(str(packed), {}), **plan)  # (a Dask cluster's plan)
    assert [(p.start, p.end, p.inputs[0].local) for p in whole] == [(0, None, None)]

    plain = _rows(evaluate_dataset(str(gold), str(traces), engine="inline"))
    for engine, workers in (("inline", None), ("local", 2)):
        got = evaluate_dataset(
            str(gold), str(packed), engine=engine, workers=workers, part_bytes=size // 4
        )
        assert _rows(got) == plain, engine  # line numbers and offsets included
        got.close()


def test_a_truncated_compressed_file_keeps_the_traces_read_before_the_fault(
    tmp_path: Path, generated60: tuple[Path, Path]
) -> None:
    gold, traces = generated60
    data = traces.read_bytes()
    packed = gzip.compress(data)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    # what the stream gives before it breaks off
    got_bytes = b""
    with gzip.open(cut) as f:
        try:
            while piece := f.read1(1 << 16):
                got_bytes += piece
        except EOFError:
            pass
    complete = got_bytes[: got_bytes.rfind(b"\n") + 1]
    whole_ids = {json.loads(line)["trace_id"] for line in complete.splitlines()}
    # read whole, and unpacked then cut into ranges (the last range tells)
    for part_bytes in (None, len(packed) // 8):
        result = evaluate_dataset(str(gold), str(cut), engine="inline", part_bytes=part_bytes)
        records = list(result)
        ended = [r for r in records if r.status == "error" and "ends early" in (r.error or "")]
        assert len(ended) == 1, part_bytes
        assert ended[0].offset == len(got_bytes)
        assert ended[0].error is not None and ended[0].error.startswith(f"{cut}: ")
        assert f"{len(got_bytes):,} bytes decompressed" in ended[0].error
        read = {r.trace_id for r in records if r.status in ("ok", "error") and r.trace_id}
        assert whole_ids <= read  # every trace whose lines came out is evaluated
        assert result.input_errors >= 1
    # the CLI exits 2 for it, at the end
    out = run_cli("eval", str(gold), str(cut), "--per-trace", str(tmp_path / "p.jsonl"))
    assert out.returncode == 2, out.stderr
    assert "ends early" in out.stdout + out.stderr


def test_compressed_traces_in_object_storage(tmp_path: Path) -> None:
    # a single trace per .json.gz file (the usual layout in a bucket) was read undecompressed
    # from a URL: "could not detect the trace format"
    import fsspec

    fs = fsspec.filesystem("memory")
    calls = [{"tool": "book", "args": {"x": i}} for i in range(3)]
    one = b"".join(json.dumps(c).encode() + b"\n" for c in calls)
    fs.pipe("/cz/traces/one.jsonl.gz", gzip.compress(one))
    fs.pipe("/cz/traces/two.jsonl.zst", COMPRESS[".zst"](one))
    fs.pipe("/cz/traces/cut.jsonl.gz", gzip.compress(one)[:-12])
    fs.pipe("/cz/gold.json", json.dumps([{"tool": "book", "args": {"x": 1}}]).encode())
    try:
        result = evaluate_dataset("memory:///cz/gold.json", "memory:///cz/traces/", engine="inline")
        by_id = {r.trace_id: r for r in result}
        assert by_id["one"].status == by_id["two"].status == "ok"
        assert by_id["one"].calls == by_id["two"].calls == 3
        assert by_id["one"].score == by_id["two"].score
        assert by_id["cut"].status == "error"
        assert "ends early" in (by_id["cut"].error or "")
    finally:
        fs.rm("/cz", recursive=True)


def test_the_benchmark_shapes_hold_the_same_traces(generated60: tuple[Path, Path]) -> None:
    # the dataset benchmark times one dataset as a plain, a gzipped and an interleaved file
    gold, traces = generated60
    where = {"line": None, "offset": None}  # (an interleaved trace starts elsewhere)
    plain = evaluate_dataset(str(gold), str(traces), engine="inline")
    want = sorted(json.dumps(r | where) for r in _rows(plain))
    lines = sorted(traces.read_bytes().splitlines())
    for shape in ("gzip", "interleaved"):
        path = shaped_dataset(traces, shape)
        data = gzip.decompress(path.read_bytes()) if shape == "gzip" else path.read_bytes()
        assert sorted(data.splitlines()) == lines
        got = evaluate_dataset(str(gold), str(path), engine="inline", part_bytes=10_000)
        assert sorted(json.dumps(r | where) for r in _rows(got)) == want, shape
    ids = [json.loads(line)["trace_id"] for line in path.read_bytes().splitlines()]
    runs = [trace_id for i, trace_id in enumerate(ids) if i == 0 or ids[i - 1] != trace_id]
    assert len(runs) > 2 * len(set(ids))  # the lines of traces do interleave
