"""Failed calls, retries of a failure, and identical calls (Toolscore §3.6).

The check reads ``batch.done``: calls in index order whose failure is final (decided by the
rules of :mod:`toolscore.failed`). State is the previous call's signature and failure flag, a
few counters, a ``Counter`` of failed tool names and a
:class:`~toolscore._distinct.DistinctCounter` of the
signatures' fingerprints for ``identical_count`` (bounded memory: 8 bytes a call in a buffer
that spills to disk every 32,768 calls).

A retry is a call whose immediately previous call failed and has the same signature (tool and
canonical arguments); a chain fail, fail, same counts two, and the retry may fail itself.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from .._distinct import DistinctCounter, DistinctSet
from ..calls import Batch, Finding, Location, Severity
from ..capped import join_capped
from ..failed import DEFAULT_FAILURES, FailureRules
from ..redact import redact_each
from ._base import BaseCheck, State

__all__ = ["ErrorsCheck", "ErrorsState", "errors_check"]

_ERROR_CHARS = 200


def _short(text: str) -> str:
    """A redacted error message cut to :data:`_ERROR_CHARS` characters."""
    if len(text) > _ERROR_CHARS:
        text = text[: _ERROR_CHARS - 1] + "…"
    return text


_FAILED = "call {call} {tool} failed"
_FAILED_BECAUSE = "call {call} {tool} failed: {detail}"
_RETRY = "call {call} {tool} repeats failed call {previous} with the same arguments"


_TOOLSCORE_RULES = ("is_error", "error")
"""The failure rules Toolscore had: their findings read as before, without the rule."""


def _template(error: str | None, rule: str) -> str:
    if rule in _TOOLSCORE_RULES:
        return _FAILED_BECAUSE if error else _FAILED
    named = rule.replace("{", "{{").replace("}", "}}")  # the rule id is text, not a field
    return f"call {{call}} {{tool}} failed ({named})" + (": {detail}" if error else "")


def _failed(
    tool: str, error: str | None, location: Location | None, i: int, rule: str = "is_error"
) -> Finding:
    """A failed call's finding; ``error`` is its message, redacted already; ``rule``: the
    rule of :mod:`toolscore.failed` that made it a failure (named in the message unless it
    is Toolscore's ``is_error`` or ``error``)."""
    return Finding(
        "errors",
        "failed_call",
        "warning",
        None,
        i,
        tool,
        location,
        detail=_short(error) if error else None,
        template=_template(error, rule),
    )


def _retry(tool: str, location: Location | None, i: int) -> Finding:
    return Finding(
        "errors", "retry_after_error", "warning", None, i, tool, location, template=_RETRY
    )


@dataclass(frozen=True)
class ErrorsState(State):
    """What the errors check knows: counts, failed tools, distinct signatures, and the first
    and last calls (for a retry across the boundary of two parts)."""

    check: str = field(default="errors", kw_only=True)
    calls: int = 0
    errors: int = 0
    retries: int = 0
    failed: tuple[tuple[str, int], ...] = ()
    """Failed tool names with their counts, in first-failure order."""
    distinct: DistinctSet | None = None
    """The calls' signature fingerprints (None: no call)."""
    first: tuple[str, bytes, Location | None] | None = None
    """The first call's tool, signature and location."""
    last: tuple[str, bytes, bool] | None = None
    """The last call's tool, signature and whether it failed."""
    identical: bool = True
    """False for a check that did not count identical calls (its metrics then leave the
    identical-call count out)."""

    def _retry_between(self, later: ErrorsState) -> bool:
        last, first = self.last, later.first
        return last is not None and first is not None and last[2] and first[:2] == last[:2]

    def merge(self, later: ErrorsState) -> ErrorsState:
        if not later.calls:
            return self
        if not self.calls:
            return later
        failed = dict(self.failed)
        for tool, n in later.failed:
            failed[tool] = failed.get(tool, 0) + n
        distinct = (
            self.distinct.merge(later.distinct)
            if self.distinct is not None and later.distinct is not None
            else None
        )
        return ErrorsState(
            calls=self.calls + later.calls,
            errors=self.errors + later.errors,
            retries=self.retries + later.retries + self._retry_between(later),
            failed=tuple(failed.items()),
            distinct=distinct,
            first=self.first,
            last=later.last,
            identical=self.identical and later.identical,
        )

    def findings_between(self, later: ErrorsState) -> list[Finding]:
        """A retry across the boundary: ``later``'s first call repeats the failed last call
        of this part."""
        if not self._retry_between(later):
            return []
        assert later.first is not None
        tool, _, location = later.first
        return [_retry(tool, location, self.calls)]

    def relocated(self, lines: int) -> ErrorsState:
        first = self.first
        loc = None if first is None else first[2]
        if not lines or first is None or loc is None or loc.line is None:
            return self
        moved = Location(loc.source, loc.line + lines, loc.offset)
        return replace(self, first=(first[0], first[1], moved))

    @property
    def identical_count(self) -> int:
        """Calls minus distinct signatures."""
        return self.calls - (len(self.distinct) if self.distinct is not None else 0)

    @property
    def failed_tools(self) -> list[tuple[str, int]]:
        """Failed tool names with counts, most first; ties in first-failure order."""
        return Counter(dict(self.failed)).most_common()

    def metrics(self) -> dict[str, Any]:
        """``{"efficiency_metrics": {identical_count, identical_rate, error_count, error_rate,
        retry_after_error_count}}``; rates are 0.0 when there were no calls."""
        n = self.calls
        efficiency: dict[str, Any] = {}
        if self.identical:
            identical = self.identical_count
            efficiency["identical_count"] = identical
            efficiency["identical_rate"] = identical / n if n else 0.0
        efficiency["error_count"] = self.errors
        efficiency["error_rate"] = self.errors / n if n else 0.0
        efficiency["retry_after_error_count"] = self.retries
        return {"efficiency_metrics": efficiency}

    def score_metrics(self) -> dict[str, Any]:
        """Nothing: the score does not read this check (its counts and failed tools are
        read from the state itself)."""
        return {}


class ErrorsCheck(BaseCheck):
    """Counts failures, retries after a failure and identical calls; see the module docstring."""

    name = "errors"
    mergeable = True

    def __init__(
        self, count_identical: bool = True, failures: FailureRules = DEFAULT_FAILURES
    ) -> None:
        self.failures = failures
        """What counts as a failed call (:mod:`toolscore.failed`)."""
        self.total_calls = 0
        self.error_count = 0
        self.retry_after_error_count = 0
        self._seen = DistinctCounter() if count_identical else None
        """The signatures' fingerprints (None: identical calls are not counted; the state
        then says so)."""
        self._failed: Counter[str] = Counter()
        self._prev_tool: str | None = None
        self._prev_sig = b""
        self._prev_failed = False
        self._first: tuple[str, bytes, Location | None] | None = None
        """The first call's tool, signature and location (for a merge across parts)."""

    def feed(self, batch: Batch) -> list[Finding]:
        cols = batch.done_columns()
        n = cols.n
        if not n:
            return []
        tools = cols.tools
        sigs = cols.sigs()
        if self._seen is not None:
            self._seen.update(map(hash, zip(tools, sigs, strict=True)))  # _signature.fingerprint
        why = cols.failures(self.failures)
        failed = [f for f, _ in why]
        # a retry: the call right after a failed one, with the same tool and arguments
        retries: list[int] = []
        if self._prev_failed and tools[0] == self._prev_tool and sigs[0] == self._prev_sig:
            retries.append(0)
        for f in failed:
            j = f + 1
            if j < n and tools[j] == tools[f] and sigs[j] == sigs[f]:
                retries.append(j)
        base = self.total_calls
        if not base:
            self._first = (tools[0], sigs[0], cols.location(0))
        self.total_calls = base + n
        self.error_count += len(failed)
        self.retry_after_error_count += len(retries)
        self._failed.update(tools[f] for f in failed)
        self._prev_tool, self._prev_sig = tools[-1], sigs[-1]
        self._prev_failed = bool(failed) and failed[-1] == n - 1
        if not failed and not retries:
            return []
        findings: list[Finding] = []
        # the batch's error messages redacted together: one prefilter search for them all
        errors = [cols.error(f) for f in failed]
        said = [e for e in errors if e]
        clean = iter(redact_each(said))
        # in call order; within a call, the retry before the failure
        events = sorted([(j, -1) for j in retries] + [(f, k) for k, f in enumerate(failed)])
        for pos, k in events:
            i = cols.index(pos)
            if i < 0:
                i = base + pos
            if k < 0:
                findings.append(_retry(tools[pos], cols.location(pos), i))
            else:
                error = next(clean) if errors[k] else None
                findings.append(_failed(tools[pos], error, cols.location(pos), i, why[k][1]))
        return findings

    def state(self) -> ErrorsState:
        prev = self._prev_tool
        seen = self._seen
        return ErrorsState(
            calls=self.total_calls,
            errors=self.error_count,
            retries=self.retry_after_error_count,
            failed=tuple(self._failed.items()),
            distinct=seen.snapshot() if seen is not None and self.total_calls else None,
            first=self._first,
            last=None if prev is None else (prev, self._prev_sig, self._prev_failed),
            identical=seen is not None,
        )

    @property
    def identical_count(self) -> int:
        """Calls minus distinct signatures (past 32,768 calls, a count reads the spilled run
        files: a few hundredths of a second per million calls)."""
        if self._seen is None:
            raise RuntimeError("this errors check does not count identical calls")
        return self.total_calls - len(self._seen)

    @property
    def failed_tools(self) -> list[tuple[str, int]]:
        """Failed tool names with counts, most first; ties in first-failure order."""
        return self._failed.most_common()

    def summary(self) -> list[tuple[Severity, str]]:
        """The end-of-run warnings of Toolscore's behavior findings (§12.1, items 3 and 4)."""
        out: list[tuple[Severity, str]] = []
        if self.error_count:
            failed = self.failed_tools
            tools = join_capped(
                (f"{name} x{n}" if n > 1 else name for name, n in failed), len(failed)
            )
            out.append(
                ("warning", f"{self.error_count} of {self.total_calls} tool calls failed ({tools})")
            )
        n = self.retry_after_error_count
        if n == 1:
            out.append(("warning", "1 call repeats a failed call with the same arguments"))
        elif n:
            out.append(("warning", f"{n} calls repeat a failed call with the same arguments"))
        return out

    def metrics(self) -> dict[str, Any]:
        """:meth:`ErrorsState.metrics` of the calls so far."""
        return self.state().metrics()


def errors_check(
    count_identical: bool = True, failures: FailureRules = DEFAULT_FAILURES
) -> ErrorsCheck:
    """A fresh failures-and-retries check (``count_identical=False``: without the
    identical-call count, for readers of :attr:`~ErrorsCheck.failed_tools` and the findings
    only, such as a dataset's records; ``failures``: what counts as a failed call)."""
    return ErrorsCheck(count_identical, failures)
