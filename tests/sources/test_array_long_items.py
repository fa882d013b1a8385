"""A custom-format JSON array whose first item is very long: the item is decoded a bounded
number of times while it arrives (it was decoded again at every chunk: the square of its
length), and read the same as a short one."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec

from _cli import run_cli
from toolscore.sources import _array, iter_batches

MIB = 1 << 20


def _document(size: int) -> bytes:
    calls = [
        {"tool": "search", "args": {"q": "x" * size, "page": [1, 2]}},
        {"tool": "search", "args": {"q": "a"}},
        {"tool": "delete_all", "args": {}},
    ]
    return json.dumps(calls, indent=1).encode()


def test_a_long_first_item_is_decoded_a_bounded_number_of_times() -> None:
    data = _document(4 * MIB)
    decoded = 0
    real = msgspec.json.Decoder().decode  # (what the reader decodes a first item with)

    def counted(text: Any) -> Any:
        nonlocal decoded
        decoded += len(text)
        return real(text)

    tools = []
    with mock.patch.object(_array, "_decode", side_effect=counted):
        for batch in iter_batches(io.BytesIO(data), chunk_size=16 * 1024):
            assert batch.error is None
            tools += [call.tool for call in batch.calls]
    assert tools == ["search", "search", "delete_all"]
    # 256 chunks: the item was decoded at each, 512 MiB in all; now a few times its size
    assert decoded < 4 * len(data), decoded / len(data)


def test_a_16_mb_array_item_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "trace.json").write_bytes(_document(16 * MIB))
    (tmp_path / "rules.json").write_text(json.dumps([{"tool": "delete_all"}]))
    got = run_cli("eval", "trace.json", "--forbidden", "rules.json", "-o", "out.json", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    assert [c["tool"] for c in report["calls"]["actual"]] == ["search", "search", "delete_all"]
    assert "call 3 delete_all matches forbidden rule 1" in got.stdout
