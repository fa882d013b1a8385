# ruff: noqa: UP031  (the traces are JSON text, whose braces would all need doubling)
"""Bounded work for hostile input: nesting deeper than MAX_DEPTH and values over the value
limit are input errors that name their position, in every reader, sync and async."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from toolscore import evaluate_stream, evaluate_trace
from toolscore.errors import InputError
from toolscore.limits import MAX_DEPTH, value_limit
from toolscore.sources import aiter_batches, iter_batches
from toolscore.sources._depth import DepthGuard


def nest(n: int) -> str:
    """A value ``n`` levels deep (``n`` arrays around a number)."""
    return "[" * n + "1" + "]" * n


# Each maker returns a trace whose deepest value is ``depth`` levels (document levels), with
# a plain call before the deep one where the format allows it.
def custom_jsonl(depth: int) -> str:
    deep = json.dumps({"tool": "b", "args": {"x": "@"}}).replace('"@"', nest(depth - 2))
    return json.dumps({"tool": "a", "args": {"x": 1}}) + "\n" + deep + "\n"


def custom_array(depth: int) -> str:
    return '[{"tool": "a", "args": {"x": 1}},\n{"tool": "b", "args": {"x": %s}}]\n' % nest(
        depth - 3
    )


def custom_calls(depth: int) -> str:
    return '{"calls": [{"tool": "a", "args": {"x": 1}},\n{"tool": "b", "args": {"x": %s}}]}' % (
        nest(depth - 4)
    )


def gemini(depth: int) -> str:
    return (
        '{"contents": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", '
        '"parts": [{"functionCall": {"name": "search", "args": {"q": %s}}}]}]}\n'
    ) % nest(depth - 7)


def mcp(depth: int) -> str:
    first = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "a", "arguments": {}},
    }
    second = (
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "s", '
        '"arguments": {"q": %s}}}'
    ) % nest(depth - 3)
    return json.dumps(first) + "\n" + second + "\n"


def openai(depth: int) -> str:
    return (
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": '
        '[{"id": "c1", "type": "function", "function": {"name": "s", "arguments": "{}"}}]}, '
        '{"role": "tool", "tool_call_id": "c1", "content": %s}]}\n'
    ) % nest(depth - 3)


MAKERS = [custom_jsonl, custom_array, custom_calls, gemini, mcp, openai]


@pytest.mark.parametrize("make", MAKERS, ids=lambda f: f.__name__)
def test_depth_limit_is_exact(make: object, tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text(make(MAX_DEPTH))  # type: ignore[operator]
    assert _problems(path) == []
    result = evaluate_trace([], path)  # every check and report walks the deep value
    assert json.dumps(result.to_dict())
    path = tmp_path / "deep.json"
    path.write_text(make(MAX_DEPTH + 1))  # type: ignore[operator]
    problems = _problems(path)
    assert problems, "one level too deep must be an input problem"
    assert all(f"nested deeper than {MAX_DEPTH:,} levels" in p for p in problems)


def _problems(path: Path, *, chunk_size: int = 1 << 18) -> list[str]:
    """The input problems of reading ``path``: findings and the fatal error."""
    out: list[str] = []
    for batch in iter_batches(str(path), chunk_size=chunk_size):
        out += [f.message for f in batch.findings if f.check == "input"]
        if batch.error is not None:
            assert isinstance(batch.error, InputError)
            assert batch.error.line is not None or batch.error.offset is not None
            out.append(str(batch.error))
    return out


@pytest.mark.parametrize("make", MAKERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("chunk_size", [7, 4096])
def test_deep_in_small_chunks_sync_and_async(make: object, chunk_size: int, tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(make(20_000))  # type: ignore[operator]
    sync = _problems(path, chunk_size=chunk_size)
    assert sync and str(path) in sync[0]

    async def collect() -> list[str]:
        out: list[str] = []
        async for batch in aiter_batches(str(path), chunk_size=chunk_size):
            out += [f.message for f in batch.findings if f.check == "input"]
            if batch.error is not None:
                out.append(str(batch.error))
        return out

    assert anyio.run(collect) == sync


def test_evaluate_stream_names_the_position(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(gemini(20_000))
    with pytest.raises(InputError) as info:
        anyio.run(evaluate_stream, [], path)
    assert info.value.offset is not None and info.value.line == 1


def _eval_command(gold: Path, trace: Path, report: Path) -> list[str]:
    return [sys.executable, "-m", "toolscore", "eval", str(gold), str(trace), "-o", str(report)]


def _limited() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (2_000_000_000, 2_000_000_000))


@pytest.mark.parametrize(
    "make", [gemini, mcp, custom_array, custom_jsonl], ids=lambda f: f.__name__
)
def test_100k_deep_cli_exits_2_fast_and_small(make: object, tmp_path: Path) -> None:
    """The issue's repro: 100,000 levels, pretty-printed, under a 2 GB address-space cap."""
    trace = tmp_path / "deep.json"
    text = make(100_000)  # type: ignore[operator]
    if make in (gemini, custom_array):  # documents: pretty-printed, as in the issue
        text = text.replace("[[", "[\n[")
    trace.write_text(text)
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "a"}]')
    start = time.monotonic()
    proc = subprocess.run(
        _eval_command(gold, trace, tmp_path / "r.json"),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited,
    )
    assert time.monotonic() - start < 10
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert errors and "internal error" not in proc.stderr
    assert f"nested deeper than {MAX_DEPTH:,} levels" in errors[-1]
    assert str(trace) in errors[-1]


