"""Sessions: interleaved traces, each with its own pipeline, budget, score and verdict."""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import datetime, timezone
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from toolscore import evaluate
from toolscore.calls import Batch
from toolscore.gold import calls_from_dicts
from toolscore.hardrules.spec import ruleset
from toolscore.live_sessions import TraceSessions, session_opener, watch_sessions
from toolscore.sessions import ClosedSession, SessionFindings

GOLD = [{"tool": "search", "args": {"q": "x"}}, {"tool": "fetch", "args": {"url": "u"}}]
RULES = {"max_calls": 2, "forbidden": [{"tool": "rm"}]}

# three sessions, interleaved: a makes 3 calls (one past the budget), b 2, c 1 forbidden call
LINES = [
    {"trace_id": "a", "tool": "search", "args": {"q": "x"}},
    {"trace_id": "b", "tool": "search", "args": {"q": "x"}},
    {"trace_id": "a", "tool": "fetch", "args": {"url": "u"}},
    {"trace_id": "c", "tool": "rm", "args": {"path": "/"}},
    {"trace_id": "b", "tool": "fetch", "args": {"url": "u"}},
    {"trace_id": "a", "tool": "fetch", "args": {"url": "u"}},
]


def _calls(line: dict[str, Any]) -> Any:
    """The line as a call whose metadata names its session (as a reader makes it)."""
    plain = {k: v for k, v in line.items() if k != "trace_id"}
    return calls_from_dicts([{**plain, "metadata": {"trace_id": line["trace_id"]}}])


def _alone(session: str) -> Any:
    calls = [{k: v for k, v in line.items() if k != "trace_id"} for line in LINES]
    mine = [c for c, line in zip(calls, LINES, strict=True) if line["trace_id"] == session]
    return evaluate(GOLD, mine, forbidden=RULES).verdict()


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _router(**options: Any) -> TraceSessions:
    opener = session_opener(gold=calls_from_dicts(GOLD), rules=ruleset(RULES))
    return TraceSessions("trace_id", opener, **options)


def test_each_session_keeps_its_own_budget_and_verdict() -> None:
    sessions = _router()
    seen: list[tuple[str, str, int | None]] = []
    for line in LINES:  # one call a batch, as a live stream hands them over
        calls = _calls(line)
        found, closed = sessions.route(Batch(calls=calls, done=calls))
        assert closed == []
        seen += [(f.session, x.kind, x.call_index) for f in found for x in f.findings]
    # a's third call is past its budget of two (its own index 2), c's call is forbidden
    assert ("a", "step_budget_exceeded", 2) in seen
    assert ("c", "forbidden_call", 0) in seen
    assert not any(session == "b" for session, *_ in seen)
    assert len(sessions) == 3 and sessions.open["a"].calls == 3
    closed = {c.session: c for c in sessions.close_all()}
    assert set(closed) == {"a", "b", "c"}
    for session, done in closed.items():
        alone = _alone(session)
        assert done.why == "end"
        assert done.verdict.score == pytest.approx(alone.score, abs=1e-9)
        assert (done.verdict.violations, done.verdict.passed) == (alone.violations, alone.passed)
    assert closed["b"].verdict.passed is True
    assert closed["a"].verdict.violations.rules == 1


def test_idle_sessions_close_and_the_oldest_is_evicted_past_the_cap() -> None:
    clock = _Clock()
    sessions = _router(idle=10.0, max_open=2, clock=clock)

    def feed(line: dict[str, Any]) -> list[ClosedSession]:
        calls = _calls(line)
        return sessions.route(Batch(calls=calls, done=calls))[1]

    assert feed(LINES[0]) == [] and feed(LINES[1]) == []
    clock.now = 5.0
    assert feed(LINES[2]) == []  # a is used again: b is now the oldest
    clock.now = 8.0
    (evicted,) = feed(LINES[3])  # c opens: two are open already
    assert (evicted.session, evicted.why) == ("b", "evicted") and sessions.evicted == 1
    clock.now = 15.5
    (idle,) = sessions.expire()  # a was last fed at 5, c at 8
    assert (idle.session, idle.why) == ("a", "idle")
    assert idle.result.trace_calls_count == 2
    clock.now = 100.0
    assert [c.session for c in sessions.expire()] == ["c"]
    assert len(sessions) == 0


