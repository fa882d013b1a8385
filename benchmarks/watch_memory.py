"""Peak memory of ``toolscore watch`` over a long stream: an hour of an agent, in calls.

Generates JSON Lines calls on the fly (never holding them), writes them into the stdin of a
real ``python -m toolscore watch`` process through a pipe, and reads the process's peak RSS
from ``os.wait4`` when it exits. Memory must not grow with the number of calls: the target is
under 150 MB for 1,000,000 calls.

Run::

    python benchmarks/watch_memory.py                 # 1,000,000 calls
    python benchmarks/watch_memory.py --calls 200000 --gold

Exit status 0 when the peak is under the limit and every call was counted, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT_MB = 150.0

TOOLS = ("search", "fetch", "summarize", "read_file", "write_file")


def calls(n: int) -> Iterator[bytes]:
    """``n`` call lines, in chunks of 1,000 lines: 1% failed, 0.1% forbidden."""
    chunk: list[bytes] = []
    for i in range(n):
        if i % 1000 == 999:
            line = b'{"tool":"run_shell","args":{"command":"rm -rf /tmp/%d"}}\n' % i
        elif i % 100 == 42:
            line = b'{"tool":"fetch","args":{"url":"https://x/%d"},"error":"timeout"}\n' % i
        else:
            tool = TOOLS[i % len(TOOLS)].encode()
            line = b'{"tool":"%s","args":{"q":"query %d","n":%d},"result":"ok"}\n' % (tool, i, i)
        chunk.append(line)
        if len(chunk) == 1000:
            yield b"".join(chunk)
            chunk.clear()
    if chunk:
        yield b"".join(chunk)


def run(n: int, with_gold: bool) -> int:
    """Push ``n`` calls through ``toolscore watch``; print the figures; 0 when within limits."""
    with tempfile.TemporaryDirectory(prefix="toolscore-watch-bench-") as tmp:
        return _run(Path(tmp), n, with_gold)


def _run(tmp: Path, n: int, with_gold: bool) -> int:
    rules = tmp / "rules.json"
    rules.write_text(json.dumps([{"tool": "run_shell", "args": {"command": {"$regex": "rm -rf"}}}]))
    args = [sys.executable, "-m", "toolscore", "watch", "--forbidden", str(rules)]
    if with_gold:
        gold = tmp / "gold.json"
        gold.write_text(json.dumps([{"tool": t, "args": {"q": "query 1"}} for t in TOOLS] * 4))
        args += ["--gold", str(gold)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO / "src")) if p)
    out_path = tmp / "stdout.txt"
    with out_path.open("wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, env=env)
        assert proc.stdin is not None
        for chunk in calls(n):
            proc.stdin.write(chunk)
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
    text = out_path.read_text(errors="replace")
    # ru_maxrss is in KiB on Linux, in bytes on macOS
    peak_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    counted = re.search(r"> Calls read: ([\d,]+)", text)
    total = int(counted.group(1).replace(",", "")) if counted else -1
    finding_lines = sum(1 for line in text.splitlines() if line.startswith("[calls "))
    print(f"calls written     {n:,}")
    print(f"calls counted     {total:,}")
    print(f"finding lines     {finding_lines:,}")
    print(f"exit status       {proc.returncode}")
    print(f"elapsed           {elapsed:.1f} s ({n / elapsed:,.0f} calls/s)")
    print(f"peak RSS          {peak_mb:.1f} MB (limit {LIMIT_MB:.0f} MB)")
    ok = peak_mb < LIMIT_MB and total == n and proc.returncode == 0
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--gold", action="store_true", help="also score against a gold file")
    opts = parser.parse_args()
    raise SystemExit(run(opts.calls, opts.gold))


if __name__ == "__main__":
    main()
