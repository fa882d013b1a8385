"""Live evaluation: findings as a trace streams in, and a result when it ends or is stopped.

:func:`watch` runs the same pipeline as ``evaluate_stream`` in a producer task and hands each
batch's findings to the caller through an anyio memory object stream, one list per batch (a
task switch per batch, never per call). The caller iterates findings one by one::

    async with toolscore.watch(source, forbidden="forbidden.json") as run:
        async for finding in run:
            alert(finding)          # the moment its call (or its result) is read
    print(run.result.score)

The producer runs inside the context manager's task group, and the generator never yields from
inside that group to an ``async for`` (trio's ``as_safe_channel`` lesson, PEP 789): the block is
the group's body, so leaving it early (``break``, an exception, a cancelled scope) cancels the
producer and closes the source, and nothing keeps running afterwards.

``run.stop()`` (what ``toolscore watch`` does on Ctrl-C) is different from leaving the block:
it stops *reading*, then finishes the checks on every call read so far, so the findings that
only the whole stream shows and ``run.result`` still arrive.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._args import check_rules
from .api import (
    GoldInput,
    PassRule,
    RulesInput,
    TraceSource,
    abatches,
    aguard_first,
    open_run,
    pass_criterion,
    pipeline_result,
)
from .calls import Batch, Finding, ToolCall
from .follow import FdStream
from .pipeline import CallSink, FindingSink, Pipeline, run_async
from .redact import pii_redaction
from .result import EvaluationResult
from .verdict import PassCriterion

__all__ = ["LiveRun", "plain_errors", "watch"]

if sys.version_info >= (3, 11):
    _GROUPS: tuple[type[BaseException], ...] = (BaseExceptionGroup,)  # noqa: F821
else:  # pragma: no cover - anyio depends on the backport there
    _GROUPS = (importlib.import_module("exceptiongroup").BaseExceptionGroup,)


class _Reading:
    """A run whose reading stops on request (:meth:`stop`), and whose producer hands what it
    made to the consumer through ``_send`` (closed at the end, whatever happened)."""

    _send: Any
    """The sending end of the run's memory object stream (set by the subclass)."""

    def __init__(self) -> None:
        self.stopped = False
        """True once :meth:`stop` was called."""
        self._read_scope: anyio.CancelScope | None = None
        self._failure: Exception | None = None
        """What stopped the producer, handed to the consumer rather than to the task group."""

    @asynccontextmanager
    async def _reading(
        self, source: TraceSource, format: str, *, one_trace: bool = True
    ) -> AsyncIterator[AsyncGenerator[Batch, None]]:
        """The source's batches until :meth:`stop`, for a producer's body: an exception in
        the body becomes :attr:`_failure` (the consumer raises it plainly, not inside an
        exception group); at the end the send end is closed and the source with it."""
        batches = cast(
            "AsyncGenerator[Batch, None]",
            aguard_first(abatches(source, format, one_trace=one_trace)),
        )
        stoppable = self._until_stopped(batches)
        try:
            yield stoppable
        except Exception as exc:
            self._failure = exc
        finally:
            self._send.close()
            with anyio.CancelScope(shield=True):
                await stoppable.aclose()
                await batches.aclose()

    def stop(self) -> None:
        """Stop reading the source; what was read is then finished (the checks on every call
        read so far; with sessions, every open session closed).

        Iteration goes on with the remaining and end-of-stream findings (and results), then
        ends. Safe to call from any task of the same event loop, more than once.
        """
        self.stopped = True
        if self._read_scope is not None:
            self._read_scope.cancel()

    async def _until_stopped(self, batches: AsyncIterator[Batch]) -> AsyncGenerator[Batch, None]:
        """Pass batches on until :meth:`stop`; only the wait for the source is interrupted,
        so a batch that was read is always processed and its findings delivered."""
        while not self.stopped:
            with anyio.CancelScope() as scope:
                self._read_scope = scope
                try:
                    batch = await batches.__anext__()
                except StopAsyncIteration:
                    return
                finally:
                    self._read_scope = None
            if scope.cancelled_caught:
                return
            yield batch


