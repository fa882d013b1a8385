"""One trace per input: a stream whose calls carry more than one trace id is said so.

A JSON Lines file of calls that each name their trace (``trace_id``, ``session_id``...) holds
several traces; read as one, its score would mix them. The dataset door reads such a file
trace by trace (``toolscore eval`` routes a multi-trace file there, and ``watch --trace-key``
keeps a session per id); every other reader passes its batches through :class:`TraceIds`,
which adds one error finding (``input/several_traces``, naming ``--trace-key``) where the
second id appears, so such a run never merges traces without a word and exits 2.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._idkeys import ID_KEYS
from ..calls import Batch, Location
from ._util import located_finding

__all__ = ["ID_KEYS", "TraceIds", "several_traces_problem"]


def several_traces_problem(key: str, first: Any, then: Any) -> str:
    """The text of the ``several_traces`` finding."""
    return (
        f"the calls carry more than one {key} ({first!r}, then {then!r}) and were read as one "
        f"trace; evaluate them trace by trace: a gold keyed by {key} (toolscore eval "
        f"GOLD.jsonl TRACES.jsonl), toolscore watch --trace-key {key}, or evaluate_dataset"
    )


def _ids(batch: Batch) -> Iterator[tuple[str, Any, Location | None]]:
    block = batch.block
    if block is not None:
        # a decoded block says its ids from its columns: reading ``batch.calls`` would build
        # a ToolCall per call (the block exists so that nothing does)
        found = getattr(block, "trace_ids", None)
        if found is not None:
            yield from found(ID_KEYS)
        return
    for call in batch.calls:
        metadata = call.metadata
        if metadata:
            for key in ID_KEYS:
                if key in metadata:
                    yield key, metadata[key], call.location
                    break


class TraceIds:
    """Watches a reader's batches for a second trace id (see the module docstring)."""

    def __init__(self) -> None:
        self.first: tuple[str, Any] | None = None
        """The first call's ``(key, id)``."""
        self.several = False
        """True once a call with another id was seen (said once)."""

    def check(self, batch: Batch) -> None:
        """Add the finding to ``batch`` when one of its calls names another trace."""
        if self.several:
            return
        for key, value, location in _ids(batch):
            if self.first is None:
                self.first = (key, value)
            elif (key, value) != self.first:
                self.several = True
                first_key, first_id = self.first
                batch.findings.append(
                    located_finding(
                        "several_traces",
                        several_traces_problem(first_key, first_id, value),
                        location,
                    )
                )
                return
