"""The keys that name a call's trace: one list, for the readers and the dataset door."""

from __future__ import annotations

__all__ = ["ID_KEYS"]

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
"""Keys that name a call's trace, in the order they are looked for."""
