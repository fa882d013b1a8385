"""Dataset benchmark: Toolscore 1.10 measured beside this package, on many small traces.

    python benchmarks/datasets.py [--cases 5:20000,30:20000,300:1000,tau:100] [--rounds 3]
        [--venv110 PATH] [--profile-traces 2000] [--dir DIR]

For each case it writes a keyed gold and a JSON Lines dataset into a temporary directory:
``N:COUNT`` is COUNT generated traces (seeded) of exactly N calls each (4 trials a task, 5%
failed calls, some retries), ``tau:COPIES`` the shared tau-bench corpus
(``../shared/corpus`` beside the repository, read in place; skipped with a message when
absent) replicated COPIES times with distinct trace ids. Then, in rounds (``--rounds``, at
least 3 for figures), it runs in turn, each in a fresh process:

* Toolscore 1.10's best loop (``evaluate_loop.py``): orjson read of the gold and the traces, lines
  grouped by trace id, ``gc.freeze()``, 1.10's ``evaluate(expected, actual)`` per trace, in one
  process, and the same split over two (a fork after the freeze, half the traces each);
* this package's ``toolscore.evaluate()`` in the same loop, one process;
* ``toolscore eval GOLD TRACES -o OUT.json --per-trace PT.jsonl`` with ``--workers 1`` and
  ``--workers 2`` (the real command, start-up included).

Each run's line shows its wall time (a loop's own: read to last score, imports excluded; the
command's: the process's), CPU seconds (the process and all below it) and the 1-minute load
average when it started. Then per case: each system's median wall and traces/s, its multiple
of 1.10's one-process loop, and the scores compared trace by trace with that loop's (equal
within 1e-9; differences where some tool has more than 12 calls in the trace, where 1.10
pairs greedily, counted apart from the others). Last, per-trace cost from a profile (5 and 30
calls, ``--profile-traces`` traces): function calls (cProfile) and µs of CPU (unprofiled) of
1.10's ``evaluate()``, ours, and our dataset path (``evaluate_dataset(..., engine="local",
workers=1)``, inline).

Toolscore 1.10 is ``tool-scorer==1.10.0`` from PyPI, in its own environment (it installs the
module ``toolscore`` too): ``--venv110 PATH`` (an environment or its python), else
``TOOLSCORE_110_PYTHON``, else ``.venv110`` in the repository, made with it and orjson when
absent.

``--engines`` times the dataset engines instead, as before: ``--traces 10000,100000`` (10-50
calls a trace), ``toolscore.dataset.evaluate_dataset`` on the process pool, ``--dask`` (a
``LocalCluster``) and ``--elsewhere`` (a Dask cluster whose workers cannot see this machine's
temporary directory: a scheduler and ``dask worker`` processes on 127.0.0.1, each in a mount
namespace where a tmpfs covers the run's work directory; Linux, as root), with ``--workers``
and ``--shapes contiguous,gzip,interleaved`` (the file gzipped, level 1, or the lines of each
64 consecutive traces in turn). It prints traces/s, MB/s, wall and CPU seconds, and peak RSS
(the driver's ``ru_maxrss``, the largest ``VmHWM`` below it, polled every 0.1 s).

Not a test: run it by hand on a quiet machine.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import vs110  # noqa: E402

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
CORPUS = HERE.parent.parent / "shared" / "corpus"
"""The shared corpus, beside the repository (read in place, never copied into it)."""
TAU = ("tau-bench-airline.jsonl", "tau-bench-airline.gold.jsonl")


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
    """Write ``traces`` traces (ids ``model-a/taskNNNNNN/trialK``) and their gold; returns the
    number of calls written. A trace has ``min_calls`` to ``max_calls`` lines (a retry of a
    failed call is one of them), so ``min_calls == max_calls`` gives exact counts."""
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
                lines: list[str] = []
                step = 0
                while len(lines) < n:
                    if step < len(expected) and rng.random() < 0.8:
                        call = dict(expected[step])
                    else:
                        tool = rng.choice(TOOLS)
                        call = {"tool": tool, "args": _args(rng, tool)}
                    failed = rng.random() < 0.05
                    record = {"trace_id": trace_id, "index": len(lines), **call}
                    record["result"] = "Error: timeout" if failed else "ok"
                    record["is_error"] = failed
                    lines.append(json.dumps(record))
                    if failed and len(lines) < n and rng.random() < 0.5:
                        retry = {**record, "index": len(lines), "is_error": False, "result": "ok"}
                        lines.append(json.dumps(retry))
                    step += 1
                out.write("\n".join(lines) + "\n")
                calls_written += len(lines)
                written += 1
    return calls_written


def replicate(corpus: Path, copies: int, traces_path: Path, gold_path: Path) -> int:
    """The tau-bench corpus ``copies`` times (ids ``copyNNN/<id>``), with the gold of its
    traces; returns the number of traces written. The corpus is only read."""
    traces_file, gold_file = (corpus / name for name in TAU)
    with gold_file.open("rb") as f:
        gold = {entry["trace_id"]: entry for entry in map(json.loads, filter(bytes.strip, f))}
    with traces_file.open("rb") as f:
        calls = [json.loads(line) for line in f if line.strip()]
    ids = list(dict.fromkeys(call["trace_id"] for call in calls if call["trace_id"] in gold))
    with (
        traces_path.open("w", encoding="utf-8") as out,
        gold_path.open("w", encoding="utf-8") as gout,
    ):
        for k in range(copies):
            for trace_id in ids:
                gout.write(json.dumps({**gold[trace_id], "trace_id": f"copy{k:03d}/{trace_id}"}))
                gout.write("\n")
            for call in calls:
                if call["trace_id"] in gold:
                    out.write(json.dumps({**call, "trace_id": f"copy{k:03d}/{call['trace_id']}"}))
                    out.write("\n")
    return len(ids) * copies


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
    with them."""
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


