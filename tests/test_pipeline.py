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


def _block(calls: list[dict[str, object]]) -> Batch:
    """The batch a JSON Lines decoder gives for a whole trace of plain custom calls."""
    import json

    from toolscore.sources.custom import CustomDialect
    from toolscore.sources.jsonl import JsonlDecoder

    data = b"".join(json.dumps(c).encode() + b"\n" for c in calls)
    batch = JsonlDecoder(CustomDialect("t.jsonl"), "t.jsonl").feed(data)
    assert batch.block is not None
    return batch


_KEY = "sk-ant-" + "aB3" * 10
_CALLS: list[dict[str, object]] = [
    {"tool": "bad", "args": {"q": 1}, "is_error": True},
    {"tool": "bad", "args": {"q": 1}},
    {"tool": f"t {_KEY}", "args": {"token": _KEY}},
    {"tool": "t", "args": {"q": 2}, "error": "boom"},
]


def test_a_lone_block_runs_as_run_sync_runs_it() -> None:
    from toolscore.api import builtin_checks

    gold = [ToolCall(tool="bad", args={"q": 1}), ToolCall(tool="t", args={"q": 2})]
    pipes: list[Pipeline] = []
    recorders: list[Recorder] = []
    for fast in (True, False):
        rec = Recorder()
        pipe = Pipeline([*builtin_checks(gold, None, strict=False, keep_details=False), rec])
        if fast:
            assert pipe.run_block(_block(_CALLS))
        else:
            run_sync(pipe, [_block(_CALLS), Batch()])
        pipes.append(pipe)
        recorders.append(rec)
    fast_pipe, slow_pipe = pipes
    # feed and finish findings (the recorder's), in call order, redacted (a key in a name)
    assert [f.kind for f in fast_pipe.findings] == [f.kind for f in slow_pipe.findings]
    assert fast_pipe.findings == slow_pipe.findings
    assert {"bad", "end", "retry_after_error"} <= {f.kind for f in fast_pipe.findings}
    assert all(_KEY not in (f.tool or "") for f in fast_pipe.findings)
    assert fast_pipe.states() == slow_pipe.states()
    assert (fast_pipe.calls_read, fast_pipe.calls_done) == (slow_pipe.calls_read, 4)
    assert fast_pipe.finished and slow_pipe.finished
    assert recorders[0].new == recorders[1].new and recorders[0].finished == 1


def test_run_block_refuses_what_it_cannot_run_alone() -> None:
    found = _block(_CALLS)
    found.findings.append(Finding("input", "malformed_line", "error", "bad line"))
    broken = _block(_CALLS)
    broken.error = TruncatedTrace("cut", None)
    cases = [
        (Pipeline([Recorder()]), found),
        (Pipeline([Recorder()]), broken),
        (Pipeline([Recorder()]), Batch(calls=[call(0)], done=[call(0)])),
        (Pipeline([Recorder()], on_finding=lambda found: None), _block(_CALLS)),
    ]
    for pipe, batch in cases:
        assert not pipe.run_block(batch)
        assert pipe.calls_read == 0 and not pipe.findings and not pipe.finished
    pipe = Pipeline([Recorder()])
    assert pipe.run_block(_block(_CALLS))
    assert not pipe.run_block(_block(_CALLS))  # a second one: not a whole trace
    ended = Pipeline([Recorder()])
    run_sync(ended, [])
    assert not ended.run_block(_block(_CALLS))  # after the end of an empty stream
    assert ended.calls_read == 0
