from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from toolscore.calls import Batch, Finding, ToolCall
from toolscore.checks._base import BaseCheck
from toolscore.errors import TruncatedTrace
from toolscore.pipeline import MAX_KEPT_FINDINGS, Pipeline, run_async, run_sync


class Recorder(BaseCheck):
    """Records what it is fed and flags every call named ``bad``."""

    name = "recorder"

    def __init__(self) -> None:
        self.new: list[int] = []
        self.done: list[int] = []
        self.finished = 0

    def feed(self, batch: Batch) -> list[Finding]:
        self.new.extend(c.index for c in batch.calls)
        self.done.extend(c.index for c in batch.done)
        return [
            Finding("recorder", "bad", "error", f"call {c.index + 1} bad", call_index=c.index)
            for c in batch.calls
            if c.tool == "bad"
        ]

    def finish(self) -> list[Finding]:
        self.finished += 1
        return [Finding("recorder", "end", "warning", "end")]


def call(i: int, tool: str = "t", complete: bool = True) -> ToolCall:
    return ToolCall(tool=tool, index=i, complete=complete)


def test_done_calls_are_released_in_index_order() -> None:
    rec = Recorder()
    pipe = Pipeline([rec], keep_calls=True)
    c0, c1, c2 = call(0, complete=False), call(1), call(2)
    pipe.process(Batch(calls=[c0, c1, c2], done=[c1, c2]))
    assert rec.done == []  # c1 and c2 wait for c0
    pipe.process(Batch(done=[c0]))
    assert rec.done == [0, 1, 2]
    assert pipe.calls is not None and [c.index for c in pipe.calls] == [0, 1, 2]


def test_finish_flushes_held_calls_and_runs_once() -> None:
    rec = Recorder()
    pipe = Pipeline([rec])
    c0, c1 = call(0, complete=False), call(1)
    run_sync(pipe, [Batch(calls=[c0, c1], done=[c1])])
    # c0's result never came and no decoder said so (a stop, a broken source): at the end it
    # is complete without one, released before c1, which waited for it.
    assert rec.done == [0, 1]
    assert c0.complete
    assert rec.finished == 1
    assert pipe.calls_read == 2


def test_findings_go_to_sinks_in_call_order_per_batch() -> None:
    seen: list[list[str]] = []
    calls_seen: list[int] = []
    pipe = Pipeline(
        [Recorder()],
        on_finding=lambda fs: seen.append([f.message for f in fs]),
        on_calls=lambda cs: calls_seen.extend(c.index for c in cs),
    )
    b1 = [call(0, "bad"), call(1)]
    b2 = [call(2), call(3, "bad")]
    run_sync(pipe, [Batch(calls=b1, done=b1), Batch(calls=b2, done=b2)])
    assert seen == [["call 1 bad"], ["call 4 bad"], ["end"]]
    assert calls_seen == [0, 1, 2, 3]


def test_fatal_error_stops_and_keeps_calls_read() -> None:
    rec = Recorder()
    pipe = Pipeline([rec])
    err = TruncatedTrace("t.json", "ended inside a value", offset=10)
    first = [call(0)]
    never = [call(1)]
    run_sync(pipe, [Batch(calls=first, done=first, error=err), Batch(calls=never, done=never)])
    assert pipe.error is err
    assert rec.new == [0]


def test_kept_findings_are_capped_but_sinks_see_all() -> None:
    n = MAX_KEPT_FINDINGS + 5
    total = 0

    def sink(fs: list[Finding]) -> None:
        nonlocal total
        total += len(fs)

    pipe = Pipeline([Recorder()], on_finding=sink)
    calls = [call(i, "bad") for i in range(n)]
    run_sync(pipe, [Batch(calls=calls, done=calls)])
    assert total == n + 1
    assert len(pipe.findings) == MAX_KEPT_FINDINGS
    assert pipe.findings_omitted == 6


def test_sync_driver_refuses_async_sink() -> None:
    async def sink(fs: list[Finding]) -> None:
        return None

    pipe = Pipeline([Recorder()], on_finding=sink)
    calls = [call(0, "bad")]
    with pytest.raises(TypeError, match="evaluate_stream"):
        run_sync(pipe, [Batch(calls=calls, done=calls)])


@pytest.mark.anyio
async def test_async_driver_awaits_async_sinks() -> None:
    got: list[str] = []

    async def sink(fs: list[Finding]) -> None:
        got.extend(f.message for f in fs)

    async def batches() -> AsyncIterator[Batch]:
        for i in range(3):
            c = [call(i, "bad")]
            yield Batch(calls=c, done=c)

    pipe = Pipeline([Recorder()], on_finding=sink)
    await run_async(pipe, batches())
    assert got == ["call 1 bad", "call 2 bad", "call 3 bad", "end"]
