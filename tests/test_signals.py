"""SIGINT, SIGTERM, SIGKILL, KeyboardInterrupt and cancellation: real processes, checked with
``ps``; no process, temporary file or directory is left behind, and the first signal still
gives the summary of what was read."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest

from _cli import EXAMPLE, cli_env
from toolscore import evaluate_trace, watch

WAIT = 30.0
"""Bounded wait for a signal to take effect (not a speed assertion)."""


def _until(condition: Any, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    out = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, check=False
    ).stdout
    return [int(p) for p in out.split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _leftovers(*directories: Path) -> list[str]:
    return [
        str(p)
        for d in directories
        for p in d.iterdir()
        if p.name.startswith((".toolscore-", "toolscore-"))
    ]


@pytest.fixture
def private_tmp(tmp_path: Path) -> Iterator[Path]:
    """A TMPDIR of the test's own, for the CLI and for this process."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    saved = tempfile.tempdir
    tempfile.tempdir = str(tmp)
    try:
        yield tmp
    finally:
        tempfile.tempdir = saved


def _env(tmp: Path) -> dict[str, str]:
    env = cli_env()
    env["TMPDIR"] = str(tmp)
    return env


def _call(i: int) -> bytes:
    fields: dict[str, Any] = {"tool": f"t{i % 40}", "args": {"q": "x" * 300, "i": i}}
    if i % 5 == 0:
        fields["error"] = "boom"
    return json.dumps(fields).encode() + b"\n"


def _report_started(out: Path) -> bool:
    return any(p.name.endswith(".json.part") for p in out.iterdir())


# -- eval reading a pipe -------------------------------------------------------------------


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_eval_on_a_pipe_stops_with_a_summary(
    tmp_path: Path, private_tmp: Path, signum: int, status: int
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore", "eval", str(EXAMPLE / "gold.json"), str(fifo),
         "-o", str(out / "r.json"), "--markdown", str(out / "r.md")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(private_tmp), text=True,
    )  # fmt: skip
    writer = open(fifo, "wb")
    try:
        writer.write(b"".join(_call(i) for i in range(200)))
        writer.flush()
        _until(lambda: _report_started(out), "the report to start")
        time.sleep(0.3)  # the 200 calls read; the reader now waits for more
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=WAIT)
    finally:
        writer.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, stderr
    name = "SIGINT (Ctrl-C)" if signum == signal.SIGINT else "SIGTERM"
    assert f"interrupted by {name} — evaluated the 200 calls read before it" in stdout
    assert "Toolscore Evaluation Results" in stdout
    record = json.loads((out / "r.json").read_text(encoding="utf-8"))
    assert record["summary"]["trace_calls_count"] == 200
    assert (out / "r.md").exists()
    assert _leftovers(out, private_tmp) == []


def test_a_second_signal_stops_at_once(tmp_path: Path, private_tmp: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore", "eval", str(EXAMPLE / "gold.json"), "-",
         "-o", str(out / "r.json")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=_env(private_tmp), text=False,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(b"".join(_call(i) for i in range(50)))
    proc.stdin.flush()
    _until(lambda: _report_started(out), "the report to start")
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == 130
    assert b"Traceback" not in stderr
    assert _leftovers(out, private_tmp) == []


# -- eval with worker processes ------------------------------------------------------------


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSON Lines trace large enough to be read by two processes (2 x 16 MB)."""
    path = tmp_path_factory.mktemp("big") / "trace.jsonl"
    with open(path, "wb") as fh:
        block = b"".join(_call(i) for i in range(2000))
        while fh.tell() < 40 * 1024 * 1024:
            fh.write(block)
    return path


def _start_parallel(big: Path, out: Path, tmp: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "toolscore", "eval", str(EXAMPLE / "gold.json"), str(big),
         "--workers", "2", "-o", str(out / "r.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(tmp),
    )  # fmt: skip


def _started_with_workers(
    big: Path, out: Path, tmp: Path
) -> tuple[subprocess.Popen[bytes], list[int]]:
    """A parallel ``eval`` whose worker processes have been forked (or that already ended)."""
    proc = _start_parallel(big, out, tmp)
    children: list[int] = []

    def forked() -> bool:
        children[:] = _children(proc.pid)
        return bool(children) or proc.poll() is not None

    _until(forked, "the worker processes")
    return proc, children


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_workers_end_with_a_signal(
    tmp_path: Path, private_tmp: Path, big_trace: Path, signum: int, status: int
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc, children = _started_with_workers(big_trace, out, private_tmp)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=WAIT)
    if proc.returncode == 0:
        pytest.skip("the run ended before the signal arrived")
    assert proc.returncode == status, stderr
    assert b"evaluated the" in stdout  # the summary of what was read
    _until(lambda: not any(_alive(c) for c in children), "the workers to end")
    assert _leftovers(out, private_tmp) == []


def test_workers_end_when_the_main_process_is_killed(
    tmp_path: Path, private_tmp: Path, big_trace: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc, children = _started_with_workers(big_trace, out, private_tmp)
    proc.kill()
    # the caller's pipes reach end of file: no orphan holds them open (a CI step would hang)
    assert proc.stdout is not None
    done = threading.Event()
    threading.Thread(target=lambda: (_drain(proc.stdout), done.set()), daemon=True).start()
    assert done.wait(WAIT), "stdout still held open after the main process was killed"
    proc.communicate(timeout=WAIT)
    _until(lambda: not any(_alive(c) for c in children), "the workers to end")


def _drain(stream: IO[bytes]) -> None:
    while stream.read(65536):
        pass


def test_keyboard_interrupt_in_evaluate_trace_leaves_nothing(
    private_tmp: Path, big_trace: Path
) -> None:
    import multiprocessing

    seen = [0]

    def interrupt(found: list[Any]) -> None:
        seen[0] += len(found)
        if seen[0] > 1000:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_trace(str(EXAMPLE / "gold.json"), str(big_trace), workers=2, on_finding=interrupt)
    gc.collect()
    assert multiprocessing.active_children() == []
    assert _leftovers(private_tmp) == []


# -- watch -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_watch_stops_with_a_summary(
    tmp_path: Path, private_tmp: Path, signum: int, status: int
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore", "watch", "--findings", str(tmp_path / "f.jsonl")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=_env(private_tmp),
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(_call(i) for i in range(20)))
    proc.stdin.flush()
    first = proc.stdout.readline()  # a finding: the watch is running
    assert b"failed" in first
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == status, stderr
    assert b"> Calls read: 20" in stdout
    assert _leftovers(tmp_path, private_tmp) == []


@pytest.mark.anyio
async def test_a_cancelled_watch_leaves_nothing(tmp_path: Path, private_tmp: Path) -> None:
    send, receive = anyio.create_memory_object_stream[bytes](10)

    async def chunks() -> Any:
        async with receive:
            async for chunk in receive:
                yield chunk

    with anyio.move_on_after(1.0) as scope:
        async with send, watch(chunks()) as run:
            await send.send(b"".join(_call(i) for i in range(3000)))
            async for _ in run:
                pass  # the stream never ends: cancelled by the timeout
    assert scope.cancelled_caught
    gc.collect()
    assert _leftovers(tmp_path, private_tmp) == []
