"""The ``evaluate()`` loop of ``datasets.py``, run as a script under either interpreter.

    python evaluate_loop.py loop GOLD TRACES SCORES [--processes 1|2]
    python evaluate_loop.py profile GOLD TRACES [--what evaluate|dataset]

It imports only the standard library, orjson and ``toolscore``: under this checkout's
interpreter ``toolscore`` is this package, under a Toolscore 1.10 environment's it is 1.10
(``tool-scorer==1.10.0`` installs the same module name), and both take
``evaluate(expected, actual)``.

``loop`` is the best loop a Toolscore 1.10 user can write over a dataset (after one warm-up
``evaluate([], [])``, untimed, so neither package's imports count): read the keyed gold
and the traces (JSON Lines) with orjson, group the lines by ``trace_id``, ``gc.freeze()`` what
was read, then ``evaluate()`` each trace. With ``--processes 2`` the process forks once after
the freeze and each process scores half of the traces. It prints one JSON line (``wall``: read
to last score, imports excluded; ``traces``; ``cpu``: this process and its child) and then
writes each trace's score to SCORES (JSON Lines, ``trace_id`` and ``score``).

``profile`` counts, under cProfile, the function calls of the per-trace work (the ``evaluate()``
loop over traces already read, or ``toolscore.dataset.evaluate_dataset(..., engine="local",
workers=1)``, which runs inline), and times its CPU without the profiler (a warm-up run first,
so imports are not counted). It prints one JSON line: ``traces``, ``calls``, ``cpu``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import time
from collections.abc import Callable
from typing import Any

import orjson

from toolscore import evaluate

Groups = list[tuple[str, list[dict[str, Any]]]]


def read(gold_path: str, traces_path: str) -> tuple[dict[str, Any], Groups]:
    """The gold by trace id, and the traces' lines grouped by trace id (in file order)."""
    gold: dict[str, Any] = {}
    with open(gold_path, "rb") as f:
        for line in f:
            if line.strip():
                entry = orjson.loads(line)
                gold[entry["trace_id"]] = entry["expected"]
    groups: dict[str, list[dict[str, Any]]] = {}
    with open(traces_path, "rb") as f:
        for line in f:
            if line.strip():
                call = orjson.loads(line)
                calls = groups.get(call["trace_id"])
                if calls is None:
                    groups[call["trace_id"]] = calls = []
                calls.append(call)
    return gold, list(groups.items())


def score(gold: dict[str, Any], groups: Groups) -> list[float]:
    """Each trace's score, in order."""
    return [evaluate(gold.get(trace_id, []), calls).score for trace_id, calls in groups]


def loop(
    gold_path: str, traces_path: str, processes: int
) -> tuple[dict[str, Any], Groups, list[float]]:
    """Read, group, freeze and score (on 1 or 2 processes); returns the timing and scores."""
    evaluate([], [])  # lazy imports and first-use set-up happen before the clock starts
    start = time.perf_counter()
    gold, groups = read(gold_path, traces_path)
    gc.freeze()
    if processes == 1:
        scores = score(gold, groups)
    else:
        half = (len(groups) + 1) // 2
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the second half, its scores back through the pipe
            os.close(reader)
            with os.fdopen(writer, "wb") as out:
                out.write(orjson.dumps(score(gold, groups[half:])))
            os._exit(0)
        os.close(writer)
        scores = score(gold, groups[:half])
        with os.fdopen(reader, "rb") as back:
            scores += orjson.loads(back.read())
        os.waitpid(pid, 0)
    wall = time.perf_counter() - start
    times = os.times()
    cpu = times.user + times.system + times.children_user + times.children_system
    return {"wall": wall, "traces": len(groups), "cpu": cpu}, groups, scores


def profile(gold_path: str, traces_path: str, what: str) -> dict[str, Any]:
    """Function calls (cProfile) and CPU seconds (unprofiled) of the per-trace work."""
    run: Callable[[], object]
    if what == "dataset":
        from toolscore.dataset import evaluate_dataset  # only this package has it

        def run() -> object:
            result = evaluate_dataset(gold_path, traces_path, engine="local", workers=1)
            result.close()
            return result

        traces = sum(1 for _ in read(gold_path, traces_path)[1])
    else:
        gold, groups = read(gold_path, traces_path)
        traces = len(groups)

        def run() -> object:
            return score(gold, groups)

    run()  # warm-up: imports and first-use caches are not the per-trace cost
    start = time.process_time()
    run()
    cpu = time.process_time() - start
    profiler = cProfile.Profile()
    profiler.runcall(run)
    calls = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    return {"traces": traces, "calls": calls, "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("loop", "profile"))
    parser.add_argument("gold")
    parser.add_argument("traces")
    parser.add_argument("scores", nargs="?")
    parser.add_argument("--processes", type=int, choices=(1, 2), default=1)
    parser.add_argument("--what", choices=("evaluate", "dataset"), default="evaluate")
    args = parser.parse_args()
    if args.mode == "profile":
        print(json.dumps(profile(args.gold, args.traces, args.what)))
        return
    timing, groups, scores = loop(args.gold, args.traces, args.processes)
    print(json.dumps(timing), flush=True)
    if args.scores:
        with open(args.scores, "wb") as out:
            for (trace_id, _), value in zip(groups, scores, strict=True):
                out.write(orjson.dumps({"trace_id": trace_id, "score": value}) + b"\n")


if __name__ == "__main__":
    main()
