"""SIGINT and SIGTERM stop a dataset run in every engine (inline, the process pool, a local
Dask cluster): exit 130 or 143, the JSON report and the per-trace file of what was read, and
no process, temporary file or directory left behind. Real command-line runs, signalled while
they read."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from _cli import cli_env
from _datasets import generate_dataset

WAIT = 60.0
"""Bounded wait for a run to start or end (not a speed assertion)."""
TRACES = 4000


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A directory of 16 files of whole traces (each file's records are written as it is
    done), and their keyed gold."""
    folder = tmp_path_factory.mktemp("signals")
    whole, gold = folder / "whole.jsonl", folder / "gold.jsonl"
    generate_dataset(whole, gold, TRACES, seed=3)
    traces = folder / "traces"
    traces.mkdir()
    files = [open(traces / f"part{i:02}.jsonl", "wb") for i in range(16)]
    try:
        order: dict[str, int] = {}
        with open(whole, "rb") as lines:
            for line in lines:
                trace_id = json.loads(line)["trace_id"]
                files[order.setdefault(trace_id, len(order) * 16 // TRACES)].write(line)
    finally:
        for f in files:
            f.close()
    whole.unlink()
    return gold, traces


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (read from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _written(folder: Path) -> int:
    """Bytes of the per-trace file being written (its temporary file) so far."""
    total = 0
    for p in folder.iterdir():
        if p.name.startswith(".toolscore-"):
            try:
                total += p.stat().st_size
            except OSError:
                pass
    return total


def _signalled(
    argv: list[str],
    ready: Callable[[subprocess.Popen[str]], bool],
    signum: int,
    env: dict[str, str] | None = None,
    poll: float = 0.01,
    group: bool = False,
) -> tuple[subprocess.Popen[str], str, set[int]]:
    """Run ``python -m ARGV``, send it ``signum`` once ``ready(proc)``, and wait for its end:
    ``(proc, stderr, the processes below it when it was signalled)``. With ``group``, it runs
    in a process group of its own and the signal goes to the whole group, as a terminal's
    Ctrl-C does."""
    proc = subprocess.Popen(
        [sys.executable, "-m", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env or cli_env(), text=True, start_new_session=group,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT
        while not ready(proc):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(poll)
        children = _descendants(proc.pid)
        if group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=WAIT)
    finally:
        if group:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # (whatever of the group is left)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # (its pipes closed too)
    return proc, stderr, children


ENGINES = {
    "inline": ["--engine", "inline"],
    "pool": ["--engine", "local", "--workers", "2"],
    "dask": ["--engine", "dask", "--workers", "2"],
}


@pytest.mark.parametrize(
    ("engine", "signum"),
    [
        ("inline", signal.SIGINT),
        ("pool", signal.SIGINT),
        ("pool", signal.SIGTERM),
        pytest.param("dask", signal.SIGTERM, marks=pytest.mark.cluster),
    ],
)
def test_a_signal_stops_a_dataset_run_with_its_reports(
    tmp_path: Path,
    dataset: tuple[Path, Path],
    engine: str,
    signum: int,
    request: pytest.FixtureRequest,
) -> None:
    if engine == "dask":
        pytest.importorskip("distributed")
    gold, traces = dataset
    out = tmp_path / "out"
    out.mkdir()
    # a TMPDIR of the run's own, short: the pool's forkserver puts its socket there
    tmp = Path(tempfile.mkdtemp(prefix="tss-"))
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    per_trace = out / "per-trace.jsonl"
    per_trace.write_bytes(b"old\n")
    env = cli_env()
    env["TMPDIR"] = str(tmp)
    proc, stderr, children = _signalled(
        ["toolscore", "eval", str(gold), str(traces), "-o", str(out / "r.json"),
         "--per-trace", str(per_trace), *ENGINES[engine]],
        lambda _: _written(out) >= 10_000,  # some traces done, most not
        signum, env,
    )  # fmt: skip
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), stderr
    name = "SIGINT (Ctrl-C)" if signum == signal.SIGINT else "SIGTERM"
    assert f"interrupted by {name}" in stderr
    report = json.loads((out / "r.json").read_bytes())
    assert report["summary"]["interrupted"] is True
    read = report["summary"]["traces"]
    assert 0 < read < TRACES
    records = [json.loads(line) for line in per_trace.read_bytes().splitlines()]
    assert len(records) == read
    assert all(r["status"] != "no_trace" for r in records)  # (the rest was not read)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in children if _alive(pid)] == []
    assert sorted(p.name for p in out.iterdir()) == ["per-trace.jsonl", "r.json"]
    assert list(tmp.iterdir()) == []


def _opened(folder: Path) -> bool:
    """Whether the run has opened its per-trace file (its temporary file exists)."""
    return any(p.name.startswith(".toolscore-") for p in folder.iterdir())


def test_a_signal_before_any_trace_is_done_still_writes_the_report(
    tmp_path: Path, dataset: tuple[Path, Path], request: pytest.FixtureRequest
) -> None:
    # stopped as soon as its outputs are open, before a part has come back: the report says
    # what was read (perhaps nothing), the old per-trace file is replaced by what was read
    gold, traces = dataset
    out = tmp_path / "out"
    out.mkdir()
    tmp = Path(tempfile.mkdtemp(prefix="tss-"))
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    env = cli_env()
    env["TMPDIR"] = str(tmp)
    proc, stderr, _ = _signalled(
        ["toolscore", "eval", str(gold), str(traces), "-o", str(out / "r.json"),
         "--per-trace", str(out / "pt.jsonl"), *ENGINES["pool"]],
        lambda _: _opened(out), signal.SIGINT, env, poll=0.005,
    )  # fmt: skip
    assert proc.returncode == 130, stderr
    report = json.loads((out / "r.json").read_bytes())
    assert report["summary"]["interrupted"] is True
    read = report["summary"]["traces"]
    assert read < TRACES
    assert len((out / "pt.jsonl").read_bytes().splitlines()) == read
    assert sorted(p.name for p in out.iterdir()) == ["pt.jsonl", "r.json"]
    assert list(tmp.iterdir()) == []


@pytest.mark.cluster
def test_ctrl_c_while_the_local_cluster_starts_ends_the_run_as_interrupted(
    tmp_path: Path, dataset: tuple[Path, Path], request: pytest.FixtureRequest
) -> None:
    # a terminal's Ctrl-C reaches every process of its group, the cluster's workers too,
    # here while they start: the run ends as interrupted, and no worker dies ("Nanny failed
    # to start", exit 2) or prints a traceback
    pytest.importorskip("distributed")
    gold, traces = dataset
    tmp = Path(tempfile.mkdtemp(prefix="tsg-"))
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    env = cli_env()
    env["TMPDIR"] = str(tmp)
    report = tmp_path / "r.json"

    def starting(_: object) -> bool:  # the cluster's workers are being started
        return any(tmp.glob("toolscore-dataset-*/python-ignoring-sigint"))

    proc, stderr, _ = _signalled(
        ["toolscore", "eval", str(gold), str(traces), "-o", str(report), *ENGINES["dask"]],
        starting, signal.SIGINT, env, poll=0.005, group=True,
    )  # fmt: skip
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert report.exists(), stderr
    assert json.loads(report.read_bytes())["summary"]["interrupted"] is True


def test_a_signal_stops_the_actions_dataset_run_with_its_summary(
    tmp_path: Path, dataset: tuple[Path, Path]
) -> None:
    # the GitHub Action's dataset door handles signals as `eval` does: 130, and its summary
    gold, traces = dataset
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    proc, stderr, _ = _signalled(
        ["toolscore.action", "--traces", str(traces), "--gold-file", str(gold), "--workers",
         "1", "--summary", str(summary), "--outputs", str(outputs)],
        lambda p: _started(p.pid), signal.SIGINT, poll=0.05,
    )  # fmt: skip
    assert proc.returncode == 130, stderr
    assert "interrupted by SIGINT" in stderr
    assert summary.read_text(encoding="utf-8").strip()
    assert "traces=" in outputs.read_text(encoding="utf-8")


def _started(pid: int) -> bool:
    """Whether the run has spent a second of CPU (its imports done, the gold read)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") > 1.0
