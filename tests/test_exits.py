"""Exit statuses and locations at the edges: a closed stdout, a followed file, a FIFO."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from _cli import EXAMPLE, cli_env

CLOSED_OUTPUT = 141


def _run_with_closed_stdout(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with stdout a pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "toolscore", *args],
            stdout=write, stderr=subprocess.PIPE, cwd=cwd, env=cli_env(),
            timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write)


def test_eval_into_a_closed_pipe_is_not_a_failed_gate(tmp_path: Path) -> None:
    gold, trace = str(EXAMPLE / "gold.json"), str(EXAMPLE / "trace.json")
    proc = _run_with_closed_stdout(["eval", gold, trace, "-o", "r.json"], tmp_path)
    assert proc.returncode == CLOSED_OUTPUT
    assert proc.stderr == b""  # no traceback, no message: as `yes | head -1`
    assert (tmp_path / "r.json").stat().st_size > 0  # the reports were written first


def test_json_report_into_a_closed_stdout(tmp_path: Path) -> None:
    gold, trace = str(EXAMPLE / "gold.json"), str(EXAMPLE / "trace.json")
    proc = _run_with_closed_stdout(["eval", gold, trace, "-o", "/dev/stdout"], tmp_path)
    assert proc.returncode == CLOSED_OUTPUT
    assert b"Traceback" not in proc.stderr


def test_watch_into_a_closed_pipe(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"tool": "a", "error": "boom"}\n' * 5000, encoding="utf-8")
    proc = _run_with_closed_stdout(["watch", str(trace)], tmp_path)
    assert proc.returncode == CLOSED_OUTPUT
    assert proc.stderr == b""


def test_head_reads_one_line_and_the_status_says_what_happened(tmp_path: Path) -> None:
    gold, trace = str(EXAMPLE / "gold.json"), str(EXAMPLE / "trace.json")
    shell = (
        f"{sys.executable} -m toolscore eval {gold} {trace} -o r.json | head -1; "
        'echo "status=${PIPESTATUS[0]}"'
    )
    proc = subprocess.run(
        ["bash", "-c", shell], cwd=tmp_path, env=cli_env(),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    status = int(proc.stdout.strip().rsplit("status=", 1)[1])
    # 0: the summary fit in the pipe before head left; 141: a write met the closed pipe
    assert status in (0, CLOSED_OUTPUT), proc.stdout
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr


def _watch_lines(args: list[str]) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore", "watch", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
    )  # fmt: skip
    out = b""
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while b"malformed" not in out and time.monotonic() < deadline:
        chunk = proc.stdout.read()
        out += chunk or b""
        time.sleep(0.05)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    os.set_blocking(proc.stdout.fileno(), True)
    rest, _ = proc.communicate(timeout=60)  # waits, and closes the pipes
    return (out + rest).decode()


def test_a_followed_file_is_named_in_locations(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(b'{"tool": "a"}\nnot json\n')
    out = _watch_lines([str(trace), "--follow"])
    assert f"{trace}:2: malformed JSON" in out
    assert "<stream>" not in out


def test_a_fifo_is_named_in_locations(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    result: list[str] = []
    thread = threading.Thread(target=lambda: result.append(_watch_lines([str(fifo)])), daemon=True)
    thread.start()
    with open(fifo, "wb") as fh:
        fh.write(b'{"tool": "a"}\nnot json\n')
    thread.join(timeout=90)
    assert f"{fifo}:2: malformed JSON" in result[0]
    assert "<fd " not in result[0]
