"""The pipeline: batches of calls in, findings out, check states to the reducer at the end.

:class:`Pipeline` holds everything that needs no I/O: it puts completed calls back in index
order, hands each batch to every check, collects the findings and forwards them and the calls
to the caller's sinks. Two drivers run it over a source: :func:`run_sync` (a plain loop, used
by ``evaluate()`` and ``evaluate_trace()``, safe inside a running event loop) and
:func:`run_async` (``evaluate_stream()``, ``watch``), which awaits only at the source, the
checks' ``afeed`` and the sinks. A batch, never a single call, crosses each await.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from .calls import Batch, Finding, FindingCountKey, ToolCall
from .checks._base import BaseCheck, State
from .columns import Columns
from .errors import InputError
from .redact import active_pii, redact_findings

__all__ = [
    "MAX_KEPT_FINDINGS",
    "MAX_KEPT_INPUT_FINDINGS",
    "CallSink",
    "ColumnSink",
    "FindingSink",
    "Pipeline",
    "emit_sync",
    "feed_sync",
    "finding_order",
    "finish_sync",
    "run_async",
    "run_sync",
]

FindingSink = Callable[[list[Finding]], Awaitable[None] | None]
"""Receives the findings of one batch, in call order, as soon as they are known."""
CallSink = Callable[[list[ToolCall]], Awaitable[None] | None]
"""Receives the completed calls of one batch, in index order."""


@runtime_checkable
class ColumnSink(Protocol):
    """A call sink that can take a batch's completed calls as columns (the JSON report's
    spool does), so that a decoded block never has to become ``ToolCall`` objects."""

    def __call__(self, calls: list[ToolCall]) -> Awaitable[None] | None: ...

    def take_columns(self, columns: Columns) -> None:
        """Receive the completed calls of one batch, in index order."""
        ...


MAX_KEPT_FINDINGS = 10_000
"""Findings kept on the result at most; sinks (the findings stream, the JSON report) see all."""
MAX_KEPT_INPUT_FINDINGS = 100
"""Input findings (a malformed line, an item of the wrong shape) also kept apart, so that the
reports can show them whatever came before; all of them are counted."""


def finding_order(finding: Finding) -> tuple[int, int]:
    """Input order: by line where the input has lines (a bad line between two calls stays
    between their findings), then by call."""
    loc = finding.location
    line = loc.line if loc is not None and loc.line is not None else 0
    return (line, -1 if finding.call_index is None else finding.call_index)


class Pipeline:
    """Feeds batches to checks; keeps only what the checks keep, plus a bounded findings list.

    Args:
        checks: the checks to run, in the order their findings are reported within a call.
        keep_calls: keep every completed call (for in-memory results and ``to_dict``).
        on_finding: called with each batch's findings.
        on_calls: called with each batch's completed calls, in index order.
    """

    def __init__(
        self,
        checks: Sequence[BaseCheck],
        *,
        keep_calls: bool = False,
        on_finding: FindingSink | None = None,
        on_calls: CallSink | None = None,
    ) -> None:
        self.checks = list(checks)
        self.calls: list[ToolCall] | None = [] if keep_calls else None
        self.failed_kept: set[int] = set()
        """The positions in :attr:`calls` of the calls that failed by the run's rules (as
        judged by its errors check: :meth:`~toolscore.columns.Columns.judged`)."""
        self.findings: list[Finding] = []
        self.findings_omitted = 0
        self.finding_counts: dict[FindingCountKey, int] = {}
        """Every finding, kept or not, counted by ``(check, kind, tool, rule)`` (what a
        baseline compares, :func:`~toolscore.baseline.finding_key`): one count per key."""
        self.input_findings: list[Finding] = []
        """The first :data:`MAX_KEPT_INPUT_FINDINGS` findings of the readers (``check ==
        "input"``), whatever the cap on :attr:`findings` left out."""
        self.input_problems = 0
        """Input findings of severity ``error``: parts of the trace skipped as unreadable."""
        self.calls_read = 0
        self.calls_done = 0
        self.error: InputError | None = None
        self.finished = False
        self.on_finding = on_finding
        self.redact_pii: frozenset[str] = active_pii()
        """Personal-data kinds redacted from findings too (see :func:`redact_findings`)."""
        self.on_calls = on_calls
        self._taker: tuple[CallSink | None, Callable[[Columns], None] | None] = (None, None)
        """The ``on_calls`` sink last seen and its ``take_columns`` (None for a sink that is
        no :class:`ColumnSink`): a protocol check costs microseconds, too many for every batch."""
        self._waiting: dict[int, ToolCall] = {}
        self._open: dict[int, ToolCall] = {}
        """Calls read whose result has not come yet (bounded by the dialect's
        ``max_pending``): completed without one by :meth:`_flush` when the stream ends before
        the source could, on a stop or a fatal input error."""
        self._flushed: Batch | None = None
        self._merged: list[State | None] | None = None
        """Per check, its state merged with the later parts taken in (:meth:`add_part`)."""

    # -- the I/O-free core ------------------------------------------------------------------

    def _in_order(self, done: list[ToolCall]) -> list[ToolCall]:
        """Release completed calls in index order, holding back those that overtook a call
        still waiting for its result."""
        nxt = self.calls_done
        if not self._waiting:
            for offset, call in enumerate(done):
                if call.index != nxt + offset:
                    break
            else:
                self.calls_done = nxt + len(done)
                return done
        waiting = self._waiting
        for call in done:
            waiting[call.index] = call
        released: list[ToolCall] = []
        while nxt in waiting:
            released.append(waiting.pop(nxt))
            nxt += 1
        self.calls_done = nxt
        return released

    def _prepare(self, batch: Batch) -> Batch:
        if batch.block is not None and not self._waiting:
            # a decoded block: complete, numbered on from the calls before it
            self.calls_done += batch.block.n
        else:
            if batch.block is None:
                self._track_open(batch)
            if batch.n_done and batch is not self._flushed:
                batch.done = self._in_order(batch.done)
        self.calls_read += batch.n_calls
        return batch

    def _track_open(self, batch: Batch) -> None:
        """Remember the batch's calls that still wait for their result; forget those whose
        result came."""
        open_calls = self._open
        if open_calls and batch.n_done:
            for call in batch.done:
                open_calls.pop(call.index, None)
        if batch.n_calls:
            for call in batch.calls:
                if not call.complete:
                    open_calls[call.index] = call

    def _collect(
        self, batch: Batch, per_check: list[list[Finding]], *, redacted: bool = False
    ) -> list[Finding]:
        found: list[Finding] = list(batch.findings)
        for findings in per_check:
            found.extend(findings)
        if len(found) > 1:
            found.sort(key=finding_order)
        if found:
            if not redacted:
                # whatever check made them (a user's too): nothing quoted leaves unredacted
                found = redact_findings(found, self.redact_pii)
            self._count_input(found)
            counts = self.finding_counts
            for f in found:
                key = (f.check, f.kind, f.tool, f.rule)
                counts[key] = counts.get(key, 0) + 1
        room = MAX_KEPT_FINDINGS - len(self.findings)
        if room >= len(found):
            self.findings.extend(found)
        else:
            self.findings.extend(found[: max(room, 0)])
            self.findings_omitted += len(found) - max(room, 0)
        if self.calls is not None and batch.n_done:
            start = len(self.calls)
            self.calls.extend(batch.done)
            self.failed_kept.update(start + i for i in batch.done_columns().judged())
        if batch.error is not None and self.error is None:
            self.error = batch.error
        return found

    def _count_input(self, found: list[Finding]) -> None:
        inputs = [f for f in found if f.check == "input"]
        if inputs:
            self.input_problems += sum(1 for f in inputs if f.severity == "error")
            room = MAX_KEPT_INPUT_FINDINGS - len(self.input_findings)
            self.input_findings.extend(inputs[: max(room, 0)])

    def process(self, batch: Batch) -> list[Finding]:
        """Run one batch through every check; returns its findings (sinks are the drivers')."""
        batch = self._prepare(batch)
        return self._collect(batch, [check.feed(batch) for check in self.checks])

    def run_block(self, batch: Batch) -> bool:
        """A whole trace decoded as one block, with no sink: what :func:`run_sync` does over
        it (its batch, then the end of stream), without the drivers' layers (a dataset's
        small traces pay them per trace). False, with nothing done, unless ``batch`` holds a
        block and no reader finding or error, and the pipeline has read nothing and not finished."""
        if (
            batch.block is None
            or batch.findings
            or batch.error is not None
            or self.calls_read
            or self.finished
            or self.on_calls is not None
            or self.on_finding is not None
        ):
            return False
        self.process(batch)
        self.finish()
        return True

    # -- states -----------------------------------------------------------------------------

    def states(self) -> list[State | None]:
        """Each check's state (None for a check without one), merged with the later parts of
        the trace taken in by :meth:`add_part`, in the order of :attr:`checks`."""
        merged = self._merged
        if merged is None:
            return [_state_of(check) for check in self.checks]
        if not self.finished:
            return list(merged)
        return [  # a check that resumed from its merged state knows the whole
            _state_of(check) if hasattr(check, "resume") else state
            for check, state in zip(self.checks, merged, strict=True)
        ]

    def _resume(self) -> None:
        if self._merged is not None:
            for check, state in zip(self.checks, self._merged, strict=True):
                resume = getattr(check, "resume", None)
                if resume is not None and state is not None:
                    resume(state)

    def add_part(
        self, states: Sequence[State | None], calls: int, error: InputError | None = None
    ) -> list[Finding]:
        """Take in a later part of the trace, read on its own (by another process): its
        checks' states (in the order of :attr:`checks`), its calls, its input error. The
        checks read no more batches afterwards (their part of the trace is before this one).

        Returns the findings only the parts together show (a retry across the boundary), in
        the whole's numbers (the states relocated to the part's lines first). The part's own
        findings and calls go to the sinks through :func:`emit_sync` and the call sink. At
        :meth:`finish`, a check with a ``resume(state)`` method takes its merged state back
        first (its end of stream reads the whole).
        """
        merged = self._merged
        if merged is None:
            merged = self._merged = [_state_of(check) for check in self.checks]
        between: list[Finding] = []
        for i, later in enumerate(states):
            before = merged[i]
            if later is None or before is None:
                continue
            between.extend(before.findings_between(later))
            merged[i] = before.merge(later)
        self.calls_read += calls
        self.calls_done += calls
        if error is not None and self.error is None:
            self.error = error
        return between

    def finish(self) -> list[Finding]:
        """End of stream: release any held-back calls, let each check finish once."""
        batch = self._flush()
        found = self.process(batch) if (batch.n_done or batch.n_calls) else []
        tail: list[Finding] = []
        self._resume()
        for check in self.checks:
            tail.extend(check.finish())
        self.finished = True
        return found + self._collect(Batch(), [tail])

    def _flush(self) -> Batch:
        for call in self._open.values():
            # The stream ended (stopped, or broken off) before the source could say that
            # this call's result will not come: it is complete without one, as at the end of
            # a whole trace.
            if not call.complete:
                call.complete = True
                self._waiting[call.index] = call
        self._open.clear()
        if not self._waiting:
            return Batch()
        held = [self._waiting[i] for i in sorted(self._waiting)]
        self._waiting.clear()
        self.calls_done = held[-1].index + 1
        # Calls that overtook one whose result never came: released as they are, in order.
        self._flushed = Batch(done=held, calls=[])
        return self._flushed

    # -- async twins --------------------------------------------------------------------------

    async def aprocess(self, batch: Batch) -> list[Finding]:
        batch = self._prepare(batch)
        per_check = [await check.afeed(batch) for check in self.checks]
        return self._collect(batch, per_check)

    async def afinish(self) -> list[Finding]:
        batch = self._flush()
        found = await self.aprocess(batch) if (batch.n_done or batch.n_calls) else []
        tail: list[Finding] = []
        self._resume()
        for check in self.checks:
            tail.extend(await check.afinish())
        self.finished = True
        return found + self._collect(Batch(), [tail])


def _state_of(check: Any) -> State | None:
    state = getattr(check, "state", None)
    return None if state is None else cast("State | None", state())


def _call_sinks(pipeline: Pipeline, batch: Batch, found: list[Finding]) -> list[Any]:
    pending: list[Any] = []
    sink = pipeline.on_calls
    if sink is not None and batch.n_done:
        seen, take = pipeline._taker
        if seen is not sink:
            take = sink.take_columns if isinstance(sink, ColumnSink) else None
            pipeline._taker = sink, take
        if take is not None:
            take(batch.done_columns())
        else:
            pending.append(sink(batch.done))
    if found and pipeline.on_finding is not None:
        pending.append(pipeline.on_finding(found))
    return pending


def run_sync(pipeline: Pipeline, batches: Iterable[Batch]) -> None:
    """Drive ``pipeline`` over ``batches`` without an event loop; stops at a fatal input error.

    Raises:
        TypeError: a sink returned an awaitable (use ``evaluate_stream`` for async sinks).
    """
    feed_sync(pipeline, batches)
    finish_sync(pipeline)


def feed_sync(pipeline: Pipeline, batches: Iterable[Batch]) -> bool:
    """The first half of :func:`run_sync`: every batch, no end of stream. Returns False when
    a fatal input error stopped it."""
    for batch in batches:
        found = pipeline.process(batch)
        _sync_sinks(pipeline, batch, found)
        if batch.error is not None:
            return False
    return True


def emit_sync(pipeline: Pipeline, found: list[Finding], *, redacted: bool = False) -> None:
    """Hand findings made outside a batch (a merge's) to the pipeline and its sinks;
    ``redacted``: they were redacted already (by another process's pipeline, with the same
    kinds)."""
    if found:
        _sync_sinks(pipeline, Batch(), pipeline._collect(Batch(), [found], redacted=redacted))


def finish_sync(pipeline: Pipeline) -> None:
    """The second half of :func:`run_sync`: release held calls, finish every check."""
    tail_batch = pipeline._flush()
    found = pipeline.process(tail_batch) if tail_batch.n_done else []
    _sync_sinks(pipeline, tail_batch, found)
    tail = pipeline.finish()
    _sync_sinks(pipeline, Batch(), tail)


def _sync_sinks(pipeline: Pipeline, batch: Batch, found: list[Finding]) -> None:
    for result in _call_sinks(pipeline, batch, found):
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise TypeError("an async on_finding/on_calls sink needs evaluate_stream()")


async def run_async(pipeline: Pipeline, batches: AsyncIterable[Batch]) -> None:
    """Drive ``pipeline`` over an async source; sinks may be sync or async."""
    async for batch in batches:
        found = await pipeline.aprocess(batch)
        await _async_sinks(pipeline, batch, found)
        if batch.error is not None:
            break
    tail_batch = pipeline._flush()
    found = await pipeline.aprocess(tail_batch) if tail_batch.n_done else []
    await _async_sinks(pipeline, tail_batch, found)
    tail = await pipeline.afinish()
    await _async_sinks(pipeline, Batch(), tail)


async def _async_sinks(pipeline: Pipeline, batch: Batch, found: list[Finding]) -> None:
    for result in _call_sinks(pipeline, batch, found):
        if inspect.isawaitable(result):
            await result
