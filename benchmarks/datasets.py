"""Dataset benchmark: many traces, each against its own gold, on 1 or 2 workers and on Dask.

    python benchmarks/datasets.py --traces 10000,100000 [--dask] [--loop] [--workers 1,2]
        [--shapes contiguous,gzip,interleaved]

Generates (from ``--seed``) a JSON Lines file of traces (10-50 calls each, 4 trials a task,
5% failed calls, some retries) keyed by ``trace_id`` and a JSON Lines gold keyed the same
way, then times, each in a fresh process (so peak RSS is that run's):

* ``toolscore eval GOLD TRACES -o ... --workers N`` (the process pool) for each N;
* the same on a Dask ``LocalCluster`` of N worker processes (``--dask``);
* ``--elsewhere``: the same on a Dask cluster whose N workers cannot see this machine's
  temporary directory, as workers on other machines (a scheduler and ``dask worker``
  processes on 127.0.0.1, each worker in a mount namespace of its own where a tmpfs covers
  the run's work directory; Linux, as root). The run then sends a compressed file's ranges
  and an interleaved file's partitions to the workers with their bytes;
* ``--loop``: the baseline a user has without datasets: read the file, group the lines by
  trace id, and call ``toolscore.evaluate()`` on each trace in one process;
* ``--loop-python PYTHON`` (with ``--loop``): the same loop, in the same run, under another
  interpreter (another build's virtual environment, e.g. ``/work/before/.venv/bin/python``),
  for a baseline that is not this checkout.

With ``--shapes`` the same traces are also timed as other files: ``gzip`` (the file gzipped,
level 1) and ``interleaved`` (the lines of each 64 consecutive traces taken in turn, as the
concurrent sessions of a production log interleave). Their records and aggregates are the
contiguous file's; MB/s counts the uncompressed bytes.

It prints traces/s, MB/s, wall seconds, CPU seconds (the run's own, plus every process below
it: the pool's or Dask's workers, polled every 0.1 s, so the last tenth of a second of a
worker may be missed) and traces per CPU second (on a shared machine, where wall times swing
with the load, the steadier figure), and peak RSS (the driver's ``ru_maxrss``, and the
largest ``VmHWM`` of any process below it) for each. Not a test: run it by hand on a quiet
machine.

Toolscore 1.10 is not installable here. The issue measured, on tau-bench's traces of 6.4 calls
on average, Toolscore 1.10's ``evaluate()`` loop at ~810 traces/s and this package's
``evaluate()`` at ~680 at the time it was filed (commit c115bff). With ``--loop-python`` pointing
at that build, its loop times 810/680 is printed as the 1.10 proxy, and each run's wall-clock
multiple of it (the issue's target: 4x on 2 workers at 100k traces) and its multiple per CPU
second (steadier on a shared machine, where wall times swing with the load).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = (
    "search_flights",
    "get_user",
    "book",
    "cancel",
    "get_reservation",
    "update_baggage",
    "calculate",
    "send_email",
)


def _args(rng: random.Random, tool: str) -> dict[str, Any]:
    return {
        "user_id": f"user_{rng.randrange(10_000)}",
        "query": f"{tool} {rng.choice(['NYC', 'SFO', 'LAX', 'SEA'])} {rng.randrange(1, 28)}",
        "limit": rng.randrange(1, 20),
    }


def generate(
    traces_path: str | os.PathLike[str],
    gold_path: str | os.PathLike[str],
    traces: int,
    *,
    seed: int = 7,
    trials: int = 4,
    min_calls: int = 10,
    max_calls: int = 50,
) -> int:
    """Write ``traces`` traces (ids ``model/taskNNNNNN/trialK``) and their gold; returns the
    number of calls written."""
    rng = random.Random(seed)
    calls_written = 0
    tasks = (traces + trials - 1) // trials
    with (
        open(traces_path, "w", encoding="utf-8") as out,
        open(gold_path, "w", encoding="utf-8") as gold,
    ):
        written = 0
        for task in range(tasks):
            expected_tools = [rng.choice(TOOLS) for _ in range(rng.randrange(2, 6))]
            expected = [{"tool": t, "args": _args(rng, t)} for t in expected_tools]
            for trial in range(trials):
                if written >= traces:
                    break
                trace_id = f"model-a/task{task:06d}/trial{trial}"
                gold.write(json.dumps({"trace_id": trace_id, "expected": expected}) + "\n")
                n = rng.randrange(min_calls, max_calls + 1)
                lines = []
                for i in range(n):
                    if i < len(expected) and rng.random() < 0.8:
                        call = dict(expected[i])
                    else:
                        tool = rng.choice(TOOLS)
                        call = {"tool": tool, "args": _args(rng, tool)}
                    failed = rng.random() < 0.05
                    record = {"trace_id": trace_id, "index": i, **call}
                    record["result"] = "Error: timeout" if failed else "ok"
                    record["is_error"] = failed
                    lines.append(json.dumps(record))
                    if failed and rng.random() < 0.5:
                        lines.append(json.dumps({**record, "is_error": False, "result": "ok"}))
                out.write("\n".join(lines) + "\n")
                calls_written += len(lines)
                written += 1
    return calls_written


INTERLEAVE = 64
"""Traces whose lines the ``interleaved`` shape takes in turn."""


def shaped(traces: Path, shape: str) -> Path:
    """``traces`` as ``shape`` (written next to it once): the same lines, gzipped or
    interleaved."""
    if shape == "contiguous":
        return traces
    if shape == "gzip":
        import gzip
        import shutil

        out = traces.with_name(traces.name + ".gz")
        if not out.exists():
            with traces.open("rb") as src, gzip.open(out, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        return out
    if shape == "interleaved":
        out = traces.with_name(traces.stem + ".interleaved.jsonl")
        if not out.exists():
            with traces.open("rb") as src, out.open("wb") as dst:
                window: list[list[bytes]] = []
                current = None
                for line in src:
                    trace_id = json.loads(line)["trace_id"]
                    if trace_id != current:
                        if len(window) == INTERLEAVE:
                            dst.write(_in_turn(window))
                            window = []
                        window.append([])
                        current = trace_id
                    window[-1].append(line)
                dst.write(_in_turn(window))
        return out
    raise SystemExit(f"unknown shape {shape!r}: contiguous, gzip or interleaved")


def _in_turn(window: list[list[bytes]]) -> bytes:
    """One line of each trace in turn, until all are taken."""
    rounds = max((len(lines) for lines in window), default=0)
    return b"".join(lines[i] for i in range(rounds) for lines in window if i < len(lines))


_RUN = r"""
import json, os, resource, sys, threading, time
from toolscore.dataset import evaluate_dataset

