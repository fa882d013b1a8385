"""``toolscore.watch``: findings as they happen, through iteration and the callback; clean
cancellation; ``stop()`` finishes on what was read."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.api import evaluate_stream
from toolscore.calls import Finding
from toolscore.live import LiveRun, watch

pytestmark = pytest.mark.anyio

RULES = [{"tool": "run_shell"}]
FORBIDDEN = {"tool": "run_shell", "args": {"command": "rm -rf /"}}
FAILED = {"tool": "fetch", "args": {"url": "u"}, "error": "timeout"}
FINE = {"tool": "search", "args": {"q": "x"}}


async def _aiter(calls: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for call in calls:
        yield call


async def _gated(calls: list[dict[str, Any]], gate: list[anyio.Event]) -> AsyncIterator[Any]:
    """An agent loop: hands over call i only once the consumer has seen call i-1's finding."""
    for i, call in enumerate(calls):
        if i:
            with anyio.fail_after(5):  # a finding held back until later would hang here
                await gate[i - 1].wait()
        yield call


async def test_each_finding_arrives_before_the_next_call_is_sent() -> None:
    calls = [FORBIDDEN, FAILED, FORBIDDEN]
    gate = [anyio.Event() for _ in calls]
    seen: list[tuple[int | None, str]] = []
    async with watch(_gated(calls, gate), forbidden=RULES) as run:
        async for finding in run:
            seen.append((finding.call_index, finding.kind))
            if finding.call_index is not None:
                # the call that raised it is the last one handed over
                assert run.calls_read == finding.call_index + 1
                gate[finding.call_index].set()
        result = run.result
    assert [s for s in seen if s[0] is not None] == [
        (0, "forbidden_call"),
        (1, "failed_call"),
        (2, "forbidden_call"),
    ]
    assert result is run.result
    assert run.done
    assert run.calls_read == 3
    assert run.severity_counts["error"] >= 2
    assert run.findings_count == len(seen)


async def test_on_finding_callback_sees_findings_as_they_happen() -> None:
    calls = [FAILED, FORBIDDEN, FINE]
    gate = [anyio.Event() for _ in calls]
    gate[2].set()
    got: list[Finding] = []

    def on_finding(found: list[Finding]) -> None:
        for finding in found:
            got.append(finding)
            if finding.call_index is not None:
                gate[finding.call_index].set()

    async with watch(_gated(calls, gate), forbidden=RULES, on_finding=on_finding) as run:
        result = await run.wait()
    assert [(f.call_index, f.kind) for f in got if f.call_index is not None] == [
        (0, "failed_call"),
        (1, "forbidden_call"),
    ]
    assert run.calls_read == 3
    assert result is run.result


async def test_async_callback_is_awaited() -> None:
    got: list[str] = []

    async def on_finding(found: list[Finding]) -> None:
        await anyio.lowlevel.checkpoint()
        got.extend(f.kind for f in found)

    async def calls() -> AsyncIterator[dict[str, Any]]:
        yield FORBIDDEN

    async with watch(calls(), forbidden=RULES, on_finding=on_finding) as run:
        iterated = [f.kind async for f in run]
    assert got == iterated
    assert "forbidden_call" in got


async def test_breaking_out_early_cancels_the_producer_and_closes_the_source() -> None:
    closed = anyio.Event()
    sent = 0

    async def endless() -> AsyncIterator[dict[str, Any]]:
        nonlocal sent
        try:
            while True:
                sent += 1
                yield FORBIDDEN
                await anyio.lowlevel.checkpoint()
        finally:
            closed.set()

    tasks_before = len(asyncio.all_tasks())
    with anyio.fail_after(5):
        async with watch(endless(), forbidden=RULES) as run:
            async for finding in run:
                assert finding.kind == "forbidden_call"
                break
    assert closed.is_set()
    assert len(asyncio.all_tasks()) == tasks_before  # no task left behind
    with pytest.raises(RuntimeError, match="no result"):
        _ = run.result
    count = sent
    await anyio.sleep(0.01)
    assert sent == count  # nothing keeps reading


async def test_cancelling_the_callers_scope_stops_everything() -> None:
    closed = anyio.Event()

    async def endless() -> AsyncIterator[dict[str, Any]]:
        try:
            while True:
                await anyio.sleep(0.001)
                yield FINE
        finally:
            closed.set()

    tasks_before = len(asyncio.all_tasks())
    with anyio.move_on_after(0.05) as scope:
        async with watch(endless()) as run:
            async for _ in run:
                pass
    assert scope.cancelled_caught
    assert closed.is_set()
    assert run.calls_read > 0
    assert len(asyncio.all_tasks()) == tasks_before


