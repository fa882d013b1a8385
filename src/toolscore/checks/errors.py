"""Failed calls, retries of a failure, and identical calls (Toolscore §3.6).

The check reads ``batch.done``: calls in index order whose failure flag (``call.is_error``)
is final. State is the previous call's signature and failure flag, a few counters, a
``Counter`` of failed tool names and a :class:`~toolscore._distinct.DistinctCounter` of the
signatures' fingerprints for ``identical_count`` (bounded memory; it spills to disk past
65,536 distinct signatures).

A retry is a call whose immediately previous call failed and has the same signature (tool and
canonical arguments); a chain fail, fail, same counts two, and the retry may fail itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._distinct import DistinctCounter
from .._signature import canonical_args
from ..calls import Batch, Finding, Severity, ToolCall
from ..redact import redact_secrets
from ._base import BaseCheck

__all__ = ["ErrorsCheck", "errors_check"]

_ERROR_CHARS = 200


def _short_error(error: str) -> str:
    text = redact_secrets(error)
    if len(text) > _ERROR_CHARS:
        text = text[: _ERROR_CHARS - 1] + "…"
    return text


def _failed(call: ToolCall, i: int) -> Finding:
    error = call.error
    message = f"call {i + 1} {call.tool} failed"
    if error:
        message += f": {_short_error(error)}"
    return Finding(
        check="errors",
        kind="failed_call",
        severity="warning",
        message=message,
        call_index=i,
        tool=call.tool,
        location=call.location,
    )


def _retry(call: ToolCall, i: int) -> Finding:
    return Finding(
        check="errors",
        kind="retry_after_error",
        severity="warning",
        message=f"call {i + 1} {call.tool} repeats failed call {i} with the same arguments",
        call_index=i,
        tool=call.tool,
        location=call.location,
    )


class ErrorsCheck(BaseCheck):
    """Counts failures, retries after a failure and identical calls; see the module docstring."""

    name = "errors"

    def __init__(self) -> None:
        self.total_calls = 0
        self.error_count = 0
        self.retry_after_error_count = 0
        self._seen = DistinctCounter()
        self._failed: Counter[str] = Counter()
        self._prev_tool: str | None = None
        self._prev_sig = b""
        self._prev_failed = False

    def feed(self, batch: Batch) -> list[Finding]:
        findings: list[Finding] = []
        add = self._seen.add
        prev_tool = self._prev_tool
        prev_sig = self._prev_sig
        prev_failed = self._prev_failed
        for call in batch.done:
            tool = call.tool
            sig = canonical_args(call.args)
            add(hash((tool, sig)))  # _signature.fingerprint, inlined
            i = call.index if call.index >= 0 else self.total_calls
            self.total_calls += 1
            if prev_failed and tool == prev_tool and sig == prev_sig:
                self.retry_after_error_count += 1
                findings.append(_retry(call, i))
            failed = call.is_error
            if failed:
                self.error_count += 1
                self._failed[tool] += 1
                findings.append(_failed(call, i))
            prev_tool, prev_sig, prev_failed = tool, sig, failed
        self._prev_tool, self._prev_sig, self._prev_failed = prev_tool, prev_sig, prev_failed
        return findings

    @property
    def identical_count(self) -> int:
        """Calls minus distinct signatures (past 65,536 distinct signatures, a count reads
        their run files: a few hundredths of a second per million calls)."""
        return self.total_calls - len(self._seen)

    @property
    def failed_tools(self) -> list[tuple[str, int]]:
        """Failed tool names with counts, most first; ties in first-failure order."""
        return self._failed.most_common()

    def summary(self) -> list[tuple[Severity, str]]:
        """The end-of-run warnings of Toolscore's behavior findings (§12.1, items 3 and 4)."""
        out: list[tuple[Severity, str]] = []
        if self.error_count:
            tools = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in self.failed_tools)
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
        """``{"efficiency_metrics": {identical_count, identical_rate, error_count, error_rate,
        retry_after_error_count}}``; rates are 0.0 when there were no calls."""
        n = self.total_calls
        identical = self.identical_count
        return {
            "efficiency_metrics": {
                "identical_count": identical,
                "identical_rate": identical / n if n else 0.0,
                "error_count": self.error_count,
                "error_rate": self.error_count / n if n else 0.0,
                "retry_after_error_count": self.retry_after_error_count,
            }
        }


def errors_check() -> ErrorsCheck:
    """A fresh failures-and-retries check."""
    return ErrorsCheck()