PEAK = [0.0]
CPU = {}  # pid -> the latest utime + stime seen (seconds)
TICK = os.sysconf("SC_CLK_TCK")
DONE = threading.Event()

def descendants(root):
    parents = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    found, todo = set(), [root]
    while todo:
        p = todo.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found.add(child)
                todo.append(child)
    return found

def poll():
    # the largest resident set of any process below this one (pool or Dask workers)
    me = os.getpid()
    while not DONE.wait(0.1):
        for pid in descendants(me):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                CPU[pid] = (int(fields[11]) + int(fields[12])) / TICK
            except (OSError, IndexError, ValueError):
                pass
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            PEAK[0] = max(PEAK[0], int(line.split()[1]) / 1024)
            except OSError:
                pass

def main():
    threading.Thread(target=poll, daemon=True).start()
    gold, traces, engine, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = None
    workdir = None
    processes = []
    if engine == "dask":
        from distributed import Client, LocalCluster
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address="127.0.0.1:0")
        client = Client(cluster)
    if engine == "elsewhere":
        # workers that share no directory with this process: a scheduler and `workers` dask
        # workers on 127.0.0.1, each in a mount namespace of its own where an empty tmpfs
        # covers this run's work directory (Linux, as root: unshare --mount)
        import socket, subprocess, tempfile
        from distributed import Client
        workdir = tempfile.mkdtemp(prefix="toolscore-driver-only-")
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        dask = [sys.executable, "-m", "dask"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        processes.append(subprocess.Popen(
            [*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--dashboard-address", "127.0.0.1:0"], **quiet))
        cover = f'mount -t tmpfs toolscore-bench "{workdir}" && exec "$@"'
        for _ in range(workers):
            processes.append(subprocess.Popen(
                ["unshare", "--mount", "sh", "-c", cover, "sh", *dask, "worker",
                 f"tcp://127.0.0.1:{port}", "--host", "127.0.0.1", "--nthreads", "1",
                 "--no-nanny", "--no-dashboard"], **quiet))
        client = Client(f"tcp://127.0.0.1:{port}", timeout=60)
        client.wait_for_workers(workers, timeout=60)
    t = time.perf_counter()
    r = evaluate_dataset(gold, traces, engine="local" if engine == "pool" else "dask",
                         workers=workers, client=client, workdir=workdir)
    wall = time.perf_counter() - t
    s = r.summary()
    out = {"wall": wall, "traces": s["traces"], "mean": s["mean_score"],
           "median": s["median_score"], "p10": s["p10_score"], "pass_rate": s["pass_rate"],
           "pass_hat_k": s["pass_hat_k"], "errors": s["input_errors"],
           "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "child_rss_mb": PEAK[0],
           "cpu": sum(CPU.values()) + sum(resource.getrusage(resource.RUSAGE_SELF)[:2])}
    r.close()
    if client is not None:
        client.close()
    if engine == "dask":
        cluster.close()
    for p in processes[1:] + processes[:1]:  # (the workers first, then their scheduler)
        p.terminate(); p.wait()
    if workdir is not None:
        os.rmdir(workdir)
    print(json.dumps(out))
if __name__ == "__main__":
    main()
"""

_LOOP = r"""
import json, resource, sys, time
from collections import defaultdict
import orjson
def main():
    gold_path, traces = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:  # the timing model of Toolscore 1.10 (benchmarks/toolscore110.py)
        sys.path.insert(0, sys.argv[3])
        from toolscore110 import evaluate
    else:
        from toolscore import evaluate
    t = time.perf_counter()
    gold = {}
    with open(gold_path, "rb") as f:
        for line in f:
            d = orjson.loads(line)
            gold[d["trace_id"]] = d["expected"]
    groups = defaultdict(list)
    with open(traces, "rb") as f:
        for line in f:
            d = orjson.loads(line)
            groups[d["trace_id"]].append(d)
    total = 0.0
    n = 0
    for trace_id, calls in groups.items():
        total += evaluate(gold[trace_id], calls).score
        n += 1
    wall = time.perf_counter() - t
    print(json.dumps({"wall": wall, "traces": n, "mean": total / n,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "cpu": sum(resource.getrusage(resource.RUSAGE_SELF)[:2])}))
if __name__ == "__main__":
    main()
"""


LOOPS = ("loop", "before", "model")
"""The ``evaluate()`` loops (baselines, not dataset runs)."""
ISSUE_110_RATE = 810.0
"""Toolscore 1.10's ``evaluate()`` loop on tau-bench, traces/s (issue 12)."""
ISSUE_BEFORE_RATE = 680.0
"""This package's ``evaluate()`` loop then (commit c115bff), same traces, traces/s."""


QUIET_IDLE = 0.9
"""The share of the CPUs' time idle over half a second that counts as a quiet machine."""
QUIET_WAIT = 30.0
"""The longest wait for one, in seconds."""


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies of all CPUs since boot (Linux's /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)


def _quiet() -> None:
    """Wait until the machine is quiet: a LocalCluster's worker processes go on exiting
    after the run that started them has returned, and a run timed meanwhile shares the CPUs
    with them (the first evaluate() loop after a Dask run took 6-9 s longer at 100k)."""
    if not os.path.exists("/proc/stat"):
        time.sleep(1.0)
        return
    deadline = time.monotonic() + QUIET_WAIT
    while time.monotonic() < deadline:
        idle, total = _cpu_times()
        time.sleep(0.5)
        idle2, total2 = _cpu_times()
        if total2 > total and (idle2 - idle) / (total2 - total) >= QUIET_IDLE:
            return


def _run(code: str, *args: str, python: str | None = None) -> dict[str, Any]:
    _quiet()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    try:
        done = subprocess.run(
            [python or sys.executable, f.name, *args], capture_output=True, text=True, check=True
        )
    finally:
        os.unlink(f.name)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _print_proxy(count: int, results: dict[str, dict[str, Any]]) -> None:
    """The 1.10 proxy (the before build's loop x 810/680) and each run's multiple of it."""
    before = results["before"]
    scale = ISSUE_110_RATE / ISSUE_BEFORE_RATE
    proxy_wall = before["traces"] / before["wall"] * scale
    proxy_cpu = before["traces"] / before["cpu"] * scale
    print(
        f"<!-- {count:,} traces: Toolscore 1.10 proxy (before loop x {ISSUE_110_RATE:.0f}/"
        f"{ISSUE_BEFORE_RATE:.0f}): {proxy_wall:,.0f} traces/s, {proxy_cpu:,.0f} traces/CPU s "
        f"(the before loop's mean score: {before['mean']:.9f}) -->"
    )
    _print_multiples(count, results, "1.10 proxy", proxy_wall, proxy_cpu)


def _print_model(count: int, results: dict[str, dict[str, Any]]) -> None:
    """Each run's multiple of the 1.10 timing model's loop (a second estimate of the issue's
    baseline, from the reference's algorithms rather than from c115bff's speed)."""
    model = results["model"]
    wall = model["traces"] / model["wall"]
    cpu = model["traces"] / model["cpu"]
    print(
        f"<!-- {count:,} traces: Toolscore 1.10 model's loop: {wall:,.0f} traces/s, "
        f"{cpu:,.0f} traces/CPU s (its mean score: {model['mean']:.9f}) -->"
    )
    _print_multiples(count, results, "1.10 model's loop", wall, cpu)


def _print_multiples(
    count: int, results: dict[str, dict[str, Any]], what: str, wall: float, cpu: float
) -> None:
    """Each dataset run's multiple of a baseline's rates (traces/s, traces per CPU second)."""
    for name, r in results.items():
        if name in LOOPS:
            continue
        print(
            f"<!-- {count:,} traces: {name}: {r['traces'] / r['wall'] / wall:.2f}x the {what} "
            f"(wall), {r['traces'] / r['cpu'] / cpu:.2f}x (per CPU s) -->"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", default="10000")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--dask", action="store_true")
    parser.add_argument(
        "--elsewhere",
        action="store_true",
        help="also on a Dask cluster whose workers cannot see this machine's temporary "
        "directory (workers in mount namespaces of their own; Linux, as root)",
    )
    parser.add_argument("--loop", action="store_true")
    parser.add_argument(
        "--loop-python",
        default=None,
        help="with --loop: also run the loop under this interpreter (the 1.10 proxy's base)",
    )
    parser.add_argument(
        "--model-110",
        action="store_true",
        help="also time the loop over benchmarks/toolscore110.py, a timing model of Toolscore "
        "1.10's evaluate() (needs the bench extra: Levenshtein)",
    )
    parser.add_argument(
        "--shapes",
        default="contiguous",
        help="contiguous, gzip, interleaved: the same traces as these files (comma-separated)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", default=None, help="where the datasets go (default: a temp dir)")
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="toolscore-datasets-"))
    base.mkdir(parents=True, exist_ok=True)
    print(
        "| traces | run | workers | wall s | traces/s | MB/s | CPU s | traces/CPU s "
        "| driver RSS MB | worker RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for count in (int(x) for x in args.traces.split(",")):
        traces = base / f"traces-{count}.jsonl"
        gold = base / f"gold-{count}.jsonl"
        if not traces.exists():
            generate(traces, gold, count, seed=args.seed)
        mb = traces.stat().st_size / 1e6
        results: dict[str, dict[str, Any]] = {}
        loops: list[tuple[str, str, str | None, tuple[str, ...]]] = []
        if args.loop:
            loops.append(("loop", "evaluate() loop", None, ()))
        if args.loop and args.loop_python:
            loops.append(("before", f"evaluate() loop ({args.loop_python})", args.loop_python, ()))
        if args.model_110:
            here = str(Path(__file__).resolve().parent)
            loops.append(("model", "Toolscore 1.10 model's evaluate() loop", None, (here,)))
        for name, label, python, extra in loops:
            r = _run(_LOOP, str(gold), str(traces), *extra, python=python)
            results[name] = r
            print(
                f"| {count:,} | {label} | 1 | {r['wall']:.2f} | "
                f"{r['traces'] / r['wall']:,.0f} | {mb / r['wall']:.1f} | {r['cpu']:.2f} | "
                f"{r['traces'] / r['cpu']:,.0f} | {r['rss_mb']:.0f} | - |",
                flush=True,
            )
        for shape, workers in (
            (shape, int(w)) for shape in args.shapes.split(",") for w in args.workers.split(",")
        ):
            engines = ["pool"] + (["dask"] if args.dask else [])
            engines += ["elsewhere"] if args.elsewhere else []
            path = shaped(traces, shape)
            for engine in engines:
                r = _run(_RUN, str(gold), str(path), engine, str(workers))
                name = engine if shape == "contiguous" else f"{engine} ({shape})"
                results[f"{name}{workers}"] = r
                print(
                    f"| {count:,} | {name} | {workers} | {r['wall']:.2f} | "
                    f"{r['traces'] / r['wall']:,.0f} | {mb / r['wall']:.1f} | "
                    f"{r['cpu']:.2f} | {r['traces'] / r['cpu']:,.0f} | "
                    f"{r['rss_mb']:.0f} | {r['child_rss_mb']:.0f} |",
                    flush=True,
                )
        if "before" in results:
            _print_proxy(count, results)
        if "model" in results:
            _print_model(count, results)
        keys = ("traces", "mean", "median", "p10", "pass_rate", "pass_hat_k", "errors")
        runs = [r for name, r in results.items() if name not in LOOPS]
        same = all(all(r[k] == runs[0][k] for k in keys) for r in runs)
        print(f"<!-- {count:,} traces, {mb:.1f} MB: identical aggregates across runs: {same} -->")


if __name__ == "__main__":
    main()
