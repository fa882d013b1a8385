"""``toolscore watch --trace-key KEY``: a live stream of interleaved traces, a session each.

Every call goes to the session its ``KEY`` names (:func:`toolscore.live.watch_sessions`):
rules, budgets (``max_calls``) and scores are per session. Each finding is printed the moment
its call is read, with its session::

    [session a | calls 3] ERROR    call 3 fetch exceeds the step budget of 2 calls (max_calls)

and each session, when it closes (end of input, ``--idle`` seconds without a call, or the
oldest past ``--max-sessions``), gets one line with its verdict::

    [session a] closed (idle): 3 calls, grade B FAIL (84.0%), 1 violation(s) (1 broken rule(s))

``--findings FILE`` appends each finding as a JSON line with ``time`` (ISO 8601 UTC) and
``session`` keys. The exit
status is ``eval``'s over all sessions: 2 for an input error, 1 when a session had a
violation (``--fail-on-violations``) or fell below ``--fail-under``, else 0.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from .._exitcodes import Outcome, exit_code
from .._interrupt import StopOnSignal, Terminated
from ..errors import ToolscoreError
from ..live import plain_errors
from ..live_sessions import watch_sessions
from ..sanitize import shown
from ..sessions import ClosedSession
from ..verdict import passes
from ._options import WatchOptions
from ._util import error_line, failure_status, watch_source

if TYPE_CHECKING:
    from ..live_sessions import SessionsRun
    from ..sessions import ClosedSession, SessionFindings

__all__ = ["run_watch_sessions", "session_line"]


def session_line(closed: ClosedSession) -> str:
    """A closed session's line (redacted, control characters shown escaped)."""
    verdict = closed.verdict
    calls = closed.result.trace_calls_count
    head = f"[session {shown(closed.session)}] closed ({closed.why}): {calls} calls"
    if verdict.score is None:
        judged = "no gold: checks only"
    else:
        word = "PASS" if verdict.passed else "FAIL"
        judged = f"grade {verdict.grade} {word} ({verdict.score:.1%})"
    found = verdict.violations
    said = f"{found.total} violation(s)" + (f" ({found.describe()})" if found.total else "")
    return f"{head}, {judged}, {said}"


class _Tally:
    """What the exit status needs of the sessions closed so far."""

    def __init__(self, opts: WatchOptions, threshold: float | str | None) -> None:
        self.opts = opts
        self.threshold = threshold
        self.sessions = 0
        self.passed = 0
        self.violations = 0
        self.below = 0
        self.input_errors = 0

    def add(self, closed: ClosedSession) -> None:
        verdict = closed.verdict
        self.sessions += 1
        self.passed += bool(verdict.passed)
        self.violations += verdict.violations.total
        result = closed.result
        self.input_errors += int(result.input_error is not None) + result.input_problems
        threshold = self.threshold
        if threshold is not None and verdict.score is not None:
            ok = passes(verdict.score, threshold)
            self.below += not ok

    def status(self) -> int:
        opts = self.opts
        violations = opts.fail_on_violations and self.violations > 0
        if violations:
            error_line(f"{self.violations} violation(s) found (--fail-on-violations)")
        if self.below:
            error_line(f"{self.below} session(s) below --fail-under {opts.fail_under}")
        return exit_code(
            Outcome(
                violations=violations,
                below_threshold=self.below > 0,
                input_error=self.input_errors > 0,
            )
        )


def _gold_for(gold: str | None, workdir: str) -> Any:
    """A session's gold: a keyed gold's entry by id, or the one gold file (None: no gold)."""
    if gold is None:
        return lambda session: None
    from ..dataset.gold import build_gold, gold_lookup  # the dataset's gold lookup: on use

    lookup = gold_lookup(build_gold(gold, workdir, key=None))
    return lambda session: lookup.get(session, None)


class _Out:
    """Plain lines to stdout, flushed at once; finding records to ``--findings``."""

    def __init__(self, opts: WatchOptions) -> None:
        self._fd: int | None = None
        if opts.findings is not None:
            from ..outputs import open_append  # output helpers: only with --findings

            self._fd = open_append(opts.findings)

    def findings(self, event: SessionFindings, calls: int) -> None:
        if self._fd is not None:
            from ..reports.json import findings_lines  # the JSON writer: only with --findings

            os.write(self._fd, findings_lines(event.findings, event.session))
        prefix = f"[session {shown(event.session)} | calls {calls}]"
        lines = [f"{prefix} {f.severity.upper():<7}  {shown(f.message)}" for f in event.findings]
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()

    def closed(self, closed: ClosedSession) -> None:
        sys.stdout.write(session_line(closed) + "\n")
        sys.stdout.flush()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


async def _drive(opts: WatchOptions, weights: Any, tally: _Tally, out: _Out, stop: Any) -> None:
    loop = asyncio.get_running_loop()
    current: list[SessionsRun] = []

    def stop_all() -> None:
        for run in current:
            run.stop()

    def on_first(signum: int) -> None:
        loop.call_soon_threadsafe(stop_all)

    stop.on_first = on_first
    with plain_errors(), tempfile.TemporaryDirectory(prefix="toolscore-watch-") as work:
        source = watch_source(opts)
        try:
            async with watch_sessions(
                source,
                trace_key=str(opts.trace_key),
                gold_for=_gold_for(opts.gold, work),
                forbidden=opts.forbidden,
                format=opts.format,
                weights=weights,
                idle=opts.idle,
                max_open=opts.max_sessions,
            ) as run:
                current.append(run)
                if stop.requested:
                    run.stop()
                async for event in run:
                    if isinstance(event, ClosedSession):
                        tally.add(event)
                        out.closed(event)
                    else:
                        session = run.sessions.open.get(event.session)
                        out.findings(event, 0 if session is None else session.calls)
        finally:
            if isinstance(source, anyio.abc.AsyncResource):
                with anyio.CancelScope(shield=True):
                    await source.aclose()


def run_watch_sessions(opts: WatchOptions, weights: Any, threshold: float | str | None) -> int:
    """Run ``toolscore watch --trace-key`` to the end of input (or a signal)."""
    tally = _Tally(opts, threshold)
    started = time.monotonic()
    with StopOnSignal() as stop:
        out = _Out(opts)
        try:
            anyio.run(_drive, opts, weights, tally, out, stop)
        except (ToolscoreError, ValueError, OSError) as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            return stop.exit_status(failure_status(exc))
        except (KeyboardInterrupt, Terminated):
            error_line("interrupted")
            return stop.exit_status(130)
        finally:
            out.close()
        elapsed = time.monotonic() - started
        sys.stdout.write(
            f"> Sessions: {tally.sessions} closed, {tally.passed} passed, "
            f"{tally.violations} violation(s), in {elapsed:.1f} s\n"
        )
        sys.stdout.flush()
        return stop.exit_status(tally.status())
