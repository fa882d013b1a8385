"""The report line that flags an approximate argument pairing (``argument_metrics.pairing``,
set by :mod:`toolscore.checks.expected.approx` past
:data:`toolscore.limits.EXACT_PAIRING_MAX_GOLD` gold calls of one tool)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["pairing_note"]


def pairing_note(metrics: Mapping[str, Any]) -> str | None:
    """The report line for an approximate argument pairing (``argument_metrics.pairing``),
    or None when the pairing is exact. Not redacted: the caller shows it as it shows text
    (a tool name is quoted)."""
    arguments = metrics.get("argument_metrics")
    pairing = arguments.get("pairing") if isinstance(arguments, Mapping) else None
    if not isinstance(pairing, Mapping) or pairing.get("method") != "approximate":
        return None
    tools = pairing.get("tools") or []
    named = ", ".join(_tool_sizes(t) for t in tools[:5] if isinstance(t, Mapping))
    if len(tools) > 5:
        named += f" and {len(tools) - 5} more tools"
    return (
        f"Argument pairing approximate for {named}: past {pairing.get('exact_up_to'):,} gold "
        "calls of one tool a bounded greedy pairing is used, and the argument scores may differ "
        "slightly from the exact pairing's (see README, Limits)"
    )


def _tool_sizes(t: Mapping[str, Any]) -> str:
    gold, trace = t.get("gold_calls"), t.get("trace_calls")
    return f"{t.get('tool')} ({gold:,} gold calls, {trace:,} in the trace)"
