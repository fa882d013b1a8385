"""The drivers: paths, .gz, binary files, async streams, live pipes, the corpus."""

from __future__ import annotations

import gzip
import io
import json
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from toolscore.calls import Batch
from toolscore.errors import FormatNotDetected, InputError, TruncatedTrace, UsageError
from toolscore.sources import aiter_batches, iter_batches, source_size

CALLS = [{"tool": f"t{i}", "args": {"i": i}} for i in range(50)]
JSONL = b"".join(json.dumps(c).encode() + b"\n" for c in CALLS)


def tools(batches: list[Batch]) -> list[str]:
    return [c.tool for b in batches for c in b.calls]


def test_path_and_gz(tmp_path: Path) -> None:
    plain = tmp_path / "t.jsonl"
    plain.write_bytes(JSONL)
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(json.dumps({"calls": CALLS}).encode()))
    expected = [c["tool"] for c in CALLS]
    assert tools(list(iter_batches(plain, chunk_size=100))) == expected
    assert tools(list(iter_batches(str(packed), chunk_size=64))) == expected
    assert source_size(plain) == len(JSONL)
    assert source_size(packed) is None
    assert source_size("-") is None
    assert source_size(tmp_path / "missing") is None


def test_batches_per_chunk_and_locations(tmp_path: Path) -> None:
    batches = list(iter_batches(io.BytesIO(JSONL), chunk_size=len(JSONL) // 5))
    assert len(batches) >= 5
    assert all(b.calls for b in batches[:-1])
    assert batches[0].calls[0].location is not None
    assert str(batches[0].calls[0].location) == "<stream>:1"


def test_truncated_gz(tmp_path: Path) -> None:
    packed = gzip.compress(JSONL)
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(packed[: len(packed) // 2])
    batches = list(iter_batches(path))
    assert isinstance(batches[-1].error, TruncatedTrace)


def test_missing_file_raises_before_iteration(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found") as info:
        iter_batches(tmp_path / "nope.json")
    assert info.value.path == str(tmp_path / "nope.json")
    with pytest.raises(InputError, match="file not found"):
        aiter_batches(tmp_path / "nope.json")
    with pytest.raises(InputError, match="directory"):
        iter_batches(tmp_path)
    with pytest.raises(UsageError):
        iter_batches(io.BytesIO(b""), "nope")


def test_zero_calls_is_format_not_detected() -> None:
    data = b'{"messages": [{"role": "user", "content": "hi"}]}'
    batches = list(iter_batches(io.BytesIO(data)))
    error = batches[-1].error
    assert isinstance(error, FormatNotDetected)
    assert "reading it as json/openai found no tool call" in str(error)
    assert 'a JSON object with keys "messages"' in str(error)


def test_empty_input_is_a_warning_not_an_error() -> None:
    batches = list(iter_batches(io.BytesIO(b"  \n")))
    assert [b.error for b in batches] == [None]
    assert [f.kind for b in batches for f in b.findings] == ["empty_input"]


def test_stops_after_error() -> None:
    data = b'[{"tool": "a"}, x, {"tool": "b"}]'
    batches = list(iter_batches(io.BytesIO(data), chunk_size=3))
    assert batches[-1].error is not None
    assert tools(batches) == ["a"]


@pytest.mark.anyio
async def test_async_path_and_stream(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(JSONL)
    got = [b async for b in aiter_batches(path, chunk_size=200)]
    assert tools(got) == [c["tool"] for c in CALLS]

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(JSONL), 7):
            yield JSONL[i : i + 7]

    got = [b async for b in aiter_batches(chunks())]
    assert tools(got) == [c["tool"] for c in CALLS]

    send, receive = anyio.create_memory_object_stream[bytes](10)
    from anyio.streams.buffered import BufferedByteReceiveStream

    async with send:
        await send.send(JSONL[:100])
        await send.send(JSONL[100:])
    async with receive:
        stream = BufferedByteReceiveStream(receive)
        got = [b async for b in aiter_batches(stream)]
    assert tools(got) == [c["tool"] for c in CALLS]


def _reader(fd: int) -> io.BufferedReader:
    return open(fd, "rb")  # closed by the caller


@pytest.mark.anyio
async def test_live_pipe_line_comes_out_before_the_writer_closes() -> None:
    r, w = os.pipe()
    seen = threading.Event()
    wrote_second = threading.Event()

    def writer() -> None:
        os.write(w, b'{"tool": "first"}\n{"tool": "sec')
        seen.wait(10)
        os.write(w, b'ond"}\n')
        wrote_second.set()
        os.close(w)

    thread = threading.Thread(target=writer)
    thread.start()
    reader = _reader(r)
    try:
        batches = aiter_batches(reader)
        first = await batches.__anext__()
        assert [c.tool for c in first.calls] == ["first"]
        assert not wrote_second.is_set()  # the writer is still waiting: nothing was closed
        seen.set()
        rest = [b async for b in batches]
        assert tools(rest) == ["second"]
    finally:
        seen.set()
        thread.join(10)
        reader.close()


def test_sync_pipe_uses_read1() -> None:
    r, w = os.pipe()
    seen = threading.Event()

    def writer() -> None:
        os.write(w, b'{"tool": "first"}\n')
        seen.wait(10)
        os.close(w)

    thread = threading.Thread(target=writer)
    thread.start()
    with open(r, "rb") as reader:
        batches = iter_batches(reader)
        assert [c.tool for c in next(batches).calls] == ["first"]
        seen.set()
        assert tools(list(batches)) == []
    thread.join(10)


def test_corpus(corpus: Path) -> None:
    for name, count in (("tau-bench-airline.jsonl", 1164), ("toolbench.jsonl", 328)):
        batches = list(iter_batches(corpus / name))
        assert all(b.error is None for b in batches)
        # each file holds many traces: read as one, that is said once, where it shows
        (said,) = [f for b in batches for f in b.findings]
        assert (said.kind, said.severity) == ("several_traces", "error")
        assert "--trace-key trace_id" in said.message
        calls = [c for b in batches for c in b.calls]
        assert len(calls) == count
        assert [c.index for c in calls] == list(range(count))
    first = next(iter_batches(corpus / "toolbench.jsonl")).calls[0]
    assert first.metadata["trace_id"].startswith("G1_answer/")


@pytest.mark.parametrize("pretty", [False, True])
def test_files_pulled_and_streams_pushed_agree(tmp_path: Path, pretty: bool) -> None:
    many = CALLS * 60  # past the 64 KiB sample, so the rest is read by pulling
    if pretty:
        data = json.dumps({"calls": many}, indent=2).encode()
    else:  # one call per line inside the document
        data = b'{"calls": [\n' + b",\n".join(json.dumps(c).encode() for c in many) + b"\n]}"
    path = tmp_path / "t.json"
    path.write_bytes(data)
    pulled = list(iter_batches(path, chunk_size=4096))
    pushed = list(iter_batches(io.BytesIO(data), chunk_size=4096))
    assert tools(pulled) == tools(pushed) == [c["tool"] for c in many]
    assert len(pulled) > 8  # a batch per chunk after the 64 KiB sample, not one at the end
    assert [c.index for b in pulled for c in b.calls] == list(range(len(many)))


def test_pulled_file_faults(tmp_path: Path) -> None:
    pad = [{"tool": "a", "args": {"pad": "x" * 70_000}}]
    data = json.dumps([*pad, {"tool": "b"}, {"tool": "c"}], indent=1).encode()
    path = tmp_path / "t.json"
    path.write_bytes(data[:-10])
    batches = list(iter_batches(path, chunk_size=8))
    assert tools(batches) == ["a", "b"]
    error = batches[-1].error
    assert isinstance(error, TruncatedTrace) and error.offset == len(data) - 10
    bad = data.replace(b'"c"', b'"c" x')
    path.write_bytes(bad)
    for size in (8, 1 << 20):
        batches = list(iter_batches(path, chunk_size=size))
        assert tools(batches) == ["a", "b"]
        error = batches[-1].error
        assert error is not None and error.offset == bad.index(b'" x') + 2
        assert "expected a JSON value" in str(error)


def test_a_decoded_block_reaches_the_checks_without_calls_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers' several-traces guard reads a block's ids from its columns: no ToolCall
    is built for a block of plain calls on its way (building them doubled a large trace's
    read time)."""
    from toolscore.sources._custom_block import CustomBlock

    built: list[int] = []
    original = CustomBlock.call

    def counting(self: CustomBlock, i: int) -> object:
        built.append(i)
        return original(self, i)

    monkeypatch.setattr(CustomBlock, "call", counting)
    rows = [{"trace_id": "t", "tool": "search", "args": {"q": i}} for i in range(2000)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    blocks = [b for b in iter_batches(path) if b.block is not None]
    assert blocks and sum(b.block.n for b in blocks) == 2000  # type: ignore[union-attr]
    assert built == []  # still columns only