async def test_stop_finishes_on_every_call_read_so_far() -> None:
    waiting = anyio.Event()

    async def stalls() -> AsyncIterator[dict[str, Any]]:
        yield FAILED
        yield FORBIDDEN
        waiting.set()
        await anyio.sleep_forever()
        yield FINE  # pragma: no cover

    async with watch(stalls(), forbidden=RULES) as run:
        kinds: list[str] = []
        async for finding in run:
            kinds.append(finding.kind)
            if len(kinds) == 2:
                await waiting.wait()
                run.stop()
                run.stop()  # idempotent
        result = run.result
    assert kinds[:2] == ["failed_call", "forbidden_call"]
    assert run.stopped
    assert run.calls_read == 2
    assert result is not None


async def test_stop_completes_calls_still_waiting_for_their_result() -> None:
    # An OpenAI trace: the call's result would come in a later `tool` message. Stopped
    # before it does, the call still reaches the checks that need its outcome.
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": "x"}'},
            }
        ],
    }
    sent = anyio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        yield json.dumps(message).encode() + b"\n"
        sent.set()
        await anyio.sleep_forever()
        yield b""  # pragma: no cover

    completed: list[int] = []
    gold = [{"tool": "search"}]
    on_calls = lambda calls: completed.extend(c.index for c in calls)  # noqa: E731
    async with watch(chunks(), gold=gold, on_calls=on_calls) as run:
        with anyio.fail_after(5):
            await sent.wait()  # asked for more: the line before was read and fed
        assert run.calls_read == 1
        assert completed == []  # its result still to come
        run.stop()
        result = await run.wait()
    assert completed == [0]
    assert result.required_call_recall == 1.0
    assert result.metrics["efficiency_metrics"]["error_count"] == 0


async def test_stop_before_anything_is_read() -> None:
    async def never() -> AsyncIterator[dict[str, Any]]:
        await anyio.sleep_forever()
        yield FINE  # pragma: no cover

    async with watch(never()) as run:
        run.stop()
        await run.wait()
    assert run.calls_read == 0


async def test_an_exception_in_the_block_propagates_plainly() -> None:
    async def calls() -> AsyncIterator[dict[str, Any]]:
        while True:
            yield FORBIDDEN
            await anyio.lowlevel.checkpoint()

    with pytest.raises(KeyError):
        async with watch(calls(), forbidden=RULES) as run:
            async for _ in run:
                raise KeyError("x")
    with pytest.raises(ZeroDivisionError):
        async with watch(calls()):
            raise ZeroDivisionError


async def test_a_failing_sink_is_raised_to_the_consumer() -> None:
    def on_finding(found: list[Finding]) -> None:
        raise LookupError("sink broke")

    async def calls() -> AsyncIterator[dict[str, Any]]:
        yield FORBIDDEN

    with pytest.raises(LookupError, match="sink broke"):
        async with watch(calls(), forbidden=RULES, on_finding=on_finding) as run:
            async for _ in run:
                pass  # pragma: no cover
    # not iterated: raised when leaving the block
    with pytest.raises(LookupError, match="sink broke"):
        async with watch(calls(), forbidden=RULES, on_finding=on_finding) as run:
            await anyio.sleep(0.05)


async def test_slow_consumer_bounded_buffer_loses_nothing() -> None:
    calls = [FORBIDDEN if i % 3 == 0 else FINE for i in range(60)]

    async def agent() -> AsyncIterator[dict[str, Any]]:
        for call in calls:
            yield call

    async with watch(agent(), forbidden=RULES, buffer=1) as run:
        indexes = []
        async for finding in run:
            await anyio.lowlevel.checkpoint()
            if finding.kind == "forbidden_call":
                indexes.append(finding.call_index)
    assert indexes == list(range(0, 60, 3))
    assert run.calls_read == 60


