"""The check protocol: ``feed(batch) -> findings``, and ``state() -> State`` for the reducer.

A check sees every batch of calls as it is read (:meth:`Check.feed`) and says what it noticed
at once as :class:`~toolscore.calls.Finding` objects; at the end of the stream
(:meth:`Check.finish`) it may add findings only the whole stream shows. Built-in checks do
their work synchronously; a user check that needs I/O (an alert, a judge) overrides the async
twins ``afeed``/``afinish``, which default to the sync ones.

What a check knows is its **state**: :meth:`BaseCheck.state` returns a :class:`State`, a small
frozen, picklable value (a dataclass) that everything after the checks works from:

- the reducer (:func:`toolscore.result.reduce`) takes states only, and asks each for
  :meth:`State.metrics`, its part of ``EvaluationResult.metrics`` in Toolscore's layout;
- parts of a trace read side by side (:mod:`toolscore.parts.trace`), a live run's snapshot
  (:meth:`toolscore.live.LiveRun.snapshot`) and aggregators hand states around.

**Merging.** ``a.merge(b)`` is the state of the calls of ``a`` followed by the calls of ``b``,
where ``b`` is the state of a check that read its part of the trace *on its own*: its calls
numbered from 0, with no knowledge of the calls before it. A check that reads a later part
is told so by :meth:`BaseCheck.begin_part` before its first batch (a check whose state
depends on what came before, the Levenshtein column of the expected check, then keeps what a
merge needs instead). The laws, which :func:`toolscore.testing.check_conformance` tests for
any check:

- associative: ``a.merge(b).merge(c) == a.merge(b.merge(c))``;
- exact: the state of a trace read in any number of consecutive parts, merged in order,
  equals the state of the trace read whole (sums are exact: :class:`~toolscore._exact.
  ExactSum`, so no split changes a bit);
- ``a.merge(b)`` does not change ``a`` or ``b`` (states are values).

A merge may show findings neither part showed alone (a retry whose failed call ended the part
before): :meth:`State.findings_between` returns them, numbered as in the merged state. A part
read by another process numbers its lines from its own start too: :meth:`State.relocated`
moves the locations a state keeps (for its findings) that many lines further on before the
merge. A check whose end of stream depends on the whole (:meth:`BaseCheck.finish`) may take a
merged state back with ``resume(state)`` before it finishes.

Writing a check::

    @dataclass(frozen=True)
    class CountState(State):
        calls: int = 0
        check: str = field(default="count", kw_only=True)

        def merge(self, later: CountState) -> CountState:
            return CountState(self.calls + later.calls)

        def metrics(self) -> dict[str, Any]:
            return {"count_metrics": {"calls": self.calls}}

    class CountCheck(BaseCheck):
        name = "count"

        def __init__(self) -> None:
            self.calls = 0

        def feed(self, batch: Batch) -> list[Finding]:
            self.calls += batch.n_calls  # read columns (batch.columns()), not calls
            return []

        def state(self) -> CountState:
            return CountState(calls=self.calls)

A check's metrics join the result's ``metrics`` after the built-in ones (a key two checks
both give: the first one's, except ``efficiency_metrics``, whose keys are merged). The
call indices a state holds (a violation's ``index``) are its own part's: ``merge`` moves
the later part's by the earlier part's call count, which is why most states count calls.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..calls import Batch, Finding

__all__ = [
    "AsyncCheck",
    "BaseCheck",
    "Check",
    "State",
    "UserCheck",
    "as_check",
    "user_checks",
]

S = TypeVar("S", bound="State")


@dataclass(frozen=True)
class State:
    """What a check knows, as a value: merged in order, reduced to metrics.

    Subclasses are frozen dataclasses (picklable: they cross process boundaries) and
    implement :meth:`merge` and :meth:`metrics`; see the module docstring for the laws.
    """

    check: str = field(default="check", kw_only=True)
    """The name of the check whose state this is (keyword-only, so a subclass's own fields
    come first when it is built positionally)."""

    def merge(self: S, later: S) -> S:
        """The state of this state's calls followed by ``later``'s (read on its own)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be merged")

    def findings_between(self: S, later: S) -> list[Finding]:
        """Findings only the two parts together show (a retry across the boundary), numbered
        as in the merged state: call indices and lines of the whole."""
        return []

    def relocated(self: S, lines: int) -> S:
        """This state with the locations it keeps ``lines`` lines further on (a part read on
        its own numbers its lines from 1)."""
        return self

    def metrics(self) -> dict[str, Any]:
        """This state's part of ``EvaluationResult.metrics`` (top-level keys)."""
        return {}

    def score_metrics(self) -> dict[str, Any]:
        """What the score, the verdict and a dataset's record read of :meth:`metrics`
        (``reduce(..., score_only=True)``); a state whose full metrics cost more than that
        (the trajectory steps, the identical-call count) gives less here."""
        return self.metrics()


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
    """Convenience base: implement ``feed`` (and ``finish``, ``state``); the async twins call
    them.

    A check whose :meth:`state` merges (see the module docstring) sets :attr:`mergeable`, so
    that parts of a trace read by other processes (:mod:`toolscore.parts.trace`) can be merged.
    """

    name = "check"
    mergeable = False
    """True when :meth:`state` returns a :class:`State` whose ``merge`` is implemented."""

    def feed(self, batch: Batch) -> list[Finding]:
        return []

    def finish(self) -> list[Finding]:
        return []

    def begin_part(self) -> None:
        """This check reads a later part of a trace on its own (call before its first batch):
        its state is to be merged after the state of the calls before the part. Nothing to
        do for a check whose merge needs nothing more (the default)."""

    def state(self) -> State | None:
        """What this check knows so far, as a value (None: nothing for the reducer)."""
        return None

    async def afeed(self, batch: Batch) -> list[Finding]:
        return self.feed(batch)

    async def afinish(self) -> list[Finding]:
        return self.finish()


