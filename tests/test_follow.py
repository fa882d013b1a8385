from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from toolscore.errors import InputError
from toolscore.follow import FdStream, FileFollower

pytestmark = pytest.mark.anyio


async def _collect_until(follower: FileFollower, last: bytes, within: float = 10.0) -> bytes:
    """Read from ``follower`` until ``last`` has been seen (or the timeout passes)."""
    data = bytearray()
    with anyio.move_on_after(within):
        while last not in data:
            data += await follower.receive()
    return bytes(data)


async def test_reads_existing_content_then_growth(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a\nb\n")
    follower = FileFollower(path, poll_interval=0.01)
    assert await follower.receive() == b"a\nb\n"
    with path.open("ab") as f:
        f.write(b"c\n")
    assert await _collect_until(follower, b"c\n", 2) == b"c\n"
    await follower.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await follower.receive()


async def test_idle_timeout_ends_the_stream(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x\n")
    follower = FileFollower(path, poll_interval=0.01, idle_timeout=0.05)
    chunks = [chunk async for chunk in follower]
    assert chunks == [b"x\n"]
    await follower.aclose()


async def test_truncation_rereads_from_start(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntwo\n")
    follower = FileFollower(path, poll_interval=0.01)
    assert await follower.receive() == b"one\ntwo\n"
    path.write_bytes(b"3\n")  # truncates and writes less than was read
    assert await _collect_until(follower, b"3\n", 2) == b"3\n"
    assert follower.truncations == 1
    await follower.aclose()


async def test_rotation_finishes_old_file_and_separates_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a\n")
    follower = FileFollower(path, poll_interval=0.01)
    assert await follower.receive() == b"a\n"
    with path.open("ab") as f:
        f.write(b"partial")
    os.rename(path, tmp_path / "t.jsonl.1")
    path.write_bytes(b"b\n")
    data = await _collect_until(follower, b"b\n", 2)
    assert data == b"partial\nb\n"
    assert follower.rotations == 1
    await follower.aclose()


async def test_path_gone_keeps_reading_old_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a\n")
    follower = FileFollower(path, poll_interval=0.01)
    assert await follower.receive() == b"a\n"
    moved = tmp_path / "old"
    os.rename(path, moved)
    await anyio.sleep(0.03)
    with moved.open("ab") as f:  # the writer still holds the old file
        f.write(b"late\n")
    assert await _collect_until(follower, b"late\n", 2) == b"late\n"
    path.write_bytes(b"new\n")
    assert await _collect_until(follower, b"new\n", 2) == b"new\n"
    await follower.aclose()


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot follow"):
        FileFollower(tmp_path / "nope.jsonl")


_WRITER = textwrap.dedent(
    """
    import os, sys, time
    path = sys.argv[1]
    n, rotate_at, truncate_at = (int(a) for a in sys.argv[2:5])
    f = open(path, "ab", buffering=0)
    for i in range(n):
        if i == rotate_at:
            f.close()
            os.rename(path, path + ".1")
            f = open(path, "ab", buffering=0)
        if i == truncate_at:
            time.sleep(0.2)  # let the follower catch up, as a log shipper would
            f.truncate(0)
            f.seek(0)
        f.write(b'{"i": %d}\\n' % i)
        time.sleep(0.005)
    f.close()
    """
)


async def test_real_writer_append_rotate_truncate_sees_each_line_once(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"")
    n = 120
    follower = FileFollower(path, poll_interval=0.01)
    proc = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block; waited below
        [sys.executable, "-c", _WRITER, str(path), str(n), "40", "80"],
    )
    try:
        data = await _collect_until(follower, b'{"i": %d}\n' % (n - 1), 20)
    finally:
        proc.wait(10)
        await follower.aclose()
    lines = data.splitlines()
    assert lines == [b'{"i": %d}' % i for i in range(n)]
    assert follower.rotations == 1
    assert follower.truncations == 1


async def test_fd_stream_returns_bytes_without_waiting_for_a_full_buffer() -> None:
    r, w = os.pipe()
    stream = FdStream(r, close_fd=True)
    try:
        os.write(w, b'{"tool": "a"}\n')
        with anyio.fail_after(2):
            assert await stream.receive() == b'{"tool": "a"}\n'
        os.write(w, b"x")
        os.close(w)
        w = -1
        assert await stream.receive() == b"x"
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
    finally:
        await stream.aclose()
        if w != -1:
            os.close(w)
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()


async def test_fd_stream_on_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "t"
    path.write_bytes(b"abc")
    fd = os.open(path, os.O_RDONLY)
    stream = FdStream(fd, close_fd=True)
    assert [chunk async for chunk in stream] == [b"abc"]
    await stream.aclose()
