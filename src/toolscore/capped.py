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
MAX_RECORDS = 1_000
"""Records of one kind a check keeps in memory (forbidden calls, credentials, personal data,
hard-rule violations): the first 1,000 of the trace, in call order. Their counts stay exact
(``violation_count``, ``secret_count``; ``violations_omitted``/``secrets_omitted`` past the
cap), and the JSON report's findings and ``--findings`` get every one, streamed; so do the
findings a result keeps (the first 10,000, :data:`toolscore.pipeline.MAX_KEPT_FINDINGS`),
which carry the same facts (a forbidden call's rule is its finding's ``rule``). 10,000
records of 500,000 calls with a forbidden call each took 19 MB of a 69 MB peak; 1,000 take
2 MB."""


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
