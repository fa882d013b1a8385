"""End-to-end ``toolscore eval`` throughput and peak RSS, next to the raw parse rate.

For each size and layout, this script generates a trace (cached in ``--data-dir``), then
measures in the same run, each in its own subprocess:

* the raw parse rate of the file: ijson's C backend ``items`` over the JSON array (prefix
  ``item``), and for JSON Lines a per-line ``orjson.loads`` loop (and, for reference, ijson with
  ``multiple_values=True``); timed inside the subprocess, so interpreter start-up is excluded;
* ``python -m toolscore eval benchmarks/gold.json FILE -o TMPFILE [--forbidden
  benchmarks/forbidden10.json]``: wall time from spawn to exit (start-up and the JSON report
  included), calls/s, MB/s and the peak RSS of that process (``os.wait4``'s ``ru_maxrss``).

It prints a Markdown table and writes it, with the machine's details, to
``benchmarks/results.md``. The JSON report goes to a temporary file that is deleted afterwards
(a real file, not ``/dev/null``, so that a writer that replaces its output atomically works).

Usage::

    python benchmarks/run.py [--sizes 1MB,10MB,100MB,1GB] [--layouts json,jsonl]
                             [--forbidden [off|on|both]] [--data-dir benchmarks/data]
                             [--seed 1] [--repeat 1] [--profile]
                             [--compare PYTHON]

``--compare PYTHON`` measures a second installation of toolscore (another checkout's
interpreter, e.g. ``../before/.venv/bin/python``) in the same rounds: each round runs the raw
parse, then every eval of this interpreter and of PYTHON one after the other, so both builds
see the same machine; the table gets a ``build`` column (``this`` and ``compare``) and the
ratios of the two.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import LAYOUTS, Layout, generate, parse_size  # noqa: E402

GOLD = HERE / "gold.json"
FORBIDDEN = HERE / "forbidden10.json"
RESULTS = HERE / "results.md"
MB = 10**6

#: Runs in a subprocess: parse FILE the raw way and print {"items", "seconds"} as JSON.
_RAW = r"""
import json, sys, time
import ijson, orjson
mode, path = sys.argv[1], sys.argv[2]
backend = ijson.get_backend("yajl2_c")
n = 0
start = time.perf_counter()
with open(path, "rb") as f:
    if mode == "ijson-array":
        for _ in backend.items(f, "item", use_float=True):
            n += 1
    elif mode == "ijson-lines":
        for _ in backend.items(f, "", use_float=True, multiple_values=True):
            n += 1
    else:
        loads = orjson.loads
        for line in f:
            if line.strip():
                loads(line)
                n += 1
print(json.dumps({"items": n, "seconds": time.perf_counter() - start}))
"""


@dataclass(slots=True)
class Proc:
    """What one measured subprocess did."""

    returncode: int
    seconds: float
    max_rss_mb: float
    stdout: str
    stderr: str


@dataclass(slots=True)
class Row:
    """One line of the results table."""

    size: str
    layout: str
    rules: int
    build: str
    calls: int
    bytes: int
    raw_mbps: float
    raw_alt: str
    eval_seconds: float | None
    rss_mb: float | None
    error: str = ""

    @property
    def mbps(self) -> float | None:
        return None if self.eval_seconds is None else self.bytes / MB / self.eval_seconds

    @property
    def calls_per_s(self) -> float | None:
        return None if self.eval_seconds is None else self.calls / self.eval_seconds

    @property
    def ratio(self) -> float | None:
        mbps = self.mbps
        return None if mbps is None or not self.raw_mbps else mbps / self.raw_mbps


def run_measured(cmd: list[str], cwd: Path | None = None) -> Proc:
    """Run a command to completion; return its exit code, wall time and peak RSS.

    Args:
        cmd: The command.
        cwd: Its working directory.

    Returns:
        The measurement. Output is captured in temporary files (pipes could fill up while
        ``os.wait4`` waits).
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Proc(
            proc.returncode,
            seconds,
            usage.ru_maxrss / 1024,  # KiB on Linux
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
        )


def _generator_version() -> str:
    return hashlib.sha1((HERE / "generate.py").read_bytes()).hexdigest()[:12]