async def test_byte_stream_source_and_snapshot_mid_stream() -> None:
    lines = [
        b'{"tool": "search", "args": {"q": "x"}}\n',
        b"{not json\n",
        b'{"tool": "run_shell", "args": {"command": "ls"}}\n',
    ]
    step = [anyio.Event() for _ in lines]

    async def chunks() -> AsyncIterator[bytes]:
        for i, line in enumerate(lines):
            yield line
            with anyio.fail_after(5):
                await step[i].wait()

    first = anyio.Event()
    rules = RULES
    gold = [{"tool": "search"}]
    async with watch(chunks(), gold=gold, forbidden=rules, on_calls=lambda _: first.set()) as run:
        with anyio.fail_after(5):
            await first.wait()
        mid = run.snapshot()
        assert mid is not None
        step[0].set()
        kinds = []
        async for finding in run:
            kinds.append(finding.kind)
            if finding.kind == "malformed_line":
                step[1].set()
            if finding.kind == "forbidden_call":
                step[2].set()
    assert "malformed_line" in kinds and "forbidden_call" in kinds
    assert kinds.index("malformed_line") < kinds.index("forbidden_call")
    assert run.calls_read == 2
    assert run.snapshot() is run.result


call = st.sampled_from([FORBIDDEN, FAILED, FINE])


@settings(max_examples=25, deadline=None)
@given(calls=st.lists(call, max_size=12), buffer=st.integers(0, 3))
def test_iteration_gives_the_same_findings_as_evaluate_stream(
    calls: list[dict[str, Any]], buffer: int
) -> None:
    async def agent() -> AsyncIterator[dict[str, Any]]:
        for c in calls:
            yield c

    async def both() -> tuple[list[Finding], list[Finding]]:
        streamed: list[Finding] = []
        await evaluate_stream([], agent(), forbidden=RULES, on_finding=streamed.extend)
        async with watch(agent(), forbidden=RULES, buffer=buffer) as run:
            watched = [f async for f in run]
        return streamed, watched

    streamed, watched = anyio.run(both)
    assert watched == streamed


gold_call = st.fixed_dictionaries(
    {"tool": st.sampled_from(["search", "fetch", "run_shell"])},
    optional={"args": st.dictionaries(st.sampled_from(["q", "url"]), st.sampled_from(["x", "u"]))},
)
trace_call = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["search", "fetch", "run_shell"]),
        "args": st.dictionaries(st.sampled_from(["q", "url"]), st.sampled_from(["x", "u"])),
    },
    optional={"error": st.sampled_from(["timeout"])},
)


@settings(max_examples=30, deadline=None)
@given(gold=st.lists(gold_call, max_size=5), calls=st.lists(trace_call, max_size=10))
def test_snapshots_mid_stream_leave_the_final_result_unchanged(
    gold: list[dict[str, Any]], calls: list[dict[str, Any]]
) -> None:
    async def agent() -> AsyncIterator[dict[str, Any]]:
        for c in calls:
            yield c

    async def both() -> tuple[dict[str, Any], dict[str, Any], list[float]]:
        plain = await evaluate_stream(gold, agent(), forbidden=RULES)
        scores: list[float] = []
        box: list[LiveRun] = []

        def on_calls(_: Any) -> None:
            scores.append(box[0].snapshot().score)
            assert box[0].score() == scores[-1]

        async with watch(agent(), gold=gold, forbidden=RULES, on_calls=on_calls) as run:
            box.append(run)
            watched = await run.wait()
        return plain.to_dict(), watched.to_dict(), scores

    plain, watched, scores = anyio.run(both)
    assert watched == plain
    assert len(scores) == len(calls)
    if calls:
        # the snapshot after the last call is the final score
        assert scores[-1] == pytest.approx(plain["score"], abs=1e-12)


async def test_watch_takes_hard_rules_and_pii_like_evaluate_stream() -> None:
    email = "jane.doe" + "@example.org"
    calls = [
        {"tool": "search", "args": {"q": "x"}},
        {"tool": "send_email", "args": {"to": email}},
    ]
    kinds: list[str] = []
    async with watch(_aiter(calls), rules={"allow": ["search"]}, pii=True) as run:
        async for finding in run:
            kinds.append(finding.kind)
            assert email not in finding.message
        result = run.result
    streamed = await evaluate_stream([], _aiter(calls), rules={"allow": ["search"]}, pii=True)
    assert [(v["rule"], v["index"]) for v in result.rule_violations] == [("allow", 1)]
    assert result.rule_violations == streamed.rule_violations
    assert result.metrics["security_metrics"]["pii_count"] == 1
    assert result.metrics["security_metrics"] == streamed.metrics["security_metrics"]
    assert sorted(kinds) == sorted(f.kind for f in streamed.findings)
    async with watch(_aiter(calls)) as plain:  # the setting ends with its block
        await plain.wait()
    assert "pii_count" not in plain.result.metrics["security_metrics"]