def test_findings_without_a_session_name_go_to_the_unnamed_one() -> None:
    sessions = _router()
    calls = calls_from_dicts([{"tool": "rm"}])
    found, _ = sessions.route(Batch(calls=calls, done=calls))
    assert [f.session for f in found] == [""] and sessions.unnamed == 1


@pytest.mark.anyio
async def test_watch_sessions_over_a_real_pipe() -> None:
    """A writer thread writes the interleaved lines into a pipe, one at a time; each
    session's findings arrive while the writer is still writing, and each session closes
    when it has been idle."""
    read_fd, write_fd = os.pipe()
    release = threading.Event()

    def writer() -> None:
        with os.fdopen(write_fd, "wb", buffering=0) as w:
            for line in LINES:
                w.write((json.dumps(line) + "\n").encode())
                time.sleep(0.02)
            release.wait(10)  # the stream stays open until the sessions were seen idle

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    events: list[Any] = []
    with os.fdopen(read_fd, "rb", buffering=0) as source:
        async with watch_sessions(
            source, trace_key="trace_id", gold=GOLD, forbidden=RULES, idle=0.3
        ) as run:
            async for event in run:
                events.append(event)
                closed = [e for e in events if isinstance(e, ClosedSession)]
                if len(closed) == 3:
                    release.set()
                    run.stop()
    thread.join(5)
    found = [
        (e.session, f.kind) for e in events if isinstance(e, SessionFindings) for f in e.findings
    ]
    assert ("a", "step_budget_exceeded") in found and ("c", "forbidden_call") in found
    closed = {e.session: e for e in events if isinstance(e, ClosedSession)}
    assert set(closed) == {"a", "b", "c"}
    assert all(c.why == "idle" for c in closed.values())
    for session, done in closed.items():
        assert done.verdict.violations == _alone(session).violations
    # every finding of a session came before that session closed
    for session in closed:
        positions = [i for i, e in enumerate(events) if e.session == session]
        assert isinstance(events[positions[-1]], ClosedSession)
    await anyio.lowlevel.checkpoint()


def test_watch_trace_key_keeps_a_budget_per_session_over_a_pipe(tmp_path: Any) -> None:
    """The real command on a real pipe: three interleaved sessions keep three budgets; each
    finding line names its session and is printed while the writer is still writing; each
    session closes when idle, with its verdict."""
    import subprocess
    import sys

    from _cli import assert_stamped, cli_env

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES), "utf-8")
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(GOLD), "utf-8")
    findings = tmp_path / "findings.jsonl"
    since = datetime.now(timezone.utc)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore", "watch", "--trace-key", "trace_id", "--gold",
         str(gold), "--forbidden", str(rules), "--idle", "0.5", "--fail-on-violations",
         "--findings", str(findings)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    for line in LINES:
        proc.stdin.write((json.dumps(line) + "\n").encode())
        proc.stdin.flush()
    # a finding arrives while the pipe is still open (the writer has not closed it)
    first = proc.stdout.readline().decode()
    assert first.startswith("[session ") and "ERROR" in first
    closed = []
    while len(closed) < 3:  # the sessions close on their own, idle, the pipe still open
        line = proc.stdout.readline().decode()
        assert line, "the watch ended before the sessions closed"
        if "] closed (idle)" in line:
            closed.append(line)
    rest, err = proc.communicate(timeout=30)  # (closes the pipe: the end of input)
    assert proc.returncode == 1, err  # violations, --fail-on-violations
    by_session = {line.split("]")[0].removeprefix("[session "): line for line in closed}
    assert "1 violation(s) (1 broken rule(s))" in by_session["a"]
    assert "grade A PASS" in by_session["b"] and "0 violation(s)" in by_session["b"]
    assert "1 violation(s) (1 forbidden call(s))" in by_session["c"]
    assert "> Sessions: 3 closed, 1 passed, 2 violation(s)" in rest.decode()
    records = [json.loads(x) for x in findings.read_text("utf-8").splitlines()]
    assert {(r["session"], r["kind"]) for r in records} == {
        ("a", "step_budget_exceeded"),
        ("c", "forbidden_call"),
    }
    assert_stamped(records, since)