def _run(code: str, *args: str) -> dict[str, Any]:
    _quiet()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    try:
        done = subprocess.run(
            [sys.executable, f.name, *args], capture_output=True, text=True, check=True
        )
    finally:
        os.unlink(f.name)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def engines(args: argparse.Namespace, base: Path) -> None:
    """``--engines``: the dataset engines on generated datasets of 10-50 calls a trace."""
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
        results: list[dict[str, Any]] = []
        kinds = ["pool"] + (["dask"] if args.dask else []) + (["elsewhere"] * args.elsewhere)
        for shape in args.shapes.split(","):
            path = shaped(traces, shape)
            for workers, kind in ((int(w), k) for w in args.workers.split(",") for k in kinds):
                r = _run(_RUN, str(gold), str(path), kind, str(workers))
                results.append(r)
                name = kind if shape == "contiguous" else f"{kind} ({shape})"
                print(
                    f"| {count:,} | {name} | {workers} | {r['wall']:.2f} | "
                    f"{r['traces'] / r['wall']:,.0f} | {mb / r['wall']:.1f} | "
                    f"{r['cpu']:.2f} | {r['traces'] / r['cpu']:,.0f} | "
                    f"{r['rss_mb']:.0f} | {r['child_rss_mb']:.0f} |",
                    flush=True,
                )
        keys = ("traces", "mean", "median", "p10", "pass_rate", "pass_hat_k", "errors")
        same = all(all(r[k] == results[0][k] for k in keys) for r in results)
        print(f"<!-- {count:,} traces, {mb:.1f} MB: identical aggregates across runs: {same} -->")


# -- Toolscore 1.10 measured beside this package --------------------------------------------


def prepare(case: str, base: Path, seed: int, corpus: Path) -> tuple[Path, Path, int] | None:
    """The gold and traces of ``case`` (``N:COUNT`` or ``tau:COPIES``) and its trace count;
    None (with a message) when the corpus is absent."""
    kind, _, size = case.partition(":")
    gold, traces = base / f"gold-{kind}-{size}.jsonl", base / f"traces-{kind}-{size}.jsonl"
    if kind == "tau":
        if not all((corpus / name).is_file() for name in TAU):
            print(f"# {case}: skipped, the tau-bench corpus is not in {corpus}", flush=True)
            return None
        return gold, traces, replicate(corpus, int(size), traces, gold)
    calls = int(kind)
    generate(traces, gold, int(size), seed=seed, min_calls=calls, max_calls=calls)
    return gold, traces, int(size)


def _label(case: str) -> str:
    kind, _, size = case.partition(":")
    return f"tau-bench x{size}" if kind == "tau" else f"{int(size):,} x {kind} calls"


def _show(label: str) -> Any:
    def show(round_: int, system: vs110.System, run: vs110.Run) -> None:
        load = "-" if run.load is None else f"{run.load:.2f}"
        print(
            f"| {label} | {round_} | {system.label} | {run.wall:.2f} | {run.process:.2f} | "
            f"{run.cpu:.2f} | {run.traces / run.wall:,.0f} | {load} |",
            flush=True,
        )

    return show


def summarize(label: str, chosen: list[vs110.System], timings: vs110.Timings) -> None:
    """Each system's median wall and traces/s, and its multiple of 1.10's one-process loop."""
    base = timings.median_wall("110")
    print(f"\n{label}: medians of {len(timings.runs['110'])} rounds")
    print("| system | median wall s | traces/s | x 1.10 loop (1 process) | load 1m |")
    print("|---|---|---|---|---|")
    for system in chosen:
        runs = timings.runs[system.key]
        wall = timings.median_wall(system.key)
        loads = [r.load for r in runs if r.load is not None]
        load = f"{min(loads):.2f}-{max(loads):.2f}" if loads else "-"
        print(
            f"| {system.label} | {wall:.2f} | {runs[0].traces / wall:,.0f} | "
            f"{base / wall:.2f}x | {load} |"
        )


