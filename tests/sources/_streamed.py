"""What the format tests share: a trace read back through the streamed reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolscore.calls import ToolCall
from toolscore.integrations import call_to_dict
from toolscore.sources import iter_batches


def streamed(path: Path, format: str = "auto") -> list[dict[str, Any]]:
    """The calls of ``path`` read 7 bytes at a time (every chunk boundary), as helper dicts."""
    found: list[ToolCall] = []
    for batch in iter_batches(path, format, chunk_size=7):
        assert batch.error is None
        found.extend(batch.calls)
    return [call_to_dict(c) for c in found]
