"""A dataset whose JSON Lines file holds one very long line: reading it costs time and reads
that grow with the line's length, not with its square."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from toolscore.dataset import _readers, _reading, evaluate_dataset
from toolscore.dataset.inputs import IdReader, id_before, id_chunks, iter_lines, next_line

MIB = 1 << 20


def _dataset(tmp_path: Path, size: int) -> tuple[Path, Path]:
    """Three traces keyed by ``trace_id``; the middle one's one line is ``size`` bytes long."""
    traces = tmp_path / "traces.jsonl"
    gold = tmp_path / "gold.jsonl"
    with traces.open("w") as f:
        for trace_id, q in (("t0", "a"), ("t1", "x" * size), ("t2", "b")):
            f.write(json.dumps({"trace_id": trace_id, "tool": "search", "args": {"q": q}}) + "\n")
    with gold.open("w") as f:
        for trace_id in ("t0", "t1", "t2"):
            f.write(json.dumps({"trace_id": trace_id, "expected": [{"tool": "search"}]}) + "\n")
    return gold, traces


class _Counted:
    """A file whose reads are counted (``read`` bytes in all)."""

    read_bytes = 0

    def __init__(self, f: Any) -> None:
        self._f = f

    def read(self, size: int = -1) -> bytes:
        got: bytes = self._f.read(size)
        _Counted.read_bytes += len(got)
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()


def test_a_long_line_is_read_a_bounded_number_of_times_in_ranges(tmp_path: Path) -> None:
    # cut into 256 KiB ranges, 32 of them inside one 8 MiB line: each used to look for its
    # first line start to the line's end and back to its start (the line read 64 times)
    gold, traces = _dataset(tmp_path, 8 * MIB)
    real = _readers.open_lines
    _Counted.read_bytes = 0
    with mock.patch.object(_readers, "open_lines", lambda *a: _Counted(real(*a))):
        result = evaluate_dataset(str(gold), str(traces), engine="inline", part_bytes=256 << 10)
    assert [(r.trace_id, r.status, r.score) for r in result] == [
        ("t0", "ok", pytest.approx(1.0)),
        ("t1", "ok", pytest.approx(1.0)),
        ("t2", "ok", pytest.approx(1.0)),
    ]
    size = traces.stat().st_size
    assert _Counted.read_bytes < 4 * size, _Counted.read_bytes / size


def _seconds(run: Any) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def test_dataset_time_grows_linearly_with_a_lines_length(tmp_path: Path) -> None:
    # 4 MiB then 16 MiB: linear is about 4 times as long (measured 0.11 s and 0.29 s); the
    # square was 36 times (0.24 s and 8.6 s)
    times = []
    for size in (4 * MIB, 16 * MIB):
        here = tmp_path / str(size)
        here.mkdir()
        gold, traces = _dataset(here, size)
        times.append(
            _seconds(
                lambda g=gold, t=traces: evaluate_dataset(
                    str(g), str(t), engine="inline", part_bytes=256 << 10
                )
            )
        )
    assert times[1] < 10 * times[0] + 0.5, times


LINE = b'{"trace_id": "t1", "q": "' + b"x" * (8 * MIB) + b'"}\n'
DATA = b'{"trace_id": "t0"}\n' + LINE + b'{"trace_id": "t2"}\n'


def test_framing_a_long_line_copies_it_a_bounded_number_of_times() -> None:
    # read 2 KiB at a time, an 8 MiB line used to be joined again at every chunk (4,096
    # copies of up to 8 MiB: 1.9 s); now its pieces are joined once, at its newline
    ids = IdReader("trace_id", None)
    with mock.patch.object(_reading, "READ_BYTES", 2048):
        start = time.perf_counter()
        chunks = list(id_chunks(io.BytesIO(DATA), ids))
        lines = list(iter_lines(io.BytesIO(DATA)))
        elapsed = time.perf_counter() - start
    assert [one for _, _, _, got in chunks for one in got[0]] == ["t0", "t1", "t2"]
    assert [(offset, len(line)) for offset, line in lines] == [
        (0, 19),
        (19, len(LINE)),
        (19 + len(LINE), 19),
    ]
    assert elapsed < 0.5, elapsed


def test_looking_back_over_a_long_line_reads_it_once() -> None:
    # the id of the trace before a line start: the long line is read back in blocks, its
    # pieces joined once (they were joined again at each block)
    ids = IdReader("trace_id", None)
    after = DATA.index(b'{"trace_id": "t2"}')
    _Counted.read_bytes = 0
    with mock.patch.object(_reading, "READ_BYTES", 4096):
        start = time.perf_counter()
        assert id_before(_Counted(io.BytesIO(DATA)), after, ids) == "t1"
        elapsed = time.perf_counter() - start
    assert _Counted.read_bytes <= after
    assert elapsed < 1.0, elapsed
    # a line that cannot be an object is passed over, and the one before it read
    broken = b'{"trace_id": "t0"}\n' + b"y" * (1 * MIB) + b"\n"
    assert id_before(io.BytesIO(broken), len(broken), ids) == "t0"
    # a range inside one long line: its first line start is looked for up to its end only
    _Counted.read_bytes = 0
    assert next_line(_Counted(io.BytesIO(DATA)), 100, 200) == 200
    assert _Counted.read_bytes <= 101  # (from the byte before it: a line may start right at 100)
