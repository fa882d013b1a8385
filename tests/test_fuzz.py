"""Fuzzing every reader: arbitrary bytes, truncations, deep nesting and mutated valid traces,
through the sync and the async driver, whole and in tiny chunks. Each run must end with a
result, or with an ``InputError`` that says where (a line or a byte offset; a format that
cannot be detected concerns the whole input), never with another exception, within a time
and a memory budget.

Two hypothesis profiles, chosen by the ``TOOLSCORE_FUZZ`` environment variable:
``ci`` (the default: 150 examples a test, derandomized, so every CI run tries the same
ones; well under a minute in all) and ``long`` (random, a new draw each run)
(``TOOLSCORE_FUZZ=long python -m pytest tests/test_fuzz.py``: 2,000 examples a test); a
number (``TOOLSCORE_FUZZ=300``) is the long profile with that many examples a test.
"""

from __future__ import annotations

import io
import json
import os
import resource
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolscore import evaluate_stream, evaluate_trace
from toolscore.errors import FormatNotDetected, InputError
from toolscore.limits import MAX_DEPTH
from toolscore.sources import FORMATS, aiter_batches, iter_batches

settings.register_profile(
    "toolscore-fuzz-ci",
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same examples every run: CI never fails on a new random draw
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "toolscore-fuzz-long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_CHOICE = os.environ.get("TOOLSCORE_FUZZ", "ci")
FUZZ = (
    settings(settings.get_profile("toolscore-fuzz-long"), max_examples=int(_CHOICE))
    if _CHOICE.isdigit()
    else settings.get_profile(f"toolscore-fuzz-{_CHOICE}")
)

# Hypothesis warns when it builds the repr of a large example (a 20,000-level input is
# 60 KB); the warning says nothing about toolscore.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

SECONDS = 10.0
"""The most one run may take (the issue's bound for any input)."""
PEAK_RSS_BYTES = 1 << 30
"""The process's peak resident memory may not pass 1 GB."""


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


SEEDS: dict[str, bytes] = {
    "custom-json": json.dumps(
        [
            {"tool": "search", "args": {"q": "weather", "n": [1, 2]}, "result": {"ok": True}},
            {"tool": "fetch", "args": {"url": "https://x.test/?a=1"}, "error": "timeout"},
        ],
        indent=1,
    ).encode(),
    "custom-jsonl": b"".join(
        json.dumps(c).encode() + b"\n"
        for c in [
            {"tool": "search", "args": {"q": "w", "deep": {"a": [{"b": None}]}}},
            {"name": "calc", "arguments": '{"x": 1}', "output": "2"},
        ]
    ),
    "calls": json.dumps({"calls": [{"tool": "a", "args": {"k": "v"}}, {"tool": "b"}]}).encode(),
    "openai": json.dumps(
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get", "arguments": '{"city": "NYC"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            ]
        }
    ).encode(),
    "anthropic": json.dumps(
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": 1}}
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
                },
            ]
        }
    ).encode(),
    "gemini": json.dumps(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "search", "args": {"q": [1, {"a": 2}]}}}],
                },
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": "search", "response": {"n": 1}}}],
                },
            ]
        },
        indent=2,
    ).encode(),
    "langchain": json.dumps(
        {
            "intermediate_steps": [
                [{"tool": "search", "tool_input": {"q": "x"}, "log": ""}, "3 hits"],
                [{"tool": "fetch", "tool_input": "u", "log": ""}, {"status": 200}],
            ]
        }
    ).encode(),
    "mcp": b"".join(
        json.dumps(m).encode() + b"\n"
        for m in [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "read", "arguments": {"path": "/a"}},
            },
            {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x"}]}},
        ]
    ),
    "otel": json.dumps(
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    "name": "execute_tool fetch",
                                    "startTimeUnixNano": "2000000000",
                                    "endTimeUnixNano": "2500000000",
                                    "attributes": [
                                        _kv("gen_ai.operation.name", "execute_tool"),
                                        _kv("gen_ai.tool.name", "fetch"),
                                        _kv("gen_ai.tool.call.arguments", '{"u": 1}'),
                                    ],
                                }
                            ]
                        }
                    ]
                }
            ]
        }
    ).encode(),
}


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid trace of some format with a few edits: bytes replaced, inserted, deleted,
    a slice repeated, deep nesting planted, or the end cut off."""
    data = bytearray(SEEDS[draw(st.sampled_from(sorted(SEEDS)))])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "repeat", "nest", "cut"]))
        at = draw(st.integers(0, len(data)))
        if kind == "replace" and at < len(data):
            data[at] = draw(st.sampled_from(b'"[]{},:\\\n \x00\xff\xc3a0'))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "repeat":
            size = draw(st.integers(1, 64))
            data[at:at] = data[at : at + size] * draw(st.integers(2, 50))
        elif kind == "nest":
            n = draw(st.sampled_from([MAX_DEPTH - 5, MAX_DEPTH, MAX_DEPTH + 1, 5_000, 20_000]))
            opener = draw(st.sampled_from([b"[", b'{"k":', b"[\n "]))
            closer = {b"[": b"]", b'{"k":': b"}", b"[\n ": b"]"}[opener]
            data[at:at] = opener * n + b"1" + closer * n
        elif kind == "cut":
            del data[at:]
    return bytes(data)


def deep(draw_depth: int, pretty: bool) -> bytes:
    sep = b"\n" if pretty else b""
    return b"[" + (b"[" + sep) * draw_depth + b"1" + (sep + b"]") * draw_depth + b"]"


INPUTS = st.one_of(
    st.binary(max_size=600),
    mutated(),
    st.sampled_from(sorted(SEEDS)).flatmap(
        lambda name: st.integers(0, len(SEEDS[name])).map(lambda n: SEEDS[name][:n])
    ),
    st.builds(deep, st.integers(MAX_DEPTH - 3, 15_000), st.booleans()),
)
FORMAT = st.sampled_from(["auto", "auto", *FORMATS])


def _check_error(error: BaseException | None) -> None:
    if error is None:
        return
    assert isinstance(error, InputError), repr(error)
    if not isinstance(error, FormatNotDetected):
        assert error.line is not None or error.offset is not None, repr(error)


def _budget(start: float) -> None:
    assert time.monotonic() - start < SECONDS
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 < PEAK_RSS_BYTES


def _decode_sync(data: bytes, format: str, chunk_size: int) -> None:
    try:
        batches = iter_batches(io.BytesIO(data), format, chunk_size=chunk_size)
        for batch in batches:
            _check_error(batch.error)
    except InputError as exc:  # raised at once: only a bad format name, never here
        _check_error(exc)


@FUZZ
@given(data=INPUTS, format=FORMAT, chunk_size=st.sampled_from([1, 2, 3, 7, 64, 1 << 18]))
def test_sync_driver_whole_and_in_tiny_chunks(data: bytes, format: str, chunk_size: int) -> None:
    start = time.monotonic()
    _decode_sync(data, format, chunk_size)
    _budget(start)


@FUZZ
@given(data=INPUTS, format=FORMAT, chunk_size=st.sampled_from([1, 5, 64, 1 << 18]))
def test_async_driver_whole_and_in_tiny_chunks(data: bytes, format: str, chunk_size: int) -> None:
    start = time.monotonic()

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(data), chunk_size):
            yield data[i : i + chunk_size]

    async def main() -> None:
        async for batch in aiter_batches(chunks(), format):
            _check_error(batch.error)

    anyio.run(main)
    _budget(start)


@FUZZ
@given(data=INPUTS, format=FORMAT)
def test_evaluate_trace_gives_a_result_or_a_located_input_error(data: bytes, format: str) -> None:
    """The whole pipeline (every check, the result) on the input as a binary file."""
    start = time.monotonic()
    try:
        result = evaluate_trace([{"tool": "search"}], io.BytesIO(data), format, workers=1)
    except InputError as exc:
        _check_error(exc)
    else:
        _check_error(result.input_error)
        assert json.dumps(result.to_dict(), default=str)
    _budget(start)


@FUZZ
@given(data=INPUTS, chunk_size=st.sampled_from([1, 3, 1 << 18]))
def test_evaluate_stream_gives_a_result_or_a_located_input_error(
    data: bytes, chunk_size: int
) -> None:
    start = time.monotonic()

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(data), chunk_size):
            yield data[i : i + chunk_size]

    try:
        result = anyio.run(evaluate_stream, [{"tool": "search"}], chunks())
    except InputError as exc:
        _check_error(exc)
    else:
        _check_error(result.input_error)
    _budget(start)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seeds_are_valid_traces(name: str) -> None:
    """The seeds the mutations start from are read without a problem (or they test little)."""
    result = evaluate_trace([], io.BytesIO(SEEDS[name]))
    assert result.input_error is None
    assert result.to_dict()["metrics"] is not None


@pytest.mark.parametrize("chunk_size", [1, 1 << 18])
def test_overlong_utf8_is_an_input_error(chunk_size: int) -> None:
    """Found by the long profile: yajl passes an overlong UTF-8 form (C0 80) to Python's
    decoder, whose UnicodeDecodeError came out of detection and the document readers."""
    for data in (b'"\xc0\x80"', b'[{"tool": "a", "args": {"q": "\xc0\x80"}}]'):
        _decode_sync(data, "auto", chunk_size)
        try:
            result = evaluate_trace([], io.BytesIO(data))
        except InputError as exc:
            _check_error(exc)
        else:
            _check_error(result.input_error)
