"""Long lists capped with a count of the rest: in one line of a report, and in memory.

A trace with 50,000 distinct failed tools made the "N of M tool calls failed (...)" line
700,000 characters long in every report. :func:`join_capped` keeps the first
:data:`MAX_LISTED` items and counts the rest; the JSON report keeps every item in its own
fields (``failed_tools`` and the findings).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

__all__ = ["MAX_LISTED", "MAX_RECORDS", "join_capped"]

MAX_LISTED = 20
"""Items one line lists at most."""
MAX_RECORDS = 10_000
"""Records of one kind a check keeps in memory (forbidden calls, credentials), like the
findings a result keeps; their counts stay exact, and the JSON report and ``--findings`` get
every one as a finding, streamed."""


def join_capped(items: Iterable[str], total: int | None = None, limit: int = MAX_LISTED) -> str:
    """``"a, b, c"``, or ``"a, b, ... and 49,998 more"`` past ``limit`` items.

    Args:
        items: the texts, most important first (only the first ``limit + 1`` are read).
        total: how many there are, when ``items`` is a lazy iterable (default: counted).
        limit: items listed at most.
    """
    if total is None:
        items = list(items)
        total = len(items)
    shown = list(islice(items, limit))
    text = ", ".join(shown)
    rest = total - len(shown)
    if rest > 0:
        text += f", ... and {rest:,} more"
    return text
