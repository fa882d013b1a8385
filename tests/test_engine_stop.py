"""A pool stopped while a worker writes its result ends: the workers are ended mid-write,
which leaves part of a result in the pipe, and the pool's manager thread must not wait for
the rest for ever (a dataset run stopped by Ctrl-C hung, about one run in ten)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from _cli import cli_env

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from dataclasses import dataclass
    from toolscore.parts.engine import run_parts

    @dataclass
    class Part:
        index: int

    def big(part, cfg):
        return b"x" * 64_000_000  # a result that takes a while to write to the pipe

    if __name__ == "__main__":
        attempts = int(sys.argv[1])
        for attempt in range(attempts):
            start = time.monotonic()
            delay = 0.05 + 0.4 * attempt / attempts  # stopped at times across the writing
            outcomes = run_parts(
                [Part(i) for i in range(6)], big, None, engine="local", workers=2,
                stop=lambda: time.monotonic() - start > delay,
            )
            print(attempt, sum(1 for _ in outcomes), flush=True)
    """
)


def test_a_pool_stopped_while_a_worker_writes_its_result_ends(tmp_path: Path) -> None:
    script = tmp_path / "stop_mid_write.py"  # (a file: the pool's workers import it)
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), "10"],
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,  # (before the fix, the first or second stop hung here)
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 10