class UserCheck(BaseCheck):
    """A user's check as the pipeline runs it: any object with ``feed(batch) -> findings``,
    and optionally an async ``afeed(batch)`` (which may do I/O; the async drivers,
    ``evaluate_stream`` and ``watch``, await it instead of ``feed``), ``finish()`` /
    ``afinish()``, ``state()`` (a :class:`State`: its metrics join the result's),
    ``begin_part()``/``resume(state)``, ``name`` and ``mergeable``.

    Its findings go to the same sinks and reports as the built-in checks' (the findings
    stream, the JSON report, the console, ``result.findings``).
    """

    def __init__(self, check: Any) -> None:
        if not callable(getattr(check, "feed", None)):
            raise TypeError(f"a check needs a feed(batch) method, got {type(check).__name__}")
        self.check = check
        self.name = str(getattr(check, "name", type(check).__name__))
        self.mergeable = bool(getattr(check, "mergeable", False)) and hasattr(check, "state")

    def feed(self, batch: Batch) -> list[Finding]:
        return list(self.check.feed(batch) or [])

    def finish(self) -> list[Finding]:
        finish = getattr(self.check, "finish", None)
        return list(finish() or []) if finish is not None else []

    async def afeed(self, batch: Batch) -> list[Finding]:
        afeed = getattr(self.check, "afeed", None)
        if afeed is None:
            return self.feed(batch)
        found = afeed(batch)
        if inspect.isawaitable(found):
            found = await found
        return list(found or [])

    async def afinish(self) -> list[Finding]:
        afinish = getattr(self.check, "afinish", None)
        if afinish is None:
            return self.finish()
        found = afinish()
        if inspect.isawaitable(found):
            found = await found
        return list(found or [])

    def state(self) -> State | None:
        state = getattr(self.check, "state", None)
        return None if state is None else state()

    def begin_part(self) -> None:
        begin = getattr(self.check, "begin_part", None)
        if begin is not None:
            begin()


def as_check(check: Any) -> BaseCheck:
    """``check`` as the pipeline runs it: a :class:`BaseCheck` as it is, anything else with a
    ``feed`` method through :class:`UserCheck`."""
    return check if isinstance(check, BaseCheck) else UserCheck(check)


def user_checks(checks: Iterable[Any] | None) -> list[BaseCheck]:
    """The user's checks (``checks=[...]`` of the drivers), ready for the pipeline."""
    return [] if checks is None else [as_check(c) for c in checks]
