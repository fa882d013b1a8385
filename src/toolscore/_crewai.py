"""``from_crewai``: calls from a CrewAI result (experimental, as in Toolscore 1.10).

Kept apart from :mod:`toolscore.integrations` (which re-exports it) because CrewAI records no
message stream for a dialect to read: a result holds ``tools_results`` entries, each
``{"tool_name", "tool_args"}``, or is a list of them.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["from_crewai"]


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
    return value if isinstance(value, (dict, list)) else {}


def _entries(result: Any) -> list[Any]:
    if isinstance(result, list):
        return result
    found = result.get("tools_results") if isinstance(result, dict) else None
    if found is None:
        found = getattr(result, "tools_results", None)
    return found if isinstance(found, list) else []


def from_crewai(result: Any) -> list[dict[str, Any]]:
    """``[{"tool", "args"}]`` from a CrewAI result's ``tools_results`` (or a list of entries).

    An entry without a ``tool_name`` is skipped; ``tool_args`` given as a JSON string is
    decoded (not valid JSON: ``{}``).
    """
    calls: list[dict[str, Any]] = []
    for entry in _entries(result):
        get = entry.get if isinstance(entry, dict) else lambda key, e=entry: getattr(e, key, None)
        name = get("tool_name")
        if isinstance(name, str) and name:
            calls.append({"tool": name, "args": _args(get("tool_args"))})
    return calls
