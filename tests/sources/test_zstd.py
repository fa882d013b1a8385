"""``.zst`` traces are decompressed as they are read, like ``.gz``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from toolscore.errors import InputError
from toolscore.sources import aiter_batches, iter_batches

zstandard = pytest.importorskip("zstandard")

CALLS = [{"tool": f"t{i % 3}", "args": {"n": i, "s": "x" * (i % 50)}} for i in range(500)]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    return path


def _lines() -> bytes:
    return "".join(json.dumps(c) + "\n" for c in CALLS).encode()


@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_zst_reads_the_same_calls(tmp_path: Path, layout: str) -> None:
    data = _lines() if layout == "jsonl" else json.dumps(CALLS).encode()
    path = _write(tmp_path / f"t.{layout}.zst", data)
    got = [c for b in iter_batches(path, chunk_size=64) for c in b.calls]
    assert [(c.tool, c.args) for c in got] == [(c["tool"], c["args"]) for c in CALLS]

    async def read() -> int:
        return sum([len(b.calls) async for b in aiter_batches(path)])

    assert anyio.run(read) == len(CALLS)


def test_truncated_zst_keeps_the_calls_before_the_fault(tmp_path: Path) -> None:
    # several zstd blocks (128 KiB each), so the part before the cut decodes
    lines = b"".join(b'{"tool": "t", "args": {"n": %d}}\n' % i for i in range(100_000))
    whole = zstandard.ZstdCompressor().compress(lines)
    path = tmp_path / "t.jsonl.zst"
    path.write_bytes(whole[: len(whole) // 2])
    batches = list(iter_batches(path, chunk_size=256))
    errors = [b.error for b in batches if b.error is not None]
    calls = [c for b in batches for c in b.calls]
    assert 0 < len(calls) < lines.count(b"\n")
    assert errors and isinstance(errors[-1], InputError)
    assert "t.jsonl.zst" in str(errors[-1]) and "ends" in str(errors[-1])


def test_several_frames_are_read_in_turn(tmp_path: Path) -> None:
    one = zstandard.ZstdCompressor().compress(_lines())
    path = tmp_path / "t.jsonl.zst"
    path.write_bytes(one + one)
    assert sum(len(b.calls) for b in iter_batches(path)) == 2 * len(CALLS)
