"""The dataset benchmark against Toolscore 1.10 (``benchmarks/datasets.py``), on a handful of
traces: its generator's exact call counts, the ``evaluate()`` loop it runs (one process and
two), the trace-by-trace comparison of scores with its greedy/other classification, and the
corpus replication. Toolscore 1.10 itself runs only where ``TOOLSCORE_110_PYTHON`` names its
environment's python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from _bench import REPO, load_benchmark
from toolscore.dataset import evaluate_dataset

bench = load_benchmark("datasets")
vs110 = load_benchmark("vs110")
CORPUS = REPO.parent / "shared" / "corpus"


def _dataset(tmp_path: Path, count: int, calls: int) -> tuple[Path, Path]:
    gold, traces = tmp_path / f"gold-{calls}.jsonl", tmp_path / f"traces-{calls}.jsonl"
    bench.generate(traces, gold, count, seed=5, min_calls=calls, max_calls=calls)
    return gold, traces


def _loop(python: str, gold: Path, traces: Path, scores: Path, processes: int) -> dict[str, float]:
    argv = [python, str(vs110.LOOP), "loop", str(gold), str(traces), str(scores)]
    done = subprocess.run(
        [*argv, "--processes", str(processes)], capture_output=True, text=True, check=True
    )
    timing: dict[str, float] = json.loads(done.stdout.splitlines()[0])
    return timing


def test_generator_writes_exact_call_counts(tmp_path: Path) -> None:
    _, traces = _dataset(tmp_path, 40, 7)
    lines = [json.loads(line) for line in traces.read_text().splitlines()]
    per_trace = Counter(line["trace_id"] for line in lines)
    assert len(per_trace) == 40 and set(per_trace.values()) == {7}
    assert any(line["is_error"] for line in lines)  # failures (and their retries) are in the 7
    for trace_id in per_trace:
        indexes = [line["index"] for line in lines if line["trace_id"] == trace_id]
        assert indexes == list(range(7))


def test_loops_and_eval_records_give_the_same_scores(tmp_path: Path) -> None:
    gold, traces = _dataset(tmp_path, 12, 5)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    timing = _loop(sys.executable, gold, traces, one, 1)
    assert timing["traces"] == 12 and timing["wall"] > 0
    assert _loop(sys.executable, gold, traces, two, 2)["traces"] == 12
    per_trace = tmp_path / "per-trace.jsonl"
    evaluate_dataset(str(gold), str(traces), engine="inline", per_trace=str(per_trace)).close()
    reference = vs110.read_scores(one)
    assert len(reference) == 12 and all(isinstance(v, float) for v in reference.values())
    for other in (two, per_trace):
        comparison = vs110.compare_scores(reference, vs110.read_scores(other), set())
        assert (comparison.total, comparison.equal) == (12, 12)
        assert comparison.greedy == comparison.other == []


def test_differences_are_classified_by_greedy_pairing(tmp_path: Path) -> None:
    def never() -> set[str]:
        raise AssertionError("asked for the greedy traces with no difference")

    same = vs110.compare_scores({"a": 0.5}, {"a": 0.5 + 1e-12}, never)
    assert (same.total, same.equal) == (1, 1)
    c = vs110.compare_scores(
        {"a": 0.5, "b": 0.7, "c": 0.1}, {"a": 0.5, "b": 0.8, "c": 0.2, "d": 0.3}, lambda: {"b"}
    )
    assert (c.total, c.equal) == (4, 1)
    assert c.greedy == [("b", 0.7, 0.8)]
    assert c.other == [("c", 0.1, 0.2), ("d", None, 0.3)]
    _, many = _dataset(tmp_path, 4, 120)  # 8 tools: some has more than 12 of 120 calls
    _, few = _dataset(tmp_path, 4, 12)
    assert len(vs110.greedy_traces(many)) == 4
    assert vs110.greedy_traces(few) == set()


def test_a_named_environment_without_toolscore_110_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"needs tool-scorer==1\.10\.0 and orjson"):
        vs110.python110(sys.executable)  # this package, not tool-scorer 1.10.0
    with pytest.raises(SystemExit, match="not runnable or missing one"):
        vs110.python110(str(tmp_path / "nowhere" / "python"))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="no shared corpus beside the repository")
def test_the_corpus_is_replicated_with_distinct_ids(tmp_path: Path) -> None:
    traces, gold = tmp_path / "tau.jsonl", tmp_path / "tau.gold.jsonl"
    count = bench.replicate(CORPUS, 2, traces, gold)
    ids = {json.loads(line)["trace_id"] for line in traces.read_text().splitlines()}
    golds = [json.loads(line)["trace_id"] for line in gold.read_text().splitlines()]
    assert count == len(ids) == len(golds) == 364 and set(golds) == ids
    assert {i.split("/", 1)[0] for i in ids} == {"copy000", "copy001"}


PYTHON_110 = os.environ.get("TOOLSCORE_110_PYTHON") or str(REPO / ".venv110" / "bin" / "python")
"""Toolscore 1.10's interpreter (with orjson): ``.ci/run`` makes ``.venv110``."""


def _has_110() -> bool:
    probe = [PYTHON_110, "-c", "import orjson, toolscore"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=60, check=False).returncode == 0
    except OSError:
        return False


def test_toolscore_110_scores_as_ours_except_where_it_pairs_greedily(tmp_path: Path) -> None:
    if not _has_110():  # (asked here, not while collecting: it starts an interpreter)
        pytest.skip("no Toolscore 1.10 environment with orjson")
    python = vs110.python110(PYTHON_110)
    for calls in (5, 30, 120):
        gold, traces = _dataset(tmp_path, 8, calls)
        theirs, ours = tmp_path / f"110-{calls}.jsonl", tmp_path / f"ours-{calls}.jsonl"
        _loop(python, gold, traces, theirs, 1)
        _loop(sys.executable, gold, traces, ours, 1)
        c = vs110.compare_scores(
            vs110.read_scores(theirs),
            vs110.read_scores(ours),
            lambda t=traces: vs110.greedy_traces(t),
        )
        assert c.total == 8 and c.other == []
