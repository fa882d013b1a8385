"""Two builds of this package on one dataset, in turn: traces a second and CPU per trace.

Each round runs ``evaluate_dataset(GOLD, TRACES, engine="local", workers=N)`` once under each
interpreter given (each with its own install of ``toolscore``: a virtual environment of an
older commit, say), in a fresh process, and prints, with the load average before it:

* traces a second (wall clock of the call);
* the driver's CPU per trace (its own ``getrusage``);
* the workers' CPU per trace, read from ``/proc`` for every process below the driver while
  the run lasts (a pool's processes are not waited for by the driver, so ``RUSAGE_CHILDREN``
  does not see them).

    python benchmarks/builds.py GOLD TRACES /tmp/old/bin/python .venv/bin/python --rounds 3

Linux only (``/proc``). ``--inline`` runs one process instead (``engine="inline"``: the CPU
per trace of the evaluation alone).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r"""
import json, os, resource, sys, threading, time
from toolscore.dataset import evaluate_dataset

cpu = {}

def below(pid):
    found = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                for child in map(int, f.read().split()):
                    found += [child, *below(child)]
    except OSError:
        pass
    return found

def sample(stop):
    tick = os.sysconf("SC_CLK_TCK")
    while not stop.is_set():
        for pid in below(os.getpid()):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
            except OSError:
                pass
        time.sleep(0.02)

def main():
    gold, traces, engine, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    stop = threading.Event()
    watcher = threading.Thread(target=sample, args=(stop,))
    watcher.start()
    wall = time.perf_counter()
    result = evaluate_dataset(gold, traces, engine=engine, workers=workers)
    n = result.traces
    result.close()
    wall = time.perf_counter() - wall
    stop.set()
    watcher.join()
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"traces": n, "wall": wall, "driver": own.ru_utime + own.ru_stime,
                      "workers": sum(cpu.values())}))

if __name__ == "__main__":
    main()
"""


def _run(python: str, args: argparse.Namespace) -> dict[str, float]:
    engine = "inline" if args.inline else "local"
    out = subprocess.run(
        [python, "-c", _CHILD, args.gold, args.traces, engine, str(args.workers)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gold")
    parser.add_argument("traces")
    parser.add_argument("pythons", nargs="+", help="interpreters, each with its own toolscore")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--inline", action="store_true", help="one process, no pool")
    args = parser.parse_args(argv)
    rates: dict[str, list[float]] = {python: [] for python in args.pythons}
    print("| round | build | load | traces | traces/s | driver us/trace | workers us/trace |")
    print("|---|---|---|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        for python in args.pythons:
            load = os.getloadavg()[0]
            got = _run(python, args)
            n = got["traces"]
            rates[python].append(n / got["wall"])
            print(
                f"| {round_} | {python} | {load:.2f} | {n:,.0f} | {n / got['wall']:,.0f} | "
                f"{got['driver'] / n * 1e6:.0f} | {got['workers'] / n * 1e6:.0f} |",
                flush=True,
            )
    first = statistics.median(rates[args.pythons[0]])
    for python in args.pythons:
        median = statistics.median(rates[python])
        print(f"{python}: median {median:,.0f} traces/s ({median / first:.2f}x the first)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
