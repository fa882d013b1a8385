"""Large gold groups: one tool with thousands of gold calls against ten times as many trace calls.

For each case (gold calls x trace calls, all of the one tool ``search``), writes a seeded gold
file and a JSON Lines trace to a temporary directory, runs ``toolscore eval`` on them in a
fresh process, and prints its wall time, its peak RSS (``wait4``'s ``ru_maxrss``), the argument
F1 and how the pairing was made (``argument_metrics.pairing`` of the JSON report).

The arguments (``--shape search``, the default) mix what makes the pairing hard: a query drawn
from a third as many topics as gold calls (so many gold calls share their best trace calls), a
``max_results`` and ``lang`` that most calls share, and a ``page`` that some do. ``--shape
combinations`` is the hard case for the approximation's index: two arguments whose every value
is shared by 20 gold calls (so a trace call's weight comes from their combinations, tens of
thousands of them) and a third that is unique.

Usage::

    python benchmarks/large_gold.py                     # 4000x40000 and 10000x100000
    python benchmarks/large_gold.py --cases 4000x40000
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


def _args(rnd: random.Random, topics: int) -> dict[str, Any]:
    args: dict[str, Any] = {
        "query": f"topic {rnd.randrange(topics)}",
        "max_results": rnd.choice((10, 10, 10, 20)),
        "lang": "en" if rnd.random() < 0.9 else "de",
    }
    if rnd.random() < 0.3:
        args["page"] = rnd.randrange(1, 4)
    return args


def _combination(rnd: random.Random, n_gold: int, i: int | None) -> dict[str, Any]:
    values = max(1, n_gold // 20)
    if i is None:  # a trace call
        return {
            "a": f"v{rnd.randrange(values)}",
            "b": f"w{rnd.randrange(values + 1)}",
            "q": f"u{rnd.randrange(2 * n_gold)}",
        }
    return {"a": f"v{i % values}", "b": f"w{(i * 7) % (values + 1)}", "q": f"u{i}"}


def write_case(
    folder: Path, n_gold: int, n_trace: int, seed: int = 1, shape: str = "search"
) -> tuple[Path, Path]:
    """The gold file and the trace of one case, in ``folder``."""
    rnd = random.Random(seed)
    topics = max(1, n_gold // 3)

    def args(i: int | None) -> dict[str, Any]:
        if shape == "combinations":
            return _combination(rnd, n_gold, i)
        return _args(rnd, topics)

    gold = folder / "gold.json"
    trace = folder / "trace.jsonl"
    gold.write_text(json.dumps([{"tool": "search", "args": args(i)} for i in range(n_gold)]))
    with trace.open("w") as fh:
        for i in range(n_trace):
            call = {"tool": "search", "args": args(None), "duration": 0.01, "id": i}
            fh.write(json.dumps(call) + "\n")
    return gold, trace


def run_case(n_gold: int, n_trace: int, shape: str = "search") -> str:
    """One case, measured in a fresh process; its result line."""
    with tempfile.TemporaryDirectory(prefix="toolscore-large-gold-") as tmp:
        folder = Path(tmp)
        gold, trace = write_case(folder, n_gold, n_trace, shape=shape)
        report = folder / "report.json"
        cmd = [
            sys.executable,
            "-m",
            "toolscore",
            "eval",
            str(gold),
            str(trace),
            "-o",
            str(report),
        ]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
        arguments = json.loads(report.read_text())["metrics"]["argument_metrics"]
        pairing = arguments.get("pairing", {}).get("method", "exact")
        return (
            f"{shape}: {n_gold:>6} gold x {n_trace:>7} trace calls: {wall:7.2f} s, peak RSS "
            f"{rss_mb:7.1f} MB, argument F1 {arguments['f1']:.4f}, pairing {pairing}, "
            f"exit {proc.returncode}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases",
        nargs="+",
        default=["4000x40000", "10000x100000"],
        help="GOLDxTRACE call counts (default: 4000x40000 10000x100000)",
    )
    parser.add_argument(
        "--shape", choices=("search", "combinations"), default="search", help="the arguments"
    )
    args = parser.parse_args(argv)
    for case in args.cases:
        n_gold, n_trace = (int(x) for x in case.lower().split("x"))
        print(run_case(n_gold, n_trace, args.shape), flush=True)


if __name__ == "__main__":
    main()