class LiveRun(_Reading):
    """A watch in progress: iterate it for findings; read counters at any time.

    Made by :func:`watch`; not meant to be built directly. Iterating yields each
    :class:`~toolscore.calls.Finding` in call order as soon as its batch is processed, and
    ends after the end-of-stream findings, once :attr:`result` is ready.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        gold: list[ToolCall],
        weights: dict[str, float],
        receive: MemoryObjectReceiveStream[list[Finding]],
        send: MemoryObjectSendStream[list[Finding]],
        on_finding: FindingSink | None,
        has_gold: bool = True,
    ) -> None:
        super().__init__()
        self.pipeline = pipeline
        self.has_gold = has_gold
        self.criterion: PassCriterion | None = None
        """The pass rule the result's verdict applies."""
        """False without gold: the checks only, no score."""
        """The pipeline being driven (its checks, ``calls_read``, kept ``findings``)."""
        self.started = time.monotonic()
        """``time.monotonic()`` when the watch began, for :attr:`rate`."""
        self.findings_count = 0
        """Every finding so far, including those past the pipeline's kept-findings cap."""
        self.severity_counts: dict[str, int] = {"error": 0, "warning": 0, "info": 0}
        """Findings so far by severity."""
        self._gold = gold
        self._weights = weights
        self._receive = receive
        self._send = send
        self._user_sink = on_finding
        self._buf: list[Finding] = []
        self._pos = 0
        self._result: EvaluationResult | None = None
        self._failure_seen = False
        self._done = anyio.Event()

    # -- counters -----------------------------------------------------------------------------

    @property
    def calls_read(self) -> int:
        """Calls read so far (also those whose result is still to come)."""
        return self.pipeline.calls_read

    @property
    def rate(self) -> float:
        """Calls read per second since the watch began."""
        elapsed = time.monotonic() - self.started
        return self.pipeline.calls_read / elapsed if elapsed > 0 else 0.0

    @property
    def done(self) -> bool:
        """True once the stream ended (or was stopped) and the checks finished."""
        return self._done.is_set()

    @property
    def result(self) -> EvaluationResult:
        """The final result, once iteration ended (or :meth:`wait` returned).

        Raises:
            InputError: the source could not be read before its first call.
            RuntimeError: the watch has not finished, or was cancelled before it could.
        """
        if self._failure is not None:
            self._failure_seen = True
            raise self._failure
        if self._result is None:
            raise RuntimeError(
                "the watch has no result yet: iterate it to the end or `await run.wait()` "
                "inside the `async with` block (leaving the block early cancels it)"
            )
        return self._result

    def snapshot(self) -> EvaluationResult:
        """The result the calls completed so far would give, computed now.

        The reducer runs on the checks' states (:meth:`~toolscore.pipeline.Pipeline.states`),
        values the live checks hand over and go on without. It costs what the reducer costs
        on the gold file and the kept findings, not on the trace, so call it per batch or on a
        timer, not per call. Calls whose result is still pending are not in it yet.
        """
        if self._result is not None:
            return self._result
        return pipeline_result(
            self.pipeline,
            self._gold,
            self._weights,
            include_extras=True,
            has_gold=self.has_gold,
            criterion=self.criterion,
        )

    def score(self) -> float:
        """The score of the calls completed so far: the reducer on what the score reads of
        each state (``score_only``), cheap whatever the trace's length (a snapshot also
        counts the distinct signatures, which past 32,768 calls reads their run files)."""
        if self._result is not None:
            return self._result.score
        return pipeline_result(
            self.pipeline, self._gold, self._weights, include_extras=False, score_only=True
        ).score

    # -- control ------------------------------------------------------------------------------

    async def wait(self) -> EvaluationResult:
        """Consume the remaining findings (the ``on_finding`` sink still sees them) and return
        the result."""
        async for _ in self:
            pass
        return self.result

    # -- iteration ----------------------------------------------------------------------------

    def __aiter__(self) -> LiveRun:
        return self

    async def __anext__(self) -> Finding:
        buf = self._buf
        pos = self._pos
        if pos < len(buf):
            self._pos = pos + 1
            return buf[pos]
        while True:
            try:
                buf = await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._buf = []
                self._pos = 0
                if self._failure is not None and not self._failure_seen:
                    self._failure_seen = True
                    raise self._failure from None
                raise StopAsyncIteration from None
            if buf:
                break
        self._buf = buf
        self._pos = 1
        return buf[0]

    # -- the producer -------------------------------------------------------------------------

    async def _sink(self, found: list[Finding]) -> None:
        self.findings_count += len(found)
        counts = self.severity_counts
        for finding in found:
            counts[finding.severity] = counts.get(finding.severity, 0) + 1
        if self._user_sink is not None:
            maybe = self._user_sink(found)
            if maybe is not None:
                await maybe
        await self._send.send(found)

    async def _produce(self, source: TraceSource, format: str) -> None:
        try:
            async with self._reading(source, format) as batches:
                await run_async(self.pipeline, batches)
                self._result = pipeline_result(
                    self.pipeline,
                    self._gold,
                    self._weights,
                    include_extras=True,
                    has_gold=self.has_gold,
                    criterion=self.criterion,
                )
        finally:
            self._done.set()


