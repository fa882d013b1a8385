"""A local run starts its pool's forkserver before it reads the gold only when its traces are
a file large enough to be cut into parts; a small run stays in its process and starts none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolscore.dataset.run import MIN_PART_BYTES, likely_pooled

_CHILD = """
import os, sys
from toolscore.dataset import evaluate_dataset

def main():
    result = evaluate_dataset(sys.argv[1], sys.argv[2], engine="local", workers=2)
    result.close()
    me = os.getpid()
    children = []
    for tid in os.listdir(f"/proc/{me}/task"):
        with open(f"/proc/{me}/task/{tid}/children") as f:
            children += f.read().split()
    print(result.traces, len(children))

if __name__ == "__main__":
    main()
"""


def _dataset(tmp_path: Path, traces: int) -> tuple[Path, Path]:
    gold = tmp_path / "gold.jsonl"
    lines = tmp_path / "traces.jsonl"
    gold.write_text(
        "".join(json.dumps({"trace_id": f"t{i}", "expected": [{"tool": "a"}]}) + "\n"
                for i in range(traces))
    )  # fmt: skip
    lines.write_text(
        "".join(json.dumps({"trace_id": f"t{i}", "tool": "a", "args": {"q": "x" * 200}}) + "\n"
                for i in range(traces))
    )  # fmt: skip
    return gold, lines


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_a_small_local_run_starts_no_process(tmp_path: Path) -> None:
    gold, traces = _dataset(tmp_path, 20)
    script = tmp_path / "run.py"
    script.write_text(_CHILD)
    out = subprocess.run(
        [sys.executable, str(script), str(gold), str(traces)],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout.split()  # fmt: skip
    assert out == ["20", "0"]


def test_only_a_file_of_two_parts_or_more_with_two_workers_starts_the_pool_early(
    tmp_path: Path,
) -> None:
    _, small = _dataset(tmp_path, 20)
    large = tmp_path / "large.jsonl"
    large.write_bytes(b"\n" * (2 * MIN_PART_BYTES))
    assert not likely_pooled(str(small), 2)
    assert likely_pooled(str(large), 2)
    assert not likely_pooled(str(large), 1)  # one worker: the run stays in this process
    assert not likely_pooled(str(tmp_path), 2)  # a directory is not measured
    assert not likely_pooled(str(tmp_path / "*.jsonl"), 2)
    assert not likely_pooled("s3://bucket/traces.jsonl", 2)
