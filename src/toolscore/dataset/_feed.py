"""A trace's memory in a dataset worker: its bytes go through its file's decoder in chunks
(the calls of one chunk are decoded at a time, so a trace costs its bytes plus a chunk's
decoded calls, not all its decoded calls: a 94 MB trace decoded whole held 9.4 GB), and a
trace larger than ``--max-trace-bytes`` is an input error, not evaluated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..calls import Batch
from ..redact import redact_secrets
from ._reading import Trace
from .records import TraceRecord

FEED_BYTES = 1 << 20
"""Bytes of a trace decoded at a time (a larger trace is decoded in pieces of this size)."""


def fed(decoder: Any, data: bytes) -> list[Batch] | Iterator[Batch]:
    """The batches of ``data`` from ``decoder`` (``feed``, ``close``): for a trace of up to
    :data:`FEED_BYTES`, its block and its end, as a list (the scorer's path for a whole
    trace); for a larger one, a generator decoding a chunk at a time as it is scored."""
    if len(data) <= FEED_BYTES:
        return [decoder.feed(data), decoder.close()]
    return _pieces(decoder, data)


def _pieces(decoder: Any, data: bytes) -> Iterator[Batch]:
    view = memoryview(data)
    for start in range(0, len(data), FEED_BYTES):
        yield decoder.feed(bytes(view[start : start + FEED_BYTES]))
    yield decoder.close()


def too_large(trace: Trace, source: str, order: tuple[int, int] = (0, 0)) -> TraceRecord | None:
    """When the lines of ``trace`` are more than
    :attr:`~toolscore.limits.ReadLimits.max_trace_bytes` (``--max-trace-bytes``; they were
    not held past it: :meth:`~._reading.Trace.keep`), its record: an input error naming
    ``source`` and the trace, not evaluated (the rest of the run is); else None."""
    limit = trace.limit
    size = trace.size
    if size <= limit:
        return None
    first = trace.linenos[0] if trace.linenos else None
    return TraceRecord(
        trace_id=trace.trace_id or "",
        task="",
        status="error",
        source=source,
        line=first,
        offset=trace.offset,
        error=redact_secrets(
            f"{source}:{first}: trace {trace.trace_id!r} holds {size:,} bytes, more than "
            f"the limit of {limit:,} (--max-trace-bytes); not evaluated"
        ),
        order=order,
    )
