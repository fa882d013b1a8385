"""What ``toolscore eval GOLD TRACES`` is given, told from the paths and a file's first bytes.

Imported on every run of ``toolscore eval``, so it imports nothing more than it needs: a
single trace never loads the dataset engine (:mod:`.inputs`, :mod:`.gold`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import orjson

from .._idkeys import ID_KEYS

__all__ = [
    "ID_KEYS",
    "first_line",
    "first_record",
    "gold_is_dataset",
    "is_url",
    "keyed_gold_key",
    "trace_is_dataset",
]


def is_url(path: str) -> bool:
    """Whether ``path`` names an fsspec URL (``scheme://...``)."""
    return "://" in path


def first_line(head: bytes) -> bytes:
    """The first line of ``head`` that is not blank (``b""`` if none)."""
    for line in head.split(b"\n"):
        if line.strip():
            return line
    return b""


RECORD_LINES = 64
"""Lines of a file's head :func:`first_record` looks at."""


def first_record(head: bytes) -> dict[str, Any] | None:
    """The first line of a JSON Lines file's ``head`` that is a JSON object; ``None`` when
    the file does not look like JSON Lines records.

    Malformed lines before it are passed over (a file whose first record is broken is still
    a file of records), as long as the file does not open like one JSON document (a line
    holding only ``{``, or a ``[`` first) and, of its first :data:`RECORD_LINES` lines, those
    that are objects are at least as many as those that are not JSON at all. A line that is
    JSON but not an object means: not records. What follows the head's last newline is not
    looked at (the head may end inside a line), unless the head holds one line only.
    """
    lines = head.split(b"\n")
    if len(lines) > 1:
        lines.pop()
    found: dict[str, Any] | None = None
    objects = broken = 0
    for n, line in enumerate(line for line in lines if line.strip()):
        if n >= RECORD_LINES:
            break
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            if n == 0 and (line.lstrip().startswith(b"[") or line.strip() == b"{"):
                return None  # a JSON document, pretty-printed or cut short
            broken += 1
            continue
        if not isinstance(obj, dict):
            return None
        objects += 1
        if found is None:
            found = obj
        if not broken:
            break  # the usual file: its first line decides
    return found if found is not None and objects >= broken else None


def keyed_gold_key(head: bytes) -> str | None:
    """The id key of a keyed JSON Lines gold file starting with ``head``, or None when it is
    not one (a line ``{"trace_id": ..., "expected": [...]}`` then another line; broken lines
    before it are passed over, :func:`first_record`)."""
    if b"\n" not in head:
        return None  # one line: a gold file of one JSON value
    obj = first_record(head)
    if obj is None or not ("expected" in obj or "calls" in obj):
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


SNIFF_TRACES = 1 << 20
"""Bytes of a trace file :func:`trace_is_dataset` reads to find a second trace id."""


def trace_is_dataset(trace: str) -> bool:
    """Whether a local JSON Lines trace file holds several traces: the calls of its first
    :data:`SNIFF_TRACES` bytes name more than one trace id (``trace_id``, ``session_id``...).
    ``toolscore eval`` then reads it trace by trace, each against the gold, rather than as
    one trace (a second id further on is still said, by the reader: ``several_traces``)."""
    if trace == "-" or is_url(trace) or not os.path.isfile(trace):
        return False  # a pipe or a device: reading it here would take what the run reads
    try:
        with open(trace, "rb") as f:
            head = f.read(SNIFF_TRACES)
    except OSError:
        return False
    first = first_record(head)
    key = None if first is None else next((k for k in ID_KEYS if k in first), None)
    if key is None or first is None or not isinstance(first.get(key), (str, int)):
        return False
    needle = orjson.dumps({key: first[key]})[1:-1]  # '"trace_id":"a"'
    lines = head.split(b"\n")[:-1] if b"\n" in head else [head]
    for line in lines:
        if not line.strip() or needle in line:
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and key in obj and obj[key] != first[key]:
            return True
    return False
