"""What ``toolscore eval GOLD TRACES`` is given, told from the paths and a file's first bytes.

Imported on every run of ``toolscore eval``, so it imports nothing more than it needs: a
single trace never loads the dataset engine (:mod:`.inputs`, :mod:`.gold`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["ID_KEYS", "first_line", "gold_is_dataset", "is_url", "keyed_gold_key"]

ID_KEYS: tuple[str, ...] = (
    "trace_id",
    "traceId",
    "session_id",
    "sessionId",
    "conversation_id",
    "conversationId",
    "thread_id",
    "threadId",
    "episode_id",
    "run_id",
)
"""Keys looked for, in this order, on a multi-trace file's first line."""


def is_url(path: str) -> bool:
    """Whether ``path`` names an fsspec URL (``scheme://...``)."""
    return "://" in path


def first_line(head: bytes) -> bytes:
    """The first line of ``head`` that is not blank (``b""`` if none)."""
    for line in head.split(b"\n"):
        if line.strip():
            return line
    return b""


def keyed_gold_key(head: bytes) -> str | None:
    """The id key of a keyed JSON Lines gold file starting with ``head``, or None when it is
    not one (a line ``{"trace_id": ..., "expected": [...]}`` then another line)."""
    line = first_line(head)
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or (len(line) >= len(head.strip()) and head.count(b"\n") < 1):
        return None
    if not ("expected" in obj or "calls" in obj):
        return None
    return next((k for k in ID_KEYS if k in obj), None)


def gold_is_dataset(gold: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``gold`` is a directory or a keyed JSON Lines file (a dataset's gold)."""
    if is_url(gold):
        return True
    if os.path.isdir(gold):
        return True
    try:
        with open(gold, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return keyed_gold_key(head) is not None
