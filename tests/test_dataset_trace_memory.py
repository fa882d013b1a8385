"""A trace's memory in dataset mode: decoded a chunk at a time (peak RSS a small multiple of
its bytes, not ~100x), and one bound (``--max-trace-bytes``) past which it is an input
error naming the file and the trace while the rest of the run is evaluated."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import cli_env
from toolscore.dataset import evaluate_dataset
from toolscore.limits import ReadLimits

PEAK_TAIL = """
with open("/proc/self/status") as status:
    peak_kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(peak_kib // 1024)
"""
"""The end of a measuring script: its own peak RSS in MB (VmHWM, the process's own:
``ru_maxrss`` keeps the peak of the process that started it from before ``exec``, so from an
xdist worker of 600 MB it reports 600 MB)."""


def _measured(script: str, *args: str) -> tuple[str, int]:
    """``(what the script printed, its peak RSS in MB)``, run in a process of its own."""
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    printed, peak_mb = out.stdout.strip().rsplit(" ", 1)
    return printed, int(peak_mb)


PEAK = (
    """
import sys
from toolscore.dataset import evaluate_dataset
result = evaluate_dataset([{"tool": "search"}], sys.argv[1], engine="inline", trace_key="trace_id")
calls = sorted((r.trace_id, r.status, r.calls) for r in result)
result.close()
print(calls, end=" ")
"""
    + PEAK_TAIL
)


def _lines(trace_id: str, count: int) -> list[str]:
    return [
        json.dumps({"trace_id": trace_id, "tool": "search", "args": {"q": "NYC", "i": i % 7}})
        for i in range(count)
    ]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_a_large_compressible_trace_is_decoded_a_chunk_at_a_time(tmp_path: Path) -> None:
    # 200,000 calls, 13.6 MB decoded, from a few hundred KB compressed
    data = ("\n".join(_lines("big", 200_000) + _lines("small", 3)) + "\n").encode()
    packed = tmp_path / "traces.jsonl.gz"
    packed.write_bytes(gzip.compress(data))
    calls, peak_mb = _measured(PEAK, str(packed))
    assert calls == str([("big", "ok", 200_000), ("small", "ok", 3)])
    # (imports ~30 MB, the trace's bytes 13.6 MB: 106 MB here, 214 MB decoded whole)
    assert peak_mb < 160


def test_a_trace_over_the_bound_is_an_input_error(tmp_path: Path) -> None:
    lines = _lines("a", 5) + _lines("huge", 500) + _lines("c", 5)
    traces = tmp_path / "traces.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    result = evaluate_dataset(
        [{"tool": "search"}],
        str(traces),
        engine="inline",
        trace_key="trace_id",
        limits=ReadLimits(max_trace_bytes=10_000),
    )
    try:
        by_id = {r.trace_id: r for r in result}
        assert by_id["a"].status == by_id["c"].status == "ok"
        huge = by_id["huge"]
        assert huge.status == "error" and huge.error is not None
        assert huge.error.startswith(f"{traces}:6: trace 'huge' holds ")
        assert "--max-trace-bytes" in huge.error
        assert result.input_errors == 1
    finally:
        result.close()


BOUNDED = (
    """
import sys
from toolscore.dataset import evaluate_dataset
from toolscore.limits import ReadLimits
result = evaluate_dataset(
    [{"tool": "search"}], sys.argv[1], engine="inline", trace_key="trace_id",
    limits=ReadLimits(max_trace_bytes=1 << 20), interleaved=sys.argv[2] == "grouped",
)
rows = sorted((r.trace_id, r.status, r.calls) for r in result)
result.close()
print(rows, end=" ")
"""
    + PEAK_TAIL
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("reading", ["in order", "grouped"])
def test_a_trace_over_the_bound_is_not_held(tmp_path: Path, reading: str) -> None:
    # 600,000 lines (about 60 MB) of one trace, with a bound of 1 MiB: its lines stop being
    # kept at the bound, read in order or grouped by id (a file whose lines interleave), so
    # the run's peak stays far below the trace's size
    traces = tmp_path / "traces.jsonl"
    with traces.open("w") as f:
        f.write("\n".join(_lines("small", 3)) + "\n")
        line = json.dumps({"trace_id": "huge", "tool": "search", "args": {"q": "x" * 40}})
        f.write((line + "\n") * 600_000)
        f.write("\n".join(_lines("after", 2)) + "\n")
    rows, peak_mb = _measured(BOUNDED, str(traces), reading)
    assert rows == str([("after", "ok", 2), ("huge", "error", 0), ("small", "ok", 3)])
    size = traces.stat().st_size
    assert size > 50_000_000
    # (40-45 MB here; 146 MB when the trace's lines were held to the end and then joined)
    assert peak_mb < 75
