"""One bound on decompressed bytes (``--max-decompressed-bytes``, :class:`ReadLimits`), in
every engine and every reader that decompresses: past it, an input error naming the file
and the offset, and what came out before it is still evaluated; a full disk under the
temporary directory is an input error naming it, not an internal error."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import cli_env, run_cli
from _datasets import COMPRESS, can_unshare_mount
from toolscore import evaluate_trace
from toolscore.dataset import evaluate_dataset
from toolscore.errors import InputError, UsageError
from toolscore.limits import ReadLimits, reading_limits


@pytest.mark.parametrize("ext", [".gz", ".zst"])
@pytest.mark.parametrize("engine", ["inline", "local"])
def test_a_dataset_stops_decompressing_at_the_bound(
    tmp_path: Path, generated60: tuple[Path, Path], ext: str, engine: str
) -> None:
    gold, traces = generated60
    data = traces.read_bytes()
    packed = tmp_path / f"traces.jsonl{ext}"
    packed.write_bytes(COMPRESS[ext](data))
    bound = len(data) // 2
    # the traces whose lines all lie before the bound
    complete = data[:bound][: data[:bound].rfind(b"\n") + 1]
    whole_ids = {json.loads(line)["trace_id"] for line in complete.splitlines()}
    cut_line_end = data.index(b"\n", bound) + 1
    cut = json.loads(data[len(complete) : cut_line_end])["trace_id"]
    later = {json.loads(line)["trace_id"] for line in data[cut_line_end:].splitlines()}
    never_read = later - whole_ids - {cut}
    # read whole by a worker, and unpacked to disk then cut into ranges (the last one tells)
    for part_bytes in (None, packed.stat().st_size // 8):
        result = evaluate_dataset(
            str(gold),
            str(packed),
            engine=engine,
            workers=2,
            part_bytes=part_bytes,
            limits=ReadLimits(max_decompressed_bytes=bound),
        )
        try:
            records = list(result)
            over = [r for r in records if r.status == "error" and "more than" in (r.error or "")]
            assert len(over) == 1, (part_bytes, [r.error for r in records if r.error])
            assert over[0].error is not None and over[0].error.startswith(f"{packed}: ")
            assert f"decompresses to more than {bound:,} bytes" in over[0].error
            assert "--max-decompressed-bytes" in over[0].error
            assert over[0].offset == bound
            read = {r.trace_id for r in records if r.source and r.trace_id}
            assert whole_ids <= read  # every trace whose lines came out is evaluated
            assert never_read and not never_read & read
            assert result.input_errors >= 1
        finally:
            result.close()


def test_one_trace_keeps_the_calls_read_before_the_bound(tmp_path: Path) -> None:
    calls = [{"tool": "search", "args": {"q": "x" * 100, "i": i}} for i in range(200)]
    data = b"".join(json.dumps(c).encode() + b"\n" for c in calls)
    packed = tmp_path / "trace.jsonl.gz"
    packed.write_bytes(gzip.compress(data))
    bound = len(data) // 4
    with reading_limits(max_decompressed_bytes=bound):
        result = evaluate_trace([{"tool": "search"}], str(packed))
    whole = data[:bound].count(b"\n")
    assert whole - 1 <= result.trace_calls_count <= whole
    assert result.input_error is not None
    assert str(result.input_error).startswith(f"{packed}: byte {bound}: decompresses to more")
    # the command line: the option, exit 2, the reason named
    out = run_cli(
        "eval",
        str(packed),
        "--max-decompressed-bytes",
        str(bound),
        "-o",
        str(tmp_path / "r.json"),
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--max-decompressed-bytes" in out.stdout + out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["trace_calls_count"] == result.trace_calls_count


@pytest.mark.skipif(
    sys.platform != "linux" or not can_unshare_mount(),
    reason="needs unshare (root)",
)
def test_a_full_temporary_disk_is_an_input_error(tmp_path: Path) -> None:
    # a compressed multi-trace file large enough to be unpacked to disk, onto a 1 MiB tmpfs
    lines = [
        json.dumps({"trace_id": f"t{i // 20}", "tool": "f", "args": {"v": os.urandom(48).hex()}})
        for i in range(40_000)
    ]
    data = "\n".join(lines).encode() + b"\n"
    packed = tmp_path / "traces.jsonl.gz"
    packed.write_bytes(gzip.compress(data, 1))
    assert packed.stat().st_size > 2 << 20 and len(data) > 4 << 20
    small = tmp_path / "small"
    small.mkdir()
    script = (
        f"mount -t tmpfs -o size=1m tmpfs {small} && TMPDIR={small} "
        f"{sys.executable} -m toolscore eval {packed} --trace-key trace_id "
        f"-o {tmp_path / 'r.json'}"
    )
    out = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "internal error" not in text
    assert str(small) in text and "no space left" in text


def test_the_bound_is_checked() -> None:
    with pytest.raises(Exception, match="max_decompressed_bytes"):
        ReadLimits(max_decompressed_bytes=0)
    with pytest.raises(UsageError, match="http_timeout must be a positive number, got nan"):
        ReadLimits(http_timeout=float("nan"))
    assert issubclass(InputError, ValueError)
