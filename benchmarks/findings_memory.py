"""Peak memory of ``toolscore eval`` when every call is a finding, next to its clean twin.

Writes two JSON Lines traces of the same calls (sizes alike, byte for byte nearly): one in
which every call matches a forbidden rule (``rm -rf``), and one in which none does (``ls
-la``); then runs ``python -m toolscore eval`` on each in a fresh process (with the same rule
file and a JSON report) and reads its peak RSS from ``os.wait4``. Memory must not grow with
the findings beyond the records kept (``toolscore.capped.MAX_RECORDS``, exact counts; the
JSON report gets every finding, streamed): the target is a peak within 1.25x of the clean
trace's.

Run::

    python benchmarks/findings_memory.py                    # 500,000 calls
    python benchmarks/findings_memory.py --calls 100000 --python /path/to/other/python

Also ``--rules FILE`` (any rule file, e.g. ``benchmarks/rules_all.json``) and ``--kind
secret`` (a credential in every call instead of a forbidden one). Exit status 0 when the
ratio is within the target and every violation was counted, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ijson

REPO = Path(__file__).resolve().parents[1]
TARGET = 1.25
RULES = [{"tool": "run_shell", "args": {"command": {"$contains": "rm -rf"}}, "reason": "delete"}]
KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def write_trace(path: Path, n: int, bad: bool, kind: str) -> None:
    """``n`` calls to ``run_shell``: each a finding of ``kind`` when ``bad``."""
    with open(path, "wb") as fh:
        chunk: list[bytes] = []
        for i in range(n):
            if kind == "secret":
                text = f"echo {KEY}" if bad else f"echo {'x' * len(KEY)}"
            else:
                text = "rm -rf" if bad else "ls -la"
            chunk.append(
                b'{"tool":"run_shell","args":{"command":"%s /tmp/d%d"},"result":"ok"}\n'
                % (text.encode(), i)
            )
            if len(chunk) == 10_000:
                fh.write(b"".join(chunk))
                chunk.clear()
        fh.write(b"".join(chunk))


def measure(
    python: str, gold: Path, trace: Path, rules: Path, out: Path
) -> tuple[float, float, Any]:
    """Peak RSS (MB) and wall seconds of one ``toolscore eval``, and its report's summary."""
    cmd = [python, "-m", "toolscore", "eval", str(gold), str(trace), "--forbidden", str(rules),
           "-o", str(out)]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    proc.stderr and proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {code}:\n{stderr}")
    with open(out, "rb") as fh:  # the summary only: this process forks the next run
        summary = next(ijson.items(fh, "summary"))
    # ru_maxrss is in KiB on Linux, in bytes on macOS
    peak = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return peak, wall, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500_000)
    parser.add_argument("--python", default=sys.executable, help="the toolscore to measure")
    parser.add_argument("--rules", help="a rule file (default: one forbidden rule)")
    parser.add_argument("--kind", choices=["forbidden", "secret"], default="forbidden")
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the lowest peak counts")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="toolscore-findings-bench-") as name:
        tmp = Path(name)
        gold = tmp / "gold.json"
        gold.write_text('[{"tool": "run_shell"}]', encoding="utf-8")
        rules = Path(args.rules) if args.rules else tmp / "rules.json"
        if not args.rules:
            rules.write_text(json.dumps(RULES), encoding="utf-8")
        traces = {}
        for label, bad in (("with findings", True), ("clean", False)):
            traces[label] = tmp / f"{label.replace(' ', '-')}.jsonl"
            write_trace(traces[label], args.calls, bad, args.kind)
        peaks: dict[str, float] = {}
        walls: dict[str, float] = {}
        summaries: dict[str, Any] = {}
        for _ in range(args.repeat):
            for label, trace in traces.items():
                peak, wall, summary = measure(args.python, gold, trace, rules, tmp / "r.json")
                peaks[label] = min(peak, peaks.get(label, peak))
                walls[label] = min(wall, walls.get(label, wall))
                summaries[label] = summary
    ratio = peaks["with findings"] / peaks["clean"]
    found = summaries["with findings"]
    counted = found.get("policy_violations", 0) + found.get("secrets", 0)
    print(f"{args.calls:,} calls, {args.kind} in each, {args.python}")
    for label in peaks:
        print(f"  {label:>13}: peak RSS {peaks[label]:6.1f} MB, {walls[label]:5.2f} s")
    print(f"  ratio {ratio:.2f}x (target {TARGET}x); findings counted: {counted:,}")
    return 0 if ratio <= TARGET and counted >= args.calls else 1


if __name__ == "__main__":
    raise SystemExit(main())
