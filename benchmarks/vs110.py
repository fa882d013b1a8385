"""Toolscore 1.10 measured beside this package (the comparison of ``datasets.py``).

Its environment, the systems timed in turn (the ``evaluate()`` loops of ``evaluate_loop.py`` and the
real ``toolscore eval``), the trace-by-trace comparison of their scores, and the profile
figures per trace. ``datasets.py`` prepares the files and prints what this returns.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LOOP = HERE / "evaluate_loop.py"
VERSION = "1.10.0"
"""The Toolscore release measured (PyPI: ``tool-scorer``)."""
DEFAULT_VENV = REPO / ".venv110"
"""Where the environment is made when none is given (as ``.ci/run`` and the migration tests)."""
GREEDY_ABOVE = 12
"""Toolscore 1.10 pairs a tool's calls exactly up to this many trace calls, greedily above."""
EPSILON = 1e-9
"""Scores closer than this are equal."""


# -- the Toolscore 1.10 environment ---------------------------------------------------------


def python110(given: str | None = None) -> str:
    """The interpreter of a Toolscore 1.10 environment with orjson.

    ``given`` (``--venv110``: an environment or its python) first, then ``TOOLSCORE_110_PYTHON``,
    then ``.venv110`` in the repository, made (``tool-scorer==1.10.0`` and orjson, from PyPI)
    when absent. A given interpreter is checked, not changed.
    """
    chosen = given or os.environ.get("TOOLSCORE_110_PYTHON")
    if chosen:
        path = Path(chosen)
        python = path / "bin" / "python" if path.is_dir() else path
    else:
        python = DEFAULT_VENV / "bin" / "python"
        if not python.is_file():
            print(f"# making {DEFAULT_VENV} (tool-scorer=={VERSION}, orjson)", flush=True)
            subprocess.run([sys.executable, "-m", "venv", str(DEFAULT_VENV)], check=True)
        if _probe(python) is None:
            pip = [str(python), "-m", "pip", "install", "-q", f"tool-scorer=={VERSION}", "orjson"]
            subprocess.run(pip, check=True)
    found = _probe(python)
    if found != VERSION:
        raise SystemExit(
            f"{python}: needs tool-scorer=={VERSION} and orjson "
            f"({'not runnable or missing one' if found is None else 'has ' + found}); "
            f"`{python} -m pip install tool-scorer=={VERSION} orjson`, or let the script make "
            f"{DEFAULT_VENV} (no --venv110, no TOOLSCORE_110_PYTHON)"
        )
    return str(python)


def _probe(python: Path) -> str | None:
    """The tool-scorer version ``python`` has with orjson, or None."""
    if not python.is_file():
        return None
    code = "import orjson, toolscore, importlib.metadata as m; print(m.version('tool-scorer'))"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


# -- the systems, timed in turn -------------------------------------------------------------


@dataclass(frozen=True)
class System:
    """One way of scoring a dataset: a command, and where its scores go."""

    key: str
    label: str
    command: Callable[[Path, Path, Path], list[str]]
    """(gold, traces, scores file) -> argv."""
    reports_wall: bool
    """The command prints its own wall time (the loops: imports excluded)."""


def systems(python: str) -> list[System]:
    """1.10's loop on 1 and 2 processes, ours on 1, and ``toolscore eval`` on 1 and 2 workers."""
    cli = Path(sys.executable).with_name("toolscore")
    toolscore = [str(cli)] if cli.is_file() else [sys.executable, "-m", "toolscore"]

    def looped(interpreter: str, processes: int) -> Callable[[Path, Path, Path], list[str]]:
        def argv(gold: Path, traces: Path, scores: Path) -> list[str]:
            return [interpreter, str(LOOP), "loop", str(gold), str(traces), str(scores),
                    "--processes", str(processes)]  # fmt: skip

        return argv

    def evaluated(workers: int) -> Callable[[Path, Path, Path], list[str]]:
        def argv(gold: Path, traces: Path, scores: Path) -> list[str]:
            report = scores.with_suffix(".report.json")
            return [*toolscore, "eval", str(gold), str(traces), "-o", str(report),
                    "--per-trace", str(scores), "--workers", str(workers)]  # fmt: skip

        return argv

    return [
        System("110", "Toolscore 1.10 loop, 1 process", looped(python, 1), True),
        System("110x2", "Toolscore 1.10 loop, 2 processes", looped(python, 2), True),
        System("loop", "our evaluate() loop, 1 process", looped(sys.executable, 1), True),
        System("eval1", "toolscore eval --workers 1", evaluated(1), False),
        System("eval2", "toolscore eval --workers 2", evaluated(2), False),
    ]


