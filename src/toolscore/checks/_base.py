"""The check protocol: a sync core, with an async twin that defaults to it.

A check sees every batch of calls as it is read (``feed``), says what it noticed at once as
:class:`~toolscore.calls.Finding` objects, and at the end of the stream (``finish``) may add
findings of its own and hands its ``state()`` to the reducer. Built-in checks do their work
synchronously; a user check that needs I/O (an alert, a judge) overrides ``afeed``/``afinish``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..calls import Batch, Finding

__all__ = ["AsyncCheck", "BaseCheck", "Check"]


@runtime_checkable
class Check(Protocol):
    """What the pipeline needs of a check that can run without an event loop."""

    name: str

    def feed(self, batch: Batch) -> list[Finding]:
        """Look at ``batch.calls`` (new calls) and ``batch.done`` (calls whose result is known,
        in index order); return the findings this batch raises, in call order."""
        ...

    def finish(self) -> list[Finding]:
        """Called once at end of stream; returns the findings only the whole stream shows."""
        ...


@runtime_checkable
class AsyncCheck(Protocol):
    """What ``evaluate_stream`` needs of a check; every :class:`BaseCheck` is one."""

    name: str

    async def afeed(self, batch: Batch) -> list[Finding]: ...

    async def afinish(self) -> list[Finding]: ...


class BaseCheck:
    """Convenience base: implement ``feed``/``finish``; the async twins call them.

    A check that can also run on parts of a trace read by other processes
    (:mod:`toolscore.parallel`) implements :meth:`part_state` and :meth:`merge_part`.
    """

    name = "check"
    mergeable = False
    """True when :meth:`part_state` and :meth:`merge_part` are implemented."""

    def feed(self, batch: Batch) -> list[Finding]:
        return []

    def finish(self) -> list[Finding]:
        return []

    def part_state(self) -> Any:
        """What :meth:`merge_part` needs of this check, after it read a part of a trace on
        its own (picklable; called in the process that read the part)."""
        raise NotImplementedError(f"the {self.name} check cannot run on parts of a trace")

    def merge_part(self, state: Any, calls: int, lines: int) -> list[Finding]:
        """Take in the part that follows what this check has read: ``state`` from the same
        check's :meth:`part_state`, ``calls`` and ``lines`` read before the part. Returns the
        findings only the two together show (a retry across the boundary)."""
        raise NotImplementedError(f"the {self.name} check cannot run on parts of a trace")

    async def afeed(self, batch: Batch) -> list[Finding]:
        return self.feed(batch)

    async def afinish(self) -> list[Finding]:
        return self.finish()