def report_scores(label: str, chosen: list[vs110.System], workdir: Path, traces: Path) -> None:
    """Every system's scores against 1.10's one-process loop's, trace by trace."""
    reference = vs110.read_scores(workdir / "scores-110.jsonl")
    heavy: set[str] | None = None

    def greedy() -> set[str]:
        nonlocal heavy
        if heavy is None:
            heavy = vs110.greedy_traces(traces)
        return heavy

    for system in chosen[1:]:
        other = vs110.read_scores(workdir / f"scores-{system.key}.jsonl")
        c = vs110.compare_scores(reference, other, greedy)
        print(
            f"{label}: {system.label} against 1.10's loop: {c.equal:,} of {c.total:,} scores "
            f"equal; {len(c.greedy):,} differ where a tool has more than "
            f"{vs110.GREEDY_ABOVE} calls (1.10 pairs greedily), {len(c.other):,} otherwise"
        )
        for trace_id, theirs, ours in c.other[:5] or c.greedy[:3]:
            print(f"    {trace_id}: 1.10 {theirs!r}, {system.label} {ours!r}")


def profile_table(python: str, base: Path, count: int, seed: int) -> None:
    """Function calls and µs of CPU per trace, at 5 and 30 calls."""
    print(f"\nPer-trace cost ({count:,} traces; calls: cProfile; CPU: unprofiled, after warm-up)")
    print("| calls a trace | what | function calls a trace | CPU µs a trace |")
    print("|---|---|---|---|")
    for calls in (5, 30):
        gold, traces = base / f"profile-gold-{calls}.jsonl", base / f"profile-{calls}.jsonl"
        generate(traces, gold, count, seed=seed, min_calls=calls, max_calls=calls)
        for what, interpreter, mode in (
            ("Toolscore 1.10 evaluate()", python, "evaluate"),
            ("our evaluate()", sys.executable, "evaluate"),
            ("our dataset path (inline, 1 worker)", sys.executable, "dataset"),
        ):
            f = vs110.profile(interpreter, gold, traces, mode)
            print(f"| {calls} | {what} | {f['calls']:,.0f} | {f['us']:,.0f} |", flush=True)


def compare(args: argparse.Namespace, base: Path) -> None:
    """Toolscore 1.10 and this package, round-robin over the systems, case by case."""
    python = vs110.python110(args.venv110)
    chosen = vs110.systems(python)
    print(f"# Toolscore 1.10: {python}; this package: {sys.executable}; {os.cpu_count()} CPUs")
    print("| case | round | system | wall s | process s | CPU s | traces/s | load 1m |")
    print("|---|---|---|---|---|---|---|---|")
    done: list[tuple[str, vs110.Timings, Path, Path]] = []
    for case in args.cases.split(","):
        prepared = prepare(case, base, args.seed, Path(args.corpus))
        if prepared is None:
            continue
        gold, traces, count = prepared
        workdir = base / case.replace(":", "-")
        workdir.mkdir(exist_ok=True)
        label = _label(case)
        timings = vs110.time_round_robin(
            chosen, gold, traces, workdir, count, args.rounds, _show(label)
        )
        done.append((label, timings, workdir, traces))
    for label, timings, workdir, traces in done:
        summarize(label, chosen, timings)
        report_scores(label, chosen, workdir, traces)
    if args.profile_traces:
        profile_table(python, base, args.profile_traces, args.seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="5:20000,30:20000,300:1000,tau:100")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--venv110", default=None, help="a Toolscore 1.10 environment or python")
    parser.add_argument("--profile-traces", type=int, default=2000, help="0: no profile")
    parser.add_argument("--corpus", default=str(CORPUS))
    parser.add_argument("--engines", action="store_true", help="time the dataset engines")
    parser.add_argument("--traces", default="10000", help="--engines: trace counts")
    parser.add_argument("--workers", default="1,2", help="--engines: worker counts")
    parser.add_argument("--dask", action="store_true", help="--engines: also a LocalCluster")
    parser.add_argument("--elsewhere", action="store_true", help="--engines: see above")
    parser.add_argument("--shapes", default="contiguous", help="--engines: contiguous,gzip,...")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", default=None, help="where the datasets go (default: a temp dir)")
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="toolscore-datasets-"))
    base.mkdir(parents=True, exist_ok=True)
    if args.engines:
        engines(args, base)
    else:
        compare(args, base)


if __name__ == "__main__":
    main()