def big_string_traces(size: int) -> dict[str, str]:
    big = "x" * size
    return {
        "jsonl": '{"tool": "a", "args": {}}\n{"tool": "s", "args": {"q": "%s"}}\n{"tool": "b"}\n'
        % big,
        "array": '[{"tool": "a", "args": {}},\n{"tool": "s", "args": {"q": "%s"}},\n{"tool": "b"}]'
        % big,
        "gemini": '{"contents": [{"role": "model", "parts": [{"functionCall": {"name": "s", '
        '"args": {"q": "%s"}}}]}]}' % big,
    }


@pytest.mark.parametrize("layout", ["jsonl", "array", "gemini"])
def test_value_over_the_limit_is_named(layout: str, tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(big_string_traces(3 << 20)[layout])
    with value_limit(1 << 20):
        problems = _problems(path)
    assert problems
    assert "1,048,576 bytes" in problems[0] and str(path) in problems[0]
    with value_limit(4 << 20):
        assert _problems(path) == []


def test_cli_max_value_bytes(tmp_path: Path) -> None:
    trace = tmp_path / "big.jsonl"
    trace.write_text(big_string_traces(2 << 20)["jsonl"])
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "a"}]')
    cmd = _eval_command(gold, trace, tmp_path / "r.json")
    proc = subprocess.run([*cmd, "--max-value-bytes", "1000000"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "over the value limit of 1,000,000 bytes" in proc.stderr
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_value_limit_rejects_nonsense() -> None:
    from toolscore.errors import UsageError

    with pytest.raises(UsageError), value_limit(0):
        pass


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_guard_matches_a_byte_walk(chunk: int) -> None:
    text = json.dumps({"a": ['x"[[', "\\", {"b": [[["]"]]]}], "c": "{{{"}).encode()
    for limit in range(1, 7):
        guard = DepthGuard(limit)
        hit = None
        for i in range(0, len(text), chunk):
            passed = guard.feed(text[i : i + chunk])
            if passed is not None:
                hit = i + passed[0]
                break
        # the true depth of this text is 6: {"a": [ {"b": [ [ [
        assert (hit is None) == (limit >= 6), limit
        if hit is not None:
            assert text[hit : hit + 1] in (b"[", b"{")


def test_watch_max_value_bytes_and_depth_on_a_pipe(tmp_path: Path) -> None:
    trace = tmp_path / "big.jsonl"
    trace.write_text(big_string_traces(2 << 20)["jsonl"])
    base = [sys.executable, "-m", "toolscore", "watch"]
    proc = subprocess.run(
        [*base, str(trace), "--max-value-bytes", "1000000"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "over the value limit of 1,000,000 bytes" in proc.stderr
    proc = subprocess.run(base, input=gemini(50_000), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f":1: nested deeper than {MAX_DEPTH:,} levels (byte " in proc.stderr


def test_the_byte_scanner_path_holds_the_same_limit(tmp_path: Path) -> None:
    """Where the recursion limit does not bound the C decoders (Python 3.12+), every reader
    measures deep texts with the byte scanner; TOOLSCORE_DEPTH_SCANNER=1 forces that path."""
    script = (
        "import sys, json\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_limits import MAKERS, _problems\n"
        "from toolscore.limits import MAX_DEPTH, decode_limit_exact\n"
        "from pathlib import Path\n"
        "assert not decode_limit_exact()\n"
        "out = {}\n"
        "for make in MAKERS:\n"
        "    p = Path(sys.argv[2]) / (make.__name__ + '.json')\n"
        "    p.write_text(make(MAX_DEPTH)); ok = _problems(p)\n"
        "    p.write_text(make(MAX_DEPTH + 1)); deep = _problems(p)\n"
        "    out[make.__name__] = [ok, deep]\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "TOOLSCORE_DEPTH_SCANNER": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).parent), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    for name, (ok, deep) in json.loads(proc.stdout).items():
        assert ok == [], name
        assert deep and f"nested deeper than {MAX_DEPTH:,} levels" in deep[0], name


def test_a_malformed_line_near_the_depth_limit_is_a_malformed_line(tmp_path: Path) -> None:
    """Found by the fuzz tests: a line just under the limit with data after its value went
    from the depth check's second decode straight out as msgspec.DecodeError."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"tool": "a"}\n' + nest(MAX_DEPTH - 5) + '][\n{"tool": "b"}\n')
    problems = _problems(path)
    assert len(problems) == 1 and "malformed JSON" in problems[0] and ":2:" in problems[0]


def test_shallow_texts_are_told_by_their_brackets() -> None:
    from toolscore.limits import SHALLOW_SCAN_BYTES, shallow

    nested = b"[" * 40 + b"1" + b"]" * 40
    assert shallow([nested], 40) and not shallow([nested], 39)
    assert shallow([memoryview(nested)[:20], b'{"a": "[[["}'], 24)
    assert not shallow([memoryview(nested)[:20], b'{"a": "[[["}'], 23)  # strings count too
    big = b"1" * (SHALLOW_SCAN_BYTES + 1)
    assert not shallow([big], 10**6)  # too large to count: measured instead


def test_a_small_text_nested_past_the_bound_is_still_refused() -> None:
    import msgspec

    from toolscore.limits import MAX_DEPTH, bounded_depth, decode_limit_exact

    if not decode_limit_exact():
        pytest.skip("this interpreter's decoders are measured by the byte scanner instead")
    deep = b"[" * (MAX_DEPTH + 50) + b"]" * (MAX_DEPTH + 50)
    with pytest.raises(RecursionError), bounded_depth(MAX_DEPTH, within=[deep]):
        msgspec.json.decode(deep)
    fine = b"[" * 50 + b"]" * 50
    with bounded_depth(MAX_DEPTH, within=[fine]):
        assert msgspec.json.decode(fine) is not None