def load_average() -> float | None:
    """The 1-minute load average (``/proc/loadavg``), or None where there is none."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


@dataclass
class Run:
    """One timed run of one system."""

    wall: float
    """The loop's own wall time (read to last score), or the command's (process to exit)."""
    process: float
    """The process's wall time, start-up included."""
    cpu: float
    """CPU seconds of the process and every process below it."""
    traces: int
    load: float | None


def run_once(system: System, gold: Path, traces: Path, scores: Path, count: int) -> Run:
    """Run ``system`` once in a fresh process; its scores are left in ``scores``."""
    for stale in (scores, scores.with_suffix(".report.json")):
        stale.unlink(missing_ok=True)
    load = load_average()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(system.command(gold, traces, scores), capture_output=True, text=True)
    process = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # eval: 1 is a failed gate, not a failed run
        raise SystemExit(f"{system.label} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    wall, n = process, count
    if system.reports_wall:
        reported = orjson.loads(done.stdout.strip().splitlines()[0])
        wall, n = reported["wall"], reported["traces"]
    return Run(wall, process, cpu, n, load)


@dataclass
class Timings:
    """Every run of every system, in the order they ran."""

    runs: dict[str, list[Run]] = field(default_factory=dict)

    def median_wall(self, key: str) -> float:
        return statistics.median(r.wall for r in self.runs[key])


def time_round_robin(
    chosen: Sequence[System],
    gold: Path,
    traces: Path,
    workdir: Path,
    count: int,
    rounds: int,
    show: Callable[[int, System, Run], None],
) -> Timings:
    """``rounds`` rounds, each running every system once in turn (so load drifts fall on all)."""
    timings = Timings({s.key: [] for s in chosen})
    for round_ in range(1, rounds + 1):
        for system in chosen:
            run = run_once(system, gold, traces, workdir / f"scores-{system.key}.jsonl", count)
            timings.runs[system.key].append(run)
            show(round_, system, run)
    return timings


# -- scores, trace by trace -----------------------------------------------------------------


def read_scores(path: Path) -> dict[str, float | None]:
    """``trace_id`` -> ``score`` from JSON Lines (a loop's scores or ``--per-trace`` records)."""
    scores: dict[str, float | None] = {}
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                record = orjson.loads(line)
                scores[record["trace_id"]] = record.get("score")
    return scores


def greedy_traces(traces: Path) -> set[str]:
    """Trace ids with more than :data:`GREEDY_ABOVE` calls of one tool (1.10 pairs greedily)."""
    counts: dict[str, Counter[str]] = {}
    with traces.open("rb") as f:
        for line in f:
            if line.strip():
                call = orjson.loads(line)
                counts.setdefault(call["trace_id"], Counter())[str(call.get("tool"))] += 1
    return {tid for tid, c in counts.items() if max(c.values()) > GREEDY_ABOVE}


@dataclass
class Comparison:
    """Scores of one system against the reference's, trace by trace."""

    total: int
    equal: int
    greedy: list[tuple[str, float | None, float | None]]
    """Differences in traces where some tool has more than 12 calls."""
    other: list[tuple[str, float | None, float | None]]
    """Every other difference (a trace missing on one side counts here, its score None)."""


def compare_scores(
    reference: Mapping[str, float | None],
    other: Mapping[str, float | None],
    greedy: set[str] | Callable[[], set[str]],
) -> Comparison:
    """Compare ``other``'s scores with ``reference``'s (equal within :data:`EPSILON`).

    ``greedy``: the ids of traces where 1.10 pairs greedily, or a function giving them (called
    only when some score differs).
    """
    differing = []
    ids = list(reference) + [tid for tid in other if tid not in reference]
    for tid in ids:
        a, b = reference.get(tid), other.get(tid)
        if a is None or b is None or abs(a - b) > EPSILON:
            differing.append((tid, a, b))
    heavy = (greedy() if callable(greedy) else greedy) if differing else set()
    return Comparison(
        total=len(ids),
        equal=len(ids) - len(differing),
        greedy=[d for d in differing if d[0] in heavy],
        other=[d for d in differing if d[0] not in heavy],
    )


# -- profile figures per trace --------------------------------------------------------------


def profile(python: str, gold: Path, traces: Path, what: str) -> dict[str, float]:
    """Function calls and µs of CPU per trace of ``what`` (``evaluate`` or ``dataset``)."""
    argv = [python, str(LOOP), "profile", str(gold), str(traces), "--what", what]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = orjson.loads(done.stdout.strip().splitlines()[-1])
    n = figures["traces"]
    return {"traces": n, "calls": figures["calls"] / n, "us": figures["cpu"] / n * 1e6}