def ensure_trace(data_dir: Path, size: str, layout: Layout, seed: int) -> tuple[Path, int]:
    """Generate the trace for (size, layout, seed) unless an up-to-date copy is cached.

    Returns:
        The file and its number of calls.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"trace-{size}-s{seed}.{layout}"
    meta_path = path.with_name(path.name + ".meta.json")
    version = _generator_version()
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("generator") == version and meta.get("bytes") == path.stat().st_size:
            return path, int(meta["calls"])
    tmp = path.with_name(path.name + ".part")
    start = time.perf_counter()
    calls = generate(tmp, parse_size(size), layout, seed)
    os.replace(tmp, path)
    meta = {"calls": calls, "bytes": path.stat().st_size, "seed": seed, "generator": version}
    meta_path.write_text(json.dumps(meta))
    print(f"  generated {path.name}: {calls} calls in {time.perf_counter() - start:.1f}s")
    return path, calls


def raw_rate(path: Path, mode: str, repeat: int = 1) -> tuple[float, int]:
    """Raw parse rate of a file in MB/s and the items read; the best of ``repeat`` runs.

    Each run is a fresh interpreter, timed inside, so start-up is excluded.
    """
    best, items = 0.0, 0
    for _ in range(max(1, repeat)):
        proc = run_measured([sys.executable, "-c", _RAW, mode, str(path)])
        if proc.returncode:
            raise RuntimeError(f"raw parse ({mode}) failed:\n{proc.stderr}")
        info = json.loads(proc.stdout)
        best = max(best, path.stat().st_size / MB / info["seconds"])
        items = int(info["items"])
    return best, items


def eval_cmd(
    trace: Path,
    report: Path,
    rules: bool,
    extra: list[str],
    python: str = sys.executable,
    rule_file: Path = FORBIDDEN,
) -> list[str]:
    """The ``toolscore eval`` command line that is measured, run by ``python``."""
    cmd = [python, "-m", "toolscore", "eval", str(GOLD), str(trace), "-o", str(report)]
    if rules:
        cmd += ["--forbidden", str(rule_file)]
    return cmd + extra


def rule_count(path: Path) -> int:
    """The rules in a rule file: a forbidden list's items, or every list item and every
    other key of a rule object (``allow``, ``max_calls``, ...) counted once."""
    data = json.loads(path.read_text())
    if isinstance(data, list):
        return len(data)
    return sum(len(v) if isinstance(v, list) else 1 for v in data.values())


def measure_eval(
    trace: Path,
    rules: bool,
    extra: list[str],
    python: str = sys.executable,
    rule_file: Path = FORBIDDEN,
) -> tuple[Proc, str]:
    """Run ``toolscore eval`` once; return the measurement and an error text ("" if fine)."""
    fd, name = tempfile.mkstemp(prefix="toolscore-bench-", suffix=".json", dir=trace.parent)
    os.close(fd)
    report = Path(name)
    report.unlink()
    try:
        proc = run_measured(eval_cmd(trace, report, rules, extra, python, rule_file))
        wrote = report.exists() and report.stat().st_size > 0
    finally:
        report.unlink(missing_ok=True)
    error = ""
    if proc.returncode not in (0, 1) or not wrote:
        error = f"exit {proc.returncode}" + ("" if wrote else ", no JSON report")
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        print(f"  toolscore eval failed ({error}):", *("    " + t for t in tail), sep="\n")
    return proc, error


def profile(
    trace: Path, rules: bool, extra: list[str], top: int = 25, rule_file: Path = FORBIDDEN
) -> str:
    """The top lines of ``python -m cProfile -s cumtime -m toolscore eval ...`` on a trace."""
    fd, name = tempfile.mkstemp(prefix="toolscore-prof-", suffix=".json", dir=trace.parent)
    os.close(fd)
    cmd = eval_cmd(trace, Path(name), rules, extra, rule_file=rule_file)
    cmd[1:3] = ["-m", "cProfile", "-s", "cumtime", "-m", "toolscore"]
    try:
        proc = run_measured(cmd)
    finally:
        Path(name).unlink(missing_ok=True)
    lines = proc.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("ncalls"):
            return "\n".join(lines[i - 2 : i + 1 + top])
    return proc.stdout[-4000:] + proc.stderr[-4000:]


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def table(rows: list[Row]) -> str:
    """The results as a Markdown table, plus RSS ratios 1GB/10MB."""
    builds = len({r.build for r in rows}) > 1
    head = (
        "| size | layout | rules |"
        + (" build |" if builds else "")
        + " calls | raw MB/s | toolscore MB/s | ratio | calls/s | wall s | peak RSS MB |"
    )
    out = [head, "|" + "---|" * (11 if builds else 10)]
    for r in rows:
        build = f" {r.build} |" if builds else ""
        out.append(
            f"| {r.size} | {r.layout} | {r.rules} |{build} {r.calls:,} "
            f"| {r.raw_mbps:.1f}{r.raw_alt} "
            f"| {_fmt(r.mbps, '.1f')} | {_fmt(r.ratio, '.0%')} | {_fmt(r.calls_per_s, ',.0f')} "
            f"| {_fmt(r.eval_seconds, '.2f')} | {_fmt(r.rss_mb, '.1f')}"
            f"{' (' + r.error + ')' if r.error else ''} |"
        )
    by_key = {(r.size.upper(), r.layout, r.rules, r.build): r for r in rows}
    ratios = []
    for (size, layout, rules, build), r in by_key.items():
        small = by_key.get(("10MB", layout, rules, build))
        if size == "1GB" and small and r.rss_mb and small.rss_mb:
            ratios.append(
                f"- RSS 1GB/10MB, {layout}, {rules} rules"
                + (f", {build}" if builds else "")
                + f": {r.rss_mb:.1f} / {small.rss_mb:.1f} MB = {r.rss_mb / small.rss_mb:.2f}x"
            )
    for (size, layout, rules, build), r in by_key.items():
        other = by_key.get((size, layout, rules, "compare"))
        if build == "this" and other and r.eval_seconds and other.eval_seconds:
            ratios.append(
                f"- this/compare, {size} {layout}, {rules} rules: throughput "
                f"{other.eval_seconds / r.eval_seconds:.3f}x, peak RSS "
                f"{(r.rss_mb or 0.0) / (other.rss_mb or 1.0):.3f}x"
            )
    return "\n".join(out + (["", *ratios] if ratios else []))


def environment() -> str:
    """A few lines describing the machine and the versions measured."""
    version = subprocess.run(
        [sys.executable, "-m", "toolscore", "--version"], capture_output=True, text=True
    )
    return "\n".join(
        [
            f"- date: {time.strftime('%Y-%m-%d %H:%M')}",
            f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
            f"- python: {platform.python_version()} ({sys.executable})",
            "- load average (1, 5, 15 min) at the end of the run: "
            + ", ".join(f"{x:.2f}" for x in os.getloadavg())
            + " (other processes on the machine slow both the raw and the end-to-end runs)",
            f"- toolscore: {(version.stdout or version.stderr).strip()}",
            "- raw: ijson yajl2_c `items` (json); per-line orjson.loads (jsonl), in brackets "
            "ijson multiple_values for jsonl",
            "- toolscore: wall time of `python -m toolscore eval gold.json FILE -o TMPFILE`, "
            "start-up and JSON report included; peak RSS from os.wait4",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1MB,10MB,100MB,1GB")
    parser.add_argument("--layouts", default="json,jsonl")
    parser.add_argument(
        "--forbidden",
        nargs="?",
        const="on",
        default="off",
        choices=("off", "on", "both"),
        help="run with benchmarks/forbidden10.json (on), without (off) or both",
    )
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds of raw parse and evals; the fastest of each counts",
    )
    parser.add_argument("--eval-args", default="", help="extra arguments for toolscore eval")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile top 25")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--compare",
        metavar="PYTHON",
        help="also measure the toolscore installed for this interpreter, interleaved",
    )
    parser.add_argument(
        "--rules-file",
        type=Path,
        default=FORBIDDEN,
        help="the rule file of this build's runs with rules (the compare build's is always "
        "forbidden10.json): e.g. benchmarks/rules_all.json, every hard rule kind too",
    )
    ns = parser.parse_args(argv)
    builds = {"this": sys.executable, **({"compare": ns.compare} if ns.compare else {})}

    sizes = [s.strip() for s in ns.sizes.split(",") if s.strip()]
    layouts: list[Layout] = []
    for name in ns.layouts.split(","):
        if name not in LAYOUTS:
            parser.error(f"unknown layout {name!r}")
        layouts.append(name)
    for size in sizes:
        parse_size(size)
    rule_modes = {"off": [False], "on": [True], "both": [False, True]}[ns.forbidden]
    extra = shlex.split(ns.eval_args)

    # An installed wheel has its bytecode compiled at install time; an editable install under
    # PYTHONDONTWRITEBYTECODE (set on this project's machines) would compile every module
    # again at each start (about 60 ms). Compile once, as an installation would.
    import toolscore

    compileall.compile_dir(str(Path(toolscore.__file__).parent), quiet=1)
    if ns.compare:
        subprocess.run(
            [
                ns.compare,
                "-c",
                "import compileall, pathlib, toolscore; compileall.compile_dir("
                "str(pathlib.Path(toolscore.__file__).parent), quiet=1)",
            ],
            check=True,
        )
    base = run_measured([sys.executable, "-m", "toolscore", "--version"])
    print(f"toolscore start-up: {base.seconds:.2f}s, {base.max_rss_mb:.1f} MB RSS")
    rows: list[Row] = []
    profiles: list[str] = []
    for size in sizes:
        for layout in layouts:
            trace, calls = ensure_trace(ns.data_dir, size, layout, ns.seed)
            mode = "ijson-array" if layout == "json" else "orjson-lines"
            # Rounds interleave the raw parse and every eval, so that the machine's drift
            # (its speed wanders by tens of percent over minutes) reaches both sides of the
            # ratio alike; the fastest of each over the rounds counts.
            raw = alt = 0.0
            items = 0
            cases = [(rules, build) for rules in rule_modes for build in builds]
            best: dict[tuple[bool, str], Proc | None] = dict.fromkeys(cases)
            errors: dict[tuple[bool, str], str] = dict.fromkeys(cases, "")
            for _ in range(max(1, ns.repeat)):
                rate, items = raw_rate(trace, mode)
                raw = max(raw, rate)
                if layout == "jsonl":
                    alt = max(alt, raw_rate(trace, "ijson-lines")[0])
                for case in cases:
                    if errors[case]:
                        continue
                    rule_file = ns.rules_file if case[1] == "this" else FORBIDDEN
                    proc, errors[case] = measure_eval(
                        trace, case[0], extra, builds[case[1]], rule_file
                    )
                    kept = best[case]
                    if not errors[case] and (kept is None or proc.seconds < kept.seconds):
                        best[case] = proc
            if items != calls:
                print(f"  warning: raw parse read {items} items, the generator wrote {calls}")
            raw_alt = f" ({alt:.1f})" if layout == "jsonl" else ""
            for case in cases:
                rules = case[0]
                error = errors[case]
                fastest = best[case]
                row = Row(
                    size,
                    layout,
                    rule_count(ns.rules_file if case[1] == "this" else FORBIDDEN) if rules else 0,
                    case[1],
                    calls,
                    trace.stat().st_size,
                    raw,
                    raw_alt,
                    None if error or fastest is None else fastest.seconds,
                    None if error or fastest is None else fastest.max_rss_mb,
                    error,
                )
                rows.append(row)
                print(f"{case[1]:>7} " + table([row]).splitlines()[-1], flush=True)
                if ns.profile and not error and case[1] == "this":
                    profiles.append(
                        f"### {trace.name}, {row.rules} rules\n\n```\n"
                        f"{profile(trace, rules, extra, rule_file=ns.rules_file)}\n```"
                    )
    text = table(rows)
    print("\n" + text)
    for p in profiles:
        print("\n" + p)
    report = [
        "# toolscore benchmark results",
        "",
        environment(),
        f"- toolscore start-up (`--version`): {base.seconds:.2f}s, {base.max_rss_mb:.1f} MB RSS",
        "",
        text,
    ]
    ns.results.write_text("\n".join([*report, "", *profiles]) + "\n")
    print(f"\nwritten to {ns.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
