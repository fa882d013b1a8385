"""Gold (expected) calls from a file or from dicts, and actual calls from dicts.

:func:`load_gold` reads a gold file as Toolscore 1.10 does (a JSON array of calls, or an object
whose ``calls`` is one; items that are not dicts or have no ``tool`` are skipped; no ``$``
matcher syntax), but its errors are :class:`~toolscore.errors.GoldFileError` naming the file
and the line. :func:`gold_from_dicts` and :func:`calls_from_dicts` are the in-memory path of
``evaluate()``, which is stricter: a bad item is a ``ValueError`` naming its index.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from .calls import ToolCall
from .errors import GoldFileError

__all__ = ["calls_from_dicts", "gold_from_dicts", "load_gold", "side_effect_note"]

_SHAPE = 'Gold standard must be a JSON array of tool calls (or an object whose "calls" is one)'


def load_gold(path: str | os.PathLike[str]) -> list[ToolCall]:
    """Read a gold file.

    Each kept item gives a call with its ``args`` (``None`` when absent or null: "don't
    check"), and ``metadata`` holding ``side_effects`` (default ``{}``) and, when present,
    ``description``. Every other key (``result``, ``error``, ``required``, ``schema``...) is
    ignored, as in Toolscore.

    Args:
        path: the gold file (JSON, UTF-8).

    Returns:
        The gold calls, indexed from 0.

    Raises:
        GoldFileError: the file is missing or unreadable, not JSON, or not of the gold shape
            (also when a ``tool`` is truthy but not a string).
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise GoldFileError(str(name), "Gold standard file not found") from None
    except OSError as exc:
        raise GoldFileError(str(name), f"cannot read the gold file: {exc.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise GoldFileError(str(name), "invalid UTF-8", offset=exc.start) from None
    except json.JSONDecodeError as exc:
        raise GoldFileError(
            str(name),
            f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            line=exc.lineno,
            offset=exc.pos,
        ) from None
    if isinstance(data, dict) and isinstance(data.get("calls"), list):
        data = data["calls"]
    if not isinstance(data, list):
        raise GoldFileError(str(name), _SHAPE)
    calls: list[ToolCall] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not item.get("tool"):
            continue
        tool = item["tool"]
        if not isinstance(tool, str):
            raise GoldFileError(
                str(name), f"item {i}: tool must be a string, got a JSON {type(tool).__name__}"
            )
        metadata: dict[str, Any] = {"side_effects": item.get("side_effects") or {}}
        if "description" in item:
            metadata["description"] = item["description"]
        calls.append(
            ToolCall(tool=tool, args=item.get("args"), metadata=metadata, index=len(calls))
        )
    return calls


def side_effect_note(gold: Iterable[ToolCall]) -> str | None:
    """The note shown when gold calls carry ``side_effects``, which toolscore does not check.

    Toolscore 1.10 ran its validators (``http_ok``, ``file_exists``, ``sql_rows``) on them;
    toolscore does not (they touch the network and the local file system), and says so rather
    than dropping them silently.

    Returns:
        One line naming the checks and their calls, or ``None`` when no gold call has any.
    """
    checks: dict[str, list[str]] = {}
    total = 0
    for call in gold:
        effects = call.metadata.get("side_effects") if call.metadata else None
        if not isinstance(effects, dict) or not effects:
            continue
        for name in effects:
            total += 1
            checks.setdefault(str(name), []).append(call.tool)
    if not total:
        return None
    named = ", ".join(
        f"{name} on {', '.join(dict.fromkeys(tools))}" for name, tools in sorted(checks.items())
    )
    noun = "check was" if total == 1 else "checks were"
    return (
        f"{total} side-effect {noun} not run ({named}): toolscore does not run side-effect "
        "validators; they are not part of the score"
    )


def _metadata(item: dict[str, Any]) -> dict[str, Any]:
    """Toolscore's ``_call_metadata``: ``metadata``, ``id``, ``error``, then ``is_error``."""
    metadata: dict[str, Any] = {}
    extra = item.get("metadata")
    if isinstance(extra, dict):
        metadata.update(extra)
    if item.get("id") is not None:
        metadata["id"] = item["id"]
    error = item.get("error")
    if isinstance(error, bool):
        metadata["is_error"] = error
    elif error:
        metadata["error"] = str(error)
        metadata["is_error"] = True
    is_error = item.get("is_error")
    if isinstance(is_error, bool):
        metadata["is_error"] = is_error
    return metadata


def _from_dicts(items: Iterable[Any], start: int) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"Item at index {start + i} is not a dict")
        tool = item.get("tool")
        if not tool:
            raise ValueError(f"Item at index {start + i} is missing 'tool' key")
        calls.append(
            ToolCall(
                tool=tool,
                args=item.get("args"),
                result=item.get("result"),
                timestamp=item.get("timestamp"),
                duration=item.get("duration"),
                cost=item.get("cost"),
                metadata=_metadata(item),
                index=start + i,
            )
        )
    return calls


def gold_from_dicts(items: Iterable[Any]) -> list[ToolCall]:
    """The expected calls of ``evaluate(expected=...)``.

    Copies ``tool``, ``args`` (``None`` kept), ``result``, ``timestamp``, ``duration`` and
    ``cost``; ``metadata`` is built as Toolscore's ``_call_metadata`` does.

    Raises:
        ValueError: ``Item at index {i} is not a dict`` / ``... is missing 'tool' key``.
    """
    return _from_dicts(items, 0)


def calls_from_dicts(items: Iterable[Any], *, start: int = 0) -> list[ToolCall]:
    """Actual calls given as dicts, with Toolscore's in-memory failure fields: a bool
    ``error`` sets ``is_error``; another truthy ``error`` becomes ``error=str(error)`` and
    ``is_error=True``; a bool ``is_error`` then overrides ``is_error``.

    Args:
        items: the call dicts.
        start: the index of the first call (for calls that arrive one at a time).

    Raises:
        ValueError: ``Item at index {i} is not a dict`` / ``... is missing 'tool' key``.
    """
    return _from_dicts(items, start)
