"""The default task of a trace id: the same answer as its regex, in linear time."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run_cli
from toolscore.dataset._taskid import default_task
from toolscore.dataset.worker import DEFAULT_TASK_REGEX

_REGEX = re.compile(DEFAULT_TASK_REGEX)
_PIECES = st.sampled_from(
    ["a", "Z", "7", "/", ":", "_", ".", "-", "\n", "run", "try", "trial", "seed", "sample",
     "attempt", "12", "\u0663", " "]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_default_task_is_the_regex_answer(trace_id: str) -> None:
    match = _REGEX.search(trace_id)
    assert default_task(trace_id) == (None if match is None else match.group("task"))


def test_default_task_is_linear_in_the_id() -> None:
    # 64 KB of separators cost the regex 46 s; linear, 1 MB takes milliseconds
    for hostile in (
        "a" + "-" * 1_000_000 + "x",
        "a" + "-" * 1_000_000 + "run1x",
        "-" * 1_000_000 + "a-run1",
    ):
        began = time.perf_counter()
        default_task(hostile)
        assert time.perf_counter() - began < 1.0
    assert default_task("a" + "-" * 1_000_000 + "run1") == "a"


def test_a_long_id_in_a_dataset_run(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    long_id = "t" + "-" * 65_536 + "x"
    with open(traces / "all.jsonl", "w", encoding="utf-8") as f:
        for trace_id in (long_id, "job-run1", "job-run2"):
            f.write(json.dumps({"trace_id": trace_id, "tool": "a", "args": {}}) + "\n")
    began = time.perf_counter()
    run = run_cli("eval", str(traces), "-o", str(tmp_path / "r.json"), "--per-trace",
                  str(tmp_path / "p.jsonl"))  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert time.perf_counter() - began < 30
    tasks = [json.loads(line)["task"] for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert sorted(tasks) == sorted([long_id, "job", "job"])