def _single(exc: BaseException) -> BaseException | None:
    """The one exception inside a task group's exception group, if that is all it holds."""
    while isinstance(exc, _GROUPS):
        inner: tuple[BaseException, ...] = getattr(exc, "exceptions", ())
        if len(inner) != 1:
            return None
        exc = inner[0]
    return exc


@contextmanager
def plain_errors() -> Iterator[None]:
    """Re-raise a task group's lone exception as itself, not inside an exception group.

    Wrap a task group whose children never raise (they hand their errors over), so that an
    error raised in its body reaches the caller as the error it is.
    """
    try:
        yield
    except BaseException as exc:
        inner = _single(exc)
        if inner is None or inner is exc:
            raise
        raise inner from None


def _live_source(source: TraceSource) -> TraceSource:
    """Stdin (``-``) is read as bytes arrive, never by a buffered read that waits to fill."""
    if isinstance(source, str) and source == "-":
        return FdStream(sys.stdin.fileno())
    return source


@asynccontextmanager
async def watch(
    source: TraceSource,
    *,
    gold: GoldInput | None = None,
    forbidden: RulesInput = None,
    format: str = "auto",
    weights: Mapping[str, float] | None = None,
    strict: bool = False,
    on_finding: FindingSink | None = None,
    on_calls: CallSink | None = None,
    keep_calls: bool = False,
    buffer: int = 64,
    checks: Sequence[Any] | None = None,
    rules: RulesInput = None,
    pii: bool | Iterable[str] | None = None,
    pass_rule: PassRule = None,
) -> AsyncIterator[LiveRun]:
    """Evaluate ``source`` live: findings as they happen, the result at the end.

    Use it for an agent in production (a ``tail -f`` of its trace, or the agent's own loop
    handing over call dicts); use ``evaluate_stream`` when only the result and a callback are
    needed. Inside the block, iterate the run for findings, then read ``run.result``; or
    ``await run.wait()``. Leaving the block early cancels the reading cleanly.

    Args:
        source: as for ``evaluate_stream`` (a path, ``-`` for stdin, a binary file, an async
            byte stream such as :class:`~toolscore.follow.FileFollower`, or an (async)
            iterable of call dicts).
        gold: expected calls (a gold file's path, or the calls); ``None`` runs only the
            behavior and safety checks against an empty gold list.
        forbidden: forbidden-call rules (a JSON rule file's path, or rules in Python form).
        format: ``auto`` or a format name, for byte sources.
        weights: score weights, merged with the defaults and renormalized.
        strict: compare argument types exactly.
        on_finding: also receives each batch's findings (sync or async), before iteration
            sees them.
        on_calls: receives each batch's completed calls, in index order.
        keep_calls: keep every call on the result (memory then grows with the trace).
        buffer: batches of findings the producer may run ahead of the consumer; past it, it
            waits (so a slow consumer bounds memory, never loses findings).
        checks: your own checks, as for :func:`~toolscore.api.evaluate_stream` (an async
            ``afeed`` is awaited; its findings are iterated with the others).
        rules: hard rules (match modes, ordering and counts, allowlist, schemas, data flow),
            as for :func:`~toolscore.api.evaluate_stream`.
        pii: also look for (and redact) personal data: ``True`` for every kind, or kind
            names; ``None`` keeps the enclosing setting.
        pass_rule: what counts as a pass in ``run.result.verdict()`` (see
            :func:`~toolscore.api.evaluate`).

    Yields:
        The :class:`LiveRun`.

    Raises:
        InputError: the gold or rule file cannot be read (at once), or the source cannot be
            read before its first call (from iteration, ``result`` or leaving the block).
        UsageError: a bad ``format``.
        ValueError: a bad weight.
    """
    criterion = pass_criterion(pass_rule)
    with pii_redaction(pii):
        pipeline, gold_calls, norm = open_run(
            gold,
            weights,
            forbidden,
            strict=strict,
            keep_calls=keep_calls,
            on_calls=on_calls,
            checks=checks,
            rules=check_rules(rules, "rules"),
            criterion=criterion,
        )
        send, receive = anyio.create_memory_object_stream[list[Finding]](buffer)
        run = LiveRun(pipeline, gold_calls, norm, receive, send, on_finding, gold is not None)
        run.criterion = criterion
        pipeline.on_finding = run._sink
        try:
            with plain_errors():
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run._produce, _live_source(source), format)
                    try:
                        yield run
                    finally:
                        tg.cancel_scope.cancel()
        finally:
            send.close()
            receive.close()
        if run._failure is not None and not run._failure_seen:
            run._failure_seen = True
            raise run._failure
