"""Datasets: per-trace evaluation, gold per trace, pass@k/pass^k, outputs, gates, bad input."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import cli_env, run_cli
from _datasets import dataset_in, generate_dataset
from toolscore import evaluate
from toolscore._exact import ExactAdder
from toolscore.dataset import (
    Aggregate,
    DatasetResult,
    PassCriterion,
    TraceRecord,
    aevaluate_dataset,
    evaluate_dataset,
    pass_at_k,
    pass_hat_k,
)
from toolscore.dataset.aggregate import ScoreSpill
from toolscore.dataset.worker import PROGRESS_EVERY

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return dataset_in(tmp_path_factory.mktemp("gen"), 120, seed=3)


def _by_trace(path: Path) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_bytes().splitlines():
        if line.strip():
            d = json.loads(line)
            groups[d["trace_id"]].append(d)
    return groups


def _gold(path: Path) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for line in path.read_bytes().splitlines():
        d = json.loads(line)
        out[d["trace_id"]] = d.get("expected", d.get("calls"))
    return out


def _asdict(record: TraceRecord) -> dict[str, Any]:
    import msgspec

    return msgspec.structs.asdict(record)


# -- the estimators ------------------------------------------------------------------------


def test_pass_k_by_hand() -> None:
    # n=4 trials, c=2 passes: pass@1 = 1/2, pass@2 = 1 - C(2,2)/C(4,2) = 5/6,
    # pass^2 = C(2,2)/C(4,2) = 1/6, pass^3 = 0, pass@3 = 1
    assert pass_at_k(4, 2, 1) == 0.5
    assert math.isclose(pass_at_k(4, 2, 2), 5 / 6)
    assert math.isclose(pass_hat_k(4, 2, 2), 1 / 6)
    assert pass_hat_k(4, 2, 3) == 0.0
    assert pass_at_k(4, 2, 3) == 1.0
    assert pass_hat_k(3, 3, 3) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_k_estimators_match_enumeration(nc: tuple[int, int]) -> None:
    # over every k-subset of the n trials: pass@k = P(some pass), pass^k = P(all pass)
    from itertools import combinations

    n, c = nc
    trials = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        subsets = list(combinations(trials, k))
        assert math.isclose(pass_at_k(n, c, k), sum(any(s) for s in subsets) / len(subsets))
        assert math.isclose(pass_hat_k(n, c, k), sum(all(s) for s in subsets) / len(subsets))


@given(
    st.integers(1, 400).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_k_estimators_are_the_exact_fractions_rounded(nck: tuple[int, int, int]) -> None:
    # as floats of the exact fractions, even where the binomials are far beyond a float's range
    from fractions import Fraction

    n, c, k = nck
    assert pass_at_k(n, c, k) == float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))
    assert pass_hat_k(n, c, k) == float(Fraction(math.comb(c, k), math.comb(n, k)))


@settings(max_examples=50)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=60), st.integers(1, 5))
def test_exact_sum_merges_in_any_grouping(values: list[float], cut: int) -> None:
    whole = ExactAdder()
    for v in values:
        whole.add(v)
    parts = [ExactAdder() for _ in range(cut)]
    for i, v in enumerate(values):
        parts[i % cut].add(v)
    merged = ExactAdder()
    for p in reversed(parts):
        merged.merge(p)
    assert whole.total() == merged.total()
    assert whole.total().value() == merged.total().value() == math.fsum(values)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1), min_size=1, max_size=300))
def test_score_spill_quantiles_are_exact(tmp_path_factory: Any, scores: list[float]) -> None:
    import statistics

    path = tmp_path_factory.mktemp("q") / "s.f64"
    spill = ScoreSpill(str(path))
    spill.BUFFER = 7  # several flushes
    for s in scores:
        spill.add(s)
    lo, hi = min(scores), max(scores)
    assert spill.quantile(0.5, lo, hi) == pytest.approx(statistics.median(scores), abs=1e-12)
    ordered = sorted(scores)
    pos = (len(scores) - 1) * 0.1
    below = math.floor(pos)
    want = ordered[below] + (ordered[min(below + 1, len(ordered) - 1)] - ordered[below]) * (
        pos - below
    )
    assert spill.quantile(0.1, lo, hi) == pytest.approx(want, abs=1e-12)


def test_aggregate_merge_equals_adding_all() -> None:
    records = [
        TraceRecord(
            trace_id=f"t{i}",
            task=f"k{i % 3}",
            score=i / 10,
            grade="A" if i > 8 else "F",
            passed=i > 8,
            calls=i,
            tools={"a": [i, i % 2, 0]},
            findings={"errors/failed_call": i % 2} if i % 2 else {},
            order=(0, i),
        )
        for i in range(11)
    ]
    whole = Aggregate()
    for r in records:
        whole.add(r)
    left, right = Aggregate(), Aggregate()
    for r in records[:4]:
        left.add(r)
    for r in records[4:]:
        right.add(r)
    right.merge(left)
    assert right == whole or (
        right.score_sum.total() == whole.score_sum.total()
        and right.tools == whole.tools
        and right.worst == whole.worst
        and right.examples == whole.examples
        and right.histogram == whole.histogram
    )


# -- the corpus ------------------------------------------------------------------------------


def test_corpus_scores_equal_evaluate_and_pass_hat_k_by_task(corpus: Path) -> None:
    traces = corpus / "tau-bench-airline.jsonl"
    gold_path = corpus / "tau-bench-airline.gold.jsonl"
    result = evaluate_dataset(str(gold_path), str(traces), engine="inline", part_bytes=100_000)
    gold = _gold(gold_path)
    groups = _by_trace(traces)
    records = {r.trace_id: r for r in result}
    scored = [r for r in records.values() if r.status == "ok"]
    assert len(groups) == 182 and len(scored) == len(gold) == 200
    for trace_id, expected_calls in gold.items():
        # a trial the benchmark ran without a call is a trace of zero calls, scored
        verdict = evaluate(expected_calls, groups.get(trace_id, [])).verdict()
        record = records[trace_id]
        assert abs(record.score - verdict.score) <= 1e-9, trace_id  # type: ignore[operator]
        assert (record.passed, record.violations) == (verdict.passed, verdict.violations.total)
    # gold without a trace is listed, and scored as an empty trial
    assert set(result.missing_trace) == set(gold) - set(groups)
    assert len(result.missing_trace) == 18
    assert all(records[t].calls == 0 for t in result.missing_trace)
    # asked for, it keeps a status of its own and is left out of the pass rates
    skipped = evaluate_dataset(str(gold_path), str(traces), engine="inline", missing_trace="skip")
    missing = {r.trace_id for r in skipped if r.status == "no_trace"}
    assert missing == set(gold) - set(groups)
    assert skipped.aggregate.statuses["no_trace"] == len(missing) == 18
    assert sum(t.n for t in skipped.tasks) == 182 < sum(t.n for t in result.tasks) == 200
    skipped.close()
    # pass^k by task, against the records and the estimator formula
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in scored:
        assert r.passed is not None
        by_task[r.task].append(r.passed)
    tasks = {t.task: t for t in result.tasks}
    assert set(tasks) == set(by_task) and len(tasks) == 50
    for name, outcome in tasks.items():
        n, c = len(by_task[name]), sum(by_task[name])
        assert (outcome.n, outcome.c) == (n, c)
        for k in range(1, n + 1):
            assert outcome.pass_hat[k - 1] == pytest.approx(
                math.comb(c, k) / math.comb(n, k), abs=1e-12
            )
    # the dataset's pass^k is the mean over tasks with >= k trials
    for k, count, at, hat in result.pass_k:
        eligible = [t for t in tasks.values() if t.n >= k]
        assert count == len(eligible)
        assert hat == pytest.approx(sum(t.pass_hat[k - 1] for t in eligible) / count)
        assert at == pytest.approx(sum(t.pass_at[k - 1] for t in eligible) / count)
    result.close()


def test_corpus_pool_equals_inline(corpus: Path) -> None:
    args = (str(corpus / "tau-bench-airline.gold.jsonl"), str(corpus / "tau-bench-airline.jsonl"))
    inline = evaluate_dataset(*args, engine="inline")
    pool = evaluate_dataset(*args, engine="local", workers=2, part_bytes=150_000)
    assert [_asdict(r) | {"order": None} for r in pool] == [
        _asdict(r) | {"order": None} for r in inline
    ]
    assert pool.summary() | {"elapsed_s": 0, "traces_per_s": 0, "engine": "", "bytes": 0} == (
        inline.summary() | {"elapsed_s": 0, "traces_per_s": 0, "engine": "", "bytes": 0}
    )


# -- inputs and gold ---------------------------------------------------------------------------


def test_byte_range_parts_give_the_records_of_one_part(generated: tuple[Path, Path]) -> None:
    gold, traces = generated
    one = evaluate_dataset(str(gold), str(traces), engine="inline")
    cut = evaluate_dataset(str(gold), str(traces), engine="inline", part_bytes=20_000)
    a = [_asdict(r) | {"order": None} for r in one]
    b = [_asdict(r) | {"order": None} for r in cut]
    assert a == b and len(a) == 120
    assert all(r["line"] is not None for r in b)


def test_byte_range_parts_give_the_records_of_one_part_with_malformed_lines(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    # a malformed line goes with the trace before it however the file is cut: into that
    # trace's record (an error naming the line), never a record of its own in the next range
    gold, traces = generated
    lines = traces.read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(
        b"".join(
            line + (b'{"trace_id": "x", "tool": \n' if i % 37 == 36 else b"")
            for i, line in enumerate(lines)
        )
    )
    one = evaluate_dataset(str(gold), str(broken), engine="inline")
    records = [_asdict(r) | {"order": None} for r in one]
    hit = {json.loads(line)["trace_id"] for i, line in enumerate(lines) if i % 37 == 36}
    assert len(records) == 120 and len(hit) > 60
    assert {r["trace_id"] for r in records if r["status"] == "error"} == hit
    for part_bytes in (20_000, 7_000, 3_001):
        cut = evaluate_dataset(str(gold), str(broken), engine="inline", part_bytes=part_bytes)
        assert [_asdict(r) | {"order": None} for r in cut] == records, part_bytes


@pytest.mark.parametrize("head", [b'{"trace_id": "x", "tool": \n', b"\x00\xff garbage\n\n"])
def test_a_broken_first_line_is_one_error_record_and_the_rest_is_evaluated(
    tmp_path: Path, generated: tuple[Path, Path], head: bytes
) -> None:
    # before, the file's trace key was read from its first line only: a malformed first line
    # made the whole file one trace, an error, and every gold entry "without a trace"
    gold, traces = generated
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(head + traces.read_bytes())
    reference = [
        _asdict(r) | {"order": None, "source": None, "line": None, "offset": None}
        for r in evaluate_dataset(str(gold), str(traces), engine="inline")
    ]
    for opts in ({}, {"part_bytes": 7_000}, {"trace_key": "trace_id"}, {"interleaved": True}):
        result = evaluate_dataset(str(gold), str(broken), engine="inline", **opts)  # type: ignore[arg-type]
        records = [_asdict(r) | {"order": None} for r in result]
        errors = [r for r in records if r["status"] == "error"]
        assert len(errors) == 1 and errors[0]["line"] == 1, opts
        assert errors[0]["error"].startswith(f"{broken}:1: "), opts
        rest = [
            r | {"source": None, "line": None, "offset": None}
            for r in records
            if r["status"] != "error"
        ]
        assert rest == reference, opts


def test_a_line_nested_too_deep_is_one_error_record(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    # the id reader raised RecursionError on it, and the whole part was "not evaluated"
    gold, traces = generated
    lines = traces.read_bytes().splitlines(keepends=True)
    victim = json.loads(lines[40])["trace_id"]
    deep = b'{"trace_id": "%s", "tool": "x", "args": ' % victim.encode()
    lines.insert(41, deep + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"".join(lines))
    for opts in ({}, {"part_bytes": 7_000}, {"interleaved": True}):
        result = evaluate_dataset(str(gold), str(path), engine="inline", **opts)  # type: ignore[arg-type]
        records = list(result)
        errors = [r for r in records if r.status == "error"]
        assert [r.trace_id for r in errors] == [victim], opts
        assert "nested deeper than" in (errors[0].error or ""), opts
        assert sum(r.status == "ok" for r in records) == 119, opts


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (b'{"trace_id": "a", "tool": "t"}\n{"trace_id": "a", "tool": "u"}\n', "trace_id"),
        (b'{"trace_id": "a", "tool": \n{"session_id": "a", "tool": "u"}\n', "session_id"),
        (b'\n\n{"run_id": "a"}\n', "run_id"),
        (b'{"tool": "t", "args": {}}\n{"tool": "u", "args": {}}\n', None),
        # one JSON document, whatever its inner lines hold
        (b'[\n{"trace_id": "a", "tool": "t"},\n{"trace_id": "a", "tool": "u"}\n]\n', None),
        (b'{\n"trace_id": "a",\n"calls": [\n{"trace_id": "a"}\n]\n}\n', None),
        (b'{"trace_id": "a", "calls": [\n  {"run_id": "a"},\n  {"run_id": "b"}\n]}\n', None),
        (b'[1, 2]\n{"trace_id": "a"}\n', None),
        # more lines that are not JSON than objects: not a multi-trace file
        (b"x\ny\n" + b'{"trace_id": "a"}\n', None),
        # the head ends inside a line: that piece is not counted
        (b'bad\n{"trace_id": "a"}\n{"trace_id": "a", "to', "trace_id"),
    ],
)
def test_trace_key_detection_passes_over_broken_records_only(text: bytes, key: str | None) -> None:
    from toolscore.dataset.inputs import detect_key

    assert detect_key(text, None) == key


def test_unusable_gold_lines_are_counted_listed_and_exit_2(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    # before, a keyed gold's bad lines were listed but the run exited 0; a bad first line
    # made the file one gold for every trace, which failed the whole run
    gold, traces = generated
    lines = gold.read_bytes().splitlines(keepends=True)
    broken_ids = [json.loads(lines[i])["trace_id"] for i in (0, 7)]
    lines[0] = lines[0][:40] + b"\n"  # not JSON, on the first line
    lines[7] = b'{"trace_id": "x"}\n'  # no expected calls
    extra = [b"{oops\n"] * 150 + [lines[3]]  # malformed past the 100 described; a duplicate
    bad = tmp_path / "gold.jsonl"
    bad.write_bytes(b"".join(lines + extra))
    result = evaluate_dataset(str(bad), str(traces), engine="inline")
    assert result.gold_problems == 2 + 150 + 1
    assert len(result.problems) == 100 and result.problems[0].startswith(f"{bad}:1: ")
    statuses = {r.trace_id: r.status for r in result}
    assert [statuses[t] for t in broken_ids] == ["no_gold", "no_gold"]
    assert sum(s == "ok" for s in statuses.values()) == 118
    assert result.summary()["gold_problems"] == 153
    out = run_cli("eval", str(bad), str(traces), "-o", str(tmp_path / "r.json"))
    assert out.returncode == 2, out.stderr
    assert "153 gold line(s) could not be used" in out.stderr
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["gold_problems"] == 153
    # a keyed gold of one entry is still keyed gold, trailing newline or not
    one = json.dumps({"trace_id": broken_ids[1], "expected": []}).encode()
    for text in (one + b"\n", one + b"\n\n"):
        bad.write_bytes(text)
        result = evaluate_dataset(str(bad), str(traces), engine="inline")
        assert result.gold_problems == 0
        assert sum(r.status == "no_gold" for r in result) == 119


def test_interleaved_lines_are_grouped(tmp_path: Path, generated: tuple[Path, Path]) -> None:
    gold, traces = generated
    groups: dict[str, list[bytes]] = defaultdict(list)
    for line in traces.read_bytes().splitlines(keepends=True):
        groups[json.loads(line)["trace_id"]].append(line)
    # one line of each trace in turn: every trace's lines interleave with the others', in order
    rounds = max(len(g) for g in groups.values())
    mixed = b"".join(g[i] for i in range(rounds) for g in groups.values() if i < len(g))
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(mixed)
    reference = {r.trace_id: r.score for r in evaluate_dataset(str(gold), str(traces))}
    for opts in ({}, {"interleaved": True}):
        result = evaluate_dataset(str(gold), str(path), engine="inline", **opts)  # type: ignore[arg-type]
        got = {r.trace_id: r.score for r in result}
        assert got == reference
        assert result.input_errors == 0


def test_the_records_of_an_interleaved_file_reach_the_driver_a_batch_at_a_time(
    tmp_path: Path, generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file whose lines interleave is one part; its records came back in one list, so the
    # driver's memory grew with its traces (483 MB at 100k traces). Now the worker spools
    # them to the work directory every SPOOL_RECORDS and the driver reads them in batches
    from toolscore.dataset import worker

    gold, traces = generated
    groups: dict[str, list[bytes]] = defaultdict(list)
    for line in traces.read_bytes().splitlines(keepends=True):
        groups[json.loads(line)["trace_id"]].append(line)
    rounds = max(len(g) for g in groups.values())
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(g[i] for i in range(rounds) for g in groups.values() if i < len(g)))
    whole = [_asdict(r) for r in evaluate_dataset(str(gold), str(path), engine="inline")]
    writes: list[int] = []
    spool = worker.Records.spill

    def spill(self: Any) -> None:
        writes.append(1)
        spool(self)

    monkeypatch.setattr(worker, "SPOOL_RECORDS", 7)
    monkeypatch.setattr(worker.Records, "spill", spill)
    work = tmp_path / "work"
    work.mkdir()
    result = evaluate_dataset(str(gold), str(path), engine="inline", workdir=str(work))
    assert writes == [1]
    assert [_asdict(r) for r in result] == whole and len(whole) == 120
    (run,) = work.iterdir()
    assert not [p for p in run.iterdir() if p.name.startswith("records-")]  # read, removed
    result.close()


def _mixed_with_faults(traces: Path, seed: int) -> bytes:
    """The lines of each 7 consecutive traces in turn, with blank lines, malformed lines
    (which go with the trace of the line with an id before them) and lines without an id."""
    import random

    rng = random.Random(seed)
    lines = traces.read_bytes().splitlines(keepends=True)
    runs: list[list[bytes]] = []
    for line in lines:
        trace_id = json.loads(line)["trace_id"]
        if not runs or json.loads(runs[-1][0])["trace_id"] != trace_id:
            runs.append([])
        runs[-1].append(line)
    out: list[bytes] = [b'{"trace_id": "x", "tool": \n']  # malformed, before any id
    for start in range(0, len(runs), 7):
        window = runs[start : start + 7]
        for i in range(max(map(len, window))):
            for run in window:
                if i < len(run):
                    out.append(run[i])
                    roll = rng.random()
                    if roll < 0.03:
                        out.append(b'{"trace_id": "y", "tool": broken\n')
                    elif roll < 0.04:
                        out.append(b"\n")
                    elif roll < 0.05:
                        out.append(b'{"tool": "no_id"}\n')
    return b"".join(out)


@pytest.mark.parametrize("seed", [1, 2])
def test_an_interleaved_file_is_grouped_on_all_cores(
    tmp_path: Path, generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # a large file whose lines interleave was grouped by one worker; its byte ranges now
    # scatter its lines into partitions by trace id, which other parts group: the records
    # are the one worker's (malformed lines at a range's start go with a trace from before)
    from toolscore.dataset import _plan, inputs

    gold, traces = generated
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_mixed_with_faults(traces, seed))

    def keyed(result: Any) -> dict[Any, dict[str, Any]]:
        out = {}
        for r in result:
            row = _asdict(r) | {"order": None}
            out[r.trace_id or (r.line, r.offset)] = row
        return out

    whole = keyed(evaluate_dataset(str(gold), str(path), engine="inline"))
    errors = [k for k, r in whole.items() if r["status"] == "error"]
    assert len(whole) > 125 and len(errors) > 10
    monkeypatch.setattr(_plan, "GATHER_BYTES", len(path.read_bytes()) // 3)
    plan = inputs.plan_parts(
        inputs.list_inputs(str(path), {}),
        key=None,
        task_key=None,
        force_interleaved=False,
        part_bytes=3_001,
        unpack_dir=str(tmp_path),
    )
    assert len(plan) > 100 and len({p.scatter for p in plan}) == 1 and plan[0].scatter > 2
    for engine, workers, part_bytes in (("inline", None, 3_001), ("local", 2, 7_000)):
        work = tmp_path / f"work-{engine}"
        work.mkdir()
        progress: list[tuple[int, int]] = []

        def seen(_: int, __: int | None, done: int, total: int, into: Any = progress) -> None:
            into.append((done, total))

        result = evaluate_dataset(
            str(gold),
            str(path),
            engine=engine,
            workers=workers,
            part_bytes=part_bytes,
            workdir=str(work),
            on_progress=seen,
        )
        assert keyed(result) == whole, (engine, part_bytes)
        # the scatter ranges count half of the file's bytes, the gather parts the other half
        done = [d for d, _ in progress]
        total = progress[-1][1]
        assert done == sorted(done) and total - len(progress) <= done[-1] <= total
        assert any(abs(d - total // 2) <= len(progress) for d in done)
        (run,) = work.iterdir()
        assert not [p for p in run.iterdir() if p.name.startswith("scatter-")]
        result.close()


def test_a_lost_scatter_range_falls_back_to_grouping_the_file_whole(
    tmp_path: Path, generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # without one range's lines the partitions would give traces short of lines: the file
    # is grouped whole instead, its traces are all scored, and the loss is reported
    from toolscore.dataset import _plan, _readers

    gold, traces = generated
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_mixed_with_faults(traces, 3))
    whole = [_asdict(r) | {"order": None} for r in evaluate_dataset(str(gold), str(path))]
    scored = {r["trace_id"]: r for r in whole if r["trace_id"]}
    unplaced = sorted((r["line"], r["error"]) for r in whole if not r["trace_id"])
    assert len(unplaced) > 5  # lines without an id, and a malformed one before any
    monkeypatch.setattr(_plan, "GATHER_BYTES", len(path.read_bytes()) // 3)
    write = _readers.write_frame
    for fail_at in (500, 1):  # one range lost; every range lost
        calls = [0]

        def failing(*args: Any, calls: list[int] = calls, fail_at: int = fail_at) -> None:
            calls[0] += 1
            if calls[0] == fail_at or fail_at == 1:  # (1: every call)
                raise OSError("disk full")
            write(*args)

        monkeypatch.setattr(_readers, "write_frame", failing)
        result = evaluate_dataset(str(gold), str(path), engine="inline", part_bytes=7_000)
        records = [_asdict(r) | {"order": None} for r in result]
        lost = [r for r in records if "not evaluated: OSError: disk full" in (r["error"] or "")]
        assert (len(lost) == 1) if fail_at == 500 else (len(lost) > 50), fail_at
        assert {r["trace_id"]: r for r in records if r["trace_id"]} == scored, fail_at
        # each line's error once, whether its range or the whole file's grouping gave it
        placed = sorted(
            (r["line"], r["error"])
            for r in records
            if not r["trace_id"] and "not evaluated" not in r["error"]
        )
        assert placed == unplaced, fail_at
        assert any("not evaluated" in p for p in result.problems)


def test_the_ranges_after_a_lost_range_keep_their_line_numbers(
    generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the driver numbers a range's lines from the lines of the ranges before it; a lost
    # range gave none, so every record after it had line numbers too small
    from toolscore.dataset import _readers

    gold, traces = generated
    whole = {r.trace_id: (r.line, r.offset) for r in evaluate_dataset(str(gold), str(traces))}
    read = _readers.contiguous_traces
    starts: list[int] = []

    def failing(f: Any, ids: Any, start: int = 0, end: int | None = None) -> Any:
        starts.append(start)
        if len(starts) == 3:  # the third range
            raise OSError("disk full")
        return read(f, ids, start, end)

    monkeypatch.setattr(_readers, "contiguous_traces", failing)
    result = evaluate_dataset(
        str(gold), str(traces), engine="inline", part_bytes=20_000, missing_trace="skip"
    )
    got = {r.trace_id: (r.line, r.offset) for r in result if r.status == "ok"}
    assert len(starts) > 5 and 60 < len(got) < 120
    assert got == {t: whole[t] for t in got}
    # the reason names the line that raised it (a worker's traceback is not shown)
    assert any(
        "not evaluated: OSError: disk full (at test_dataset.py:" in p for p in result.problems
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([b"a", b"bb", b"\n", b"\n\n", b"ccc\n"]), max_size=30),
    st.integers(0, 200),
    st.integers(0, 200),
)
def test_count_line_starts(pieces: list[bytes], a: int, b: int) -> None:
    import io

    from toolscore.dataset.inputs import count_line_starts, next_line

    data = b"".join(pieces)
    begin = next_line(io.BytesIO(data), min(a, len(data)))
    end = max(begin, min(b, len(data)))
    starts = [p for p in range(len(data)) if p == 0 or data[p - 1 : p] == b"\n"]
    f = io.BytesIO(data)
    f.seek(begin)
    assert count_line_starts(f, begin, end) == sum(begin <= p < end for p in starts)


def test_records_spool_gives_them_back_in_order(tmp_path: Path) -> None:
    from toolscore.dataset.worker import SPOOL_RECORDS, PartResult, Records

    records = Records(str(tmp_path))
    records.spill()
    made = [
        TraceRecord(trace_id=f"t{i}", task="", source="s") for i in range(2 * SPOOL_RECORDS + 5)
    ]
    for record in made:
        records.append(record)
    records.close()
    assert len(records) == len(made) and len(records.held) == 5
    assert records.path is not None and records.last_id == made[-1].trace_id
    result = PartResult(0, records.held, [0], 0, records.path)
    assert [len(b) for b in result.batches()] == [SPOOL_RECORDS, SPOOL_RECORDS, 5]
    assert list(tmp_path.iterdir()) == []
    # without a directory (a Dask cluster) nothing is written
    kept = Records(None)
    kept.spill()
    for record in made:
        kept.append(record)
    assert kept.path is None and len(kept.held) == len(made)


def test_spilled_grouping_equals_in_memory(tmp_path: Path, generated: tuple[Path, Path]) -> None:
    from toolscore.dataset.inputs import Grouper

    _, traces = generated
    lines = traces.read_bytes().splitlines(keepends=True)
    small, big = Grouper(budget=10_000, directory=str(tmp_path)), Grouper()
    for i, line in enumerate(lines[::-1]):
        trace_id = json.loads(line)["trace_id"]
        small.add(trace_id, None, line, i + 1, i)
        big.add(trace_id, None, line, i + 1, i)
    a = {t.trace_id: (t.lines, t.linenos) for t in small.traces()}
    b = {t.trace_id: (t.lines, t.linenos) for t in big.traces()}
    assert a == b and len(a) == 120
    assert not list(tmp_path.iterdir())  # the spill is removed


def test_grouping_spills_to_the_system_temp_when_its_directory_is_elsewhere(
    tmp_path: Path, generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Dask worker on another machine is handed the driver's work directory, which it has not
    import tempfile

    from toolscore.dataset.inputs import Grouper

    _, traces = generated
    system = tmp_path / "system"
    system.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system))
    lines = traces.read_bytes().splitlines(keepends=True)
    grouper = Grouper(budget=10_000, directory=str(tmp_path / "the-drivers-work-dir"))
    for i, line in enumerate(lines[::-1]):
        grouper.add(json.loads(line)["trace_id"], None, line, i + 1, i)
    assert [p.name[:15] for p in system.iterdir()] == ["toolscore-group"]  # it spilled there
    grouped = {t.trace_id: len(t.lines) for t in grouper.traces()}
    assert len(grouped) == 120 and sum(grouped.values()) == len(lines)
    assert not list(system.iterdir()) and not (tmp_path / "the-drivers-work-dir").exists()


def test_directory_of_traces_with_directory_of_gold(tmp_path: Path) -> None:
    traces, gold = tmp_path / "traces", tmp_path / "gold"
    (traces / "sub").mkdir(parents=True)
    gold.mkdir()
    (gold / "sub").mkdir()
    calls = [{"tool": "search", "args": {"q": "x"}}, {"tool": "book", "args": {"id": 1}}]
    (traces / "a.json").write_text(json.dumps(calls))
    (traces / "sub" / "b.jsonl").write_text("\n".join(json.dumps(c) for c in calls[:1]) + "\n")
    (traces / "c.json").write_text(json.dumps(calls))  # no gold
    (gold / "a.json").write_text(json.dumps(calls))
    (gold / "sub" / "b.json").write_text(json.dumps(calls))
    (gold / "d.json").write_text(json.dumps(calls))  # no trace
    result = evaluate_dataset(str(gold), str(traces), engine="inline")
    records = {r.trace_id: r for r in result}
    assert records["a"].score == evaluate(calls, calls).score
    assert records["sub/b"].score == pytest.approx(evaluate(calls, calls[:1]).score)
    assert records["c"].status == "no_gold" and records["c"].score is None
    assert records["c"].calls == 2  # its calls were still checked
    assert records["d"].status == "ok" and records["d"].calls == 0  # scored as an empty trial
    assert records["d"].score == evaluate(calls, []).score
    assert result.missing_gold == ["c"] and result.missing_trace == ["d"]
    # a glob, and one gold for all
    one = tmp_path / "one.json"
    one.write_text(json.dumps(calls))
    globbed = evaluate_dataset(str(one), str(traces / "*.json"), engine="inline")
    assert sorted(r.trace_id for r in globbed) == ["a", "c"]


def test_keyed_gold_with_calls_and_session_ids(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    gold = tmp_path / "g.jsonl"
    traces.write_text(
        "".join(
            json.dumps({"session_id": s, "tool": t, "args": {}}) + "\n"
            for s, t in [("s1", "a"), ("s1", "b"), ("s2", "a")]
        )
    )
    gold.write_text(
        json.dumps({"session_id": "s1", "calls": [{"tool": "a"}, {"tool": "b"}]})
        + "\n"
        + json.dumps({"session_id": "s2", "calls": [{"tool": "b"}]})
        + "\n"
    )
    result = evaluate_dataset(str(gold), str(traces), engine="inline")
    scores = {r.trace_id: r.score for r in result}
    assert (
        scores["s1"]
        == evaluate([{"tool": "a"}, {"tool": "b"}], [{"tool": "a"}, {"tool": "b"}]).score
    )
    assert scores["s2"] == evaluate([{"tool": "b"}], [{"tool": "a"}]).score


@pytest.mark.parametrize("spool", [None, 2])
def test_otlp_export_one_trace_per_trace_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spool: int | None
) -> None:
    # (with spool: the export's records go to the driver two at a time, through the spool)
    from toolscore.dataset import worker

    writes: list[int] = []
    if spool is not None:
        write = worker.write_records

        def spooled(f: Any, records: list[Any]) -> None:
            writes.append(len(records))
            write(f, records)

        monkeypatch.setattr(worker, "SPOOL_RECORDS", spool)
        monkeypatch.setattr(worker, "write_records", spooled)

    def span(trace: str, name: str, i: int) -> dict[str, Any]:
        return {
            "traceId": trace,
            "spanId": f"{i:016x}",
            "name": f"execute_tool {name}",
            "startTimeUnixNano": str(1_000 + i),
            "endTimeUnixNano": str(2_000 + i),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.name", "value": {"stringValue": name}},
            ],
        }

    spans = [span("aa" * 16, "search", 1), span("bb" * 16, "book", 2), span("aa" * 16, "book", 3)]
    spans += [span(f"{i:032x}", "pay", 10 + i) for i in range(5)]
    export = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export, indent=1))
    gold = tmp_path / "g.json"
    gold.write_text(json.dumps([{"tool": "search"}, {"tool": "book"}]))
    result = evaluate_dataset(str(gold), str(path), engine="inline")
    records = {r.trace_id: r for r in result}
    assert set(records) == {"aa" * 16, "bb" * 16, *(f"{i:032x}" for i in range(5))}
    assert records["aa" * 16].calls == 2 and records["bb" * 16].calls == 1
    assert writes == ([] if spool is None else [2, 2, 2])  # (the seventh stays in memory)
    assert records["aa" * 16].score == pytest.approx(
        evaluate(
            [{"tool": "search"}, {"tool": "book"}], [{"tool": "search"}, {"tool": "book"}]
        ).score
    )


def test_task_key_and_task_regex(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_text(
        "".join(
            json.dumps({"trace_id": f"run-{i}", "task": f"T{i % 2}", "tool": "a"}) + "\n"
            for i in range(4)
        )
    )
    gold = tmp_path / "g.json"
    gold.write_text(json.dumps([{"tool": "a"}]))
    by_key = evaluate_dataset(str(gold), str(traces), task_key="task", engine="inline")
    assert sorted((t.task, t.n, t.c) for t in by_key.tasks) == [("T0", 2, 2), ("T1", 2, 2)]
    by_regex = evaluate_dataset(str(gold), str(traces), task_regex=r"^(run)-", engine="inline")
    assert [(t.task, t.n) for t in by_regex.tasks] == [("run", 4)]
    strict = PassCriterion(min_score=1.01)
    failing = evaluate_dataset(str(gold), str(traces), criterion=strict, engine="inline")
    assert failing.pass_rate == 0.0


# -- bad input -------------------------------------------------------------------------------


def test_broken_trace_is_one_error_record_and_the_rest_is_evaluated(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    gold, traces = generated
    lines = traces.read_bytes().splitlines(keepends=True)
    broken_at = 300  # 1-based line number of the broken line
    victim = json.loads(lines[broken_at - 1])["trace_id"]
    lines[broken_at - 1] = b'{"trace_id": "' + victim.encode() + b'", "tool": \n'
    lines.insert(500, b"not json at all\n")
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"".join(lines))
    result = evaluate_dataset(str(gold), str(path), engine="inline", part_bytes=30_000)
    records = list(result)
    errors = [r for r in records if r.status == "error"]
    assert len([r for r in records if r.status != "no_trace"]) == 120
    assert result.input_errors == len(errors) == 2
    by_id = {r.trace_id: r for r in errors}
    assert by_id[victim].error is not None and f"{path}:{broken_at}:" in by_id[victim].error
    assert by_id[victim].score is not None  # the calls around the bad line were evaluated
    assert sum(r.status == "ok" for r in records) == 118


def test_killed_worker_is_reported_and_its_part_retried(generated: tuple[Path, Path]) -> None:
    gold, traces = generated
    reference = {r.trace_id: r.score for r in evaluate_dataset(str(gold), str(traces))}
    problems: list[str] = []
    killed: list[int] = []

    def kill_one(records: int, expected: int | None, done: int, total: int) -> None:
        if killed:
            return
        me = os.getpid()
        children = set()
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                children.add((int(pid), int(stat[1])))
        mine = {pid for pid, ppid in children if ppid == me}
        workers = sorted(pid for pid, ppid in children if ppid in mine)
        if workers:
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])

    result = evaluate_dataset(
        str(gold),
        str(traces),
        engine="local",
        workers=2,
        part_bytes=8_000,
        on_progress=kill_one,
        on_problem=problems.append,
    )
    assert killed
    assert any("worker process died" in p for p in problems), problems
    assert {r.trace_id: r.score for r in result} == reference


@pytest.mark.anyio
async def test_async_twin(generated: tuple[Path, Path]) -> None:
    gold, traces = generated
    result = await aevaluate_dataset(str(gold), str(traces), engine="inline")
    assert result.traces == 120 and result.mean is not None


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_dataset_reports_gates_and_per_trace(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    gold, traces = generated
    out, md, page, per = (tmp_path / n for n in ("r.json", "r.md", "r.html", "p.jsonl"))
    proc = run_cli(
        "eval", str(gold), str(traces), "-o", str(out), "--markdown", str(md), "--html",
        str(page), "--per-trace", str(per), "--workers", "2",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Pass rate" in proc.stdout and "pass^4" in proc.stdout
    report = json.loads(out.read_text())
    assert report["summary"]["traces"] == 120
    assert len(report["tasks"]) == 30 and report["tasks"][0]["trials"] == 4
    rows = [json.loads(line) for line in per.read_text().splitlines()]
    assert len(rows) == 120 and {"trace_id", "score", "passed", "tools"} <= set(rows[0])
    assert report["summary"]["median_score"] is not None
    html_text = page.read_text()
    assert html_text.count("<svg") == 2 and "http://" not in html_text.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "| Mean score |" in md.read_text()
    # gates
    fail = run_cli("eval", str(gold), str(traces), "-o", str(out), "--min-pass-rate", "99%")
    assert fail.returncode == 1 and "--min-pass-rate" in fail.stderr
    fail = run_cli("eval", str(gold), str(traces), "-o", str(out), "--fail-under", "A")
    assert fail.returncode == 1 and "mean score" in fail.stderr
    ok = run_cli("eval", str(gold), str(traces), "-o", str(out), "--min-pass-rate", "0")
    assert ok.returncode == 0, ok.stderr
    bad = run_cli("eval", str(gold), str(traces), "-o", str(out), "--min-pass-rate", "x")
    assert bad.returncode == 2


def test_cli_broken_trace_exits_2_and_names_the_line(tmp_path: Path) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_text(
        '{"trace_id": "a", "tool": "x"}\n{"trace_id": "a", "tool": \n'
        '{"trace_id": "b", "tool": "x"}\n'
    )
    gold = tmp_path / "g.json"
    gold.write_text('[{"tool": "x"}]')
    out = tmp_path / "r.json"
    proc = run_cli("eval", str(gold), str(traces), "--trace-key", "trace_id", "-o", str(out))
    assert proc.returncode == 2
    assert f"{traces}:2" in proc.stderr
    assert json.loads(out.read_text())["summary"]["traces"] == 2


def test_cli_reads_a_file_of_many_traces_trace_by_trace(tmp_path: Path, corpus: Path) -> None:
    # a file of many traces with one gold file is read trace by trace, each against the gold,
    # never as one trace
    gold = tmp_path / "g.json"
    gold.write_text(json.dumps([{"tool": "get_user_details"}]))
    out = tmp_path / "o.json"
    proc = run_cli("eval", str(gold), str(corpus / "toolbench.jsonl"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(out.read_text())["summary"]
    assert summary["traces"] == 15
    assert summary["calls"] == 328


def test_human_reports_are_redacted(tmp_path: Path) -> None:
    secret = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    traces = tmp_path / "t.jsonl"
    traces.write_text(
        json.dumps({"trace_id": f"leak-{secret}", "tool": f"tool {secret}", "is_error": True})
        + "\n"
    )
    gold = tmp_path / "g.json"
    gold.write_text('[{"tool": "x"}]')
    out, md, page = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.html"
    proc = run_cli(
        "eval", str(gold), str(traces), "--trace-key", "trace_id", "-o", str(out),
        "--markdown", str(md), "--html", str(page),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for text in (proc.stdout, proc.stderr, md.read_text(), page.read_text()):
        assert secret not in text
    # ids and tool names are not arguments: the dataset report redacts them too
    assert secret not in out.read_text() and "[REDACTED openai_api_key" in out.read_text()


def test_parquet_per_trace(tmp_path: Path, generated: tuple[Path, Path]) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    gold, traces = generated
    path = tmp_path / "p.parquet"
    result = evaluate_dataset(str(gold), str(traces), engine="inline", per_trace=str(path))
    table = pq.read_table(path)
    assert table.num_rows == 120
    assert table.column("score").to_pylist() == [r.score for r in result]


def test_keyed_gold_index_is_rebuilt_where_it_is_missing(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    # a Dask worker on another machine does not see the driver's index: it builds its own
    import dataclasses

    from toolscore.dataset.gold import GoldLookup, build_gold

    gold, _ = generated
    spec = build_gold(str(gold), str(tmp_path), key=None)
    elsewhere = dataclasses.replace(spec, path=str(tmp_path / "absent" / "gold.sqlite"))
    here, there = GoldLookup(spec), GoldLookup(elsewhere)
    trace_id = "model-a/task000003/trial1"
    assert there.get(trace_id, None) == here.get(trace_id, None) is not None
    assert there.get("no such trace", None) is None


def test_keyed_gold_on_disk_equals_gold_in_memory(
    tmp_path: Path, generated: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a small keyed gold is held in a worker's memory, a large one looked up in its index:
    # the same gold either way, trace by trace, and the same records and missing ids
    from toolscore.dataset import gold as gold_module
    from toolscore.dataset.gold import GoldLookup, build_gold

    gold, traces = generated
    spec = build_gold(str(gold), str(tmp_path), key=None)
    in_memory = GoldLookup(spec)
    assert in_memory.in_memory
    monkeypatch.setattr(gold_module, "GOLD_IN_MEMORY", spec.body_bytes - 1)
    on_disk = GoldLookup(spec)
    assert not on_disk.in_memory
    for trace_id in [*_gold(gold), "no such trace"]:
        assert on_disk.get(trace_id, None) == in_memory.get(trace_id, None)

    # a gold entry without a trace, on both paths
    extra = tmp_path / "extra.jsonl"
    extra.write_bytes(gold.read_bytes() + b'{"trace_id": "unused", "expected": []}\n')
    disk = evaluate_dataset(str(extra), str(traces), engine="inline")
    monkeypatch.setattr(gold_module, "GOLD_IN_MEMORY", 1 << 30)
    memory = evaluate_dataset(str(extra), str(traces), engine="inline")
    assert [_asdict(r) for r in disk] == [_asdict(r) for r in memory]
    assert len(list(memory)) == 121
    assert disk.missing_trace == memory.missing_trace == ["unused"]


def test_bundled_dataset_example() -> None:
    example = REPO / "examples" / "dataset"
    result = evaluate_dataset(
        str(example / "gold.jsonl"), str(example / "traces.jsonl"), engine="inline"
    )
    tasks = {t.task: (t.n, t.c) for t in result.tasks}
    # refund/trial2 skips the refund (recall 0.5), rebook/trial2 retries a failed search (B)
    assert tasks == {
        "agent-v2/refund": (3, 2),
        "agent-v2/rebook": (3, 2),
        "agent-v2/lookup": (3, 3),
    }
    # by hand: pass^2 = C(c,2)/C(3,2) per task = 1/3, 1/3, 1 -> mean 5/9; pass^3 = (0+0+1)/3;
    # pass@1 = (2/3 + 2/3 + 1)/3 = 7/9; pass@2 = 1 for every task
    rows = {k: (at, hat) for k, _, at, hat in result.pass_k}
    assert rows[1] == (pytest.approx(7 / 9), pytest.approx(7 / 9))
    assert rows[2] == (pytest.approx(1.0), pytest.approx(5 / 9))
    assert rows[3] == (pytest.approx(1.0), pytest.approx(1 / 3))


def test_cli_refuses_an_output_that_is_an_input(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    gold, traces = generated
    before = traces.read_bytes()
    proc = run_cli("eval", str(gold), str(traces), "--per-trace", str(traces))
    assert proc.returncode == 2 and "--per-trace" in proc.stderr
    assert traces.read_bytes() == before


def test_gold_directory_with_base_names_and_a_default(tmp_path: Path) -> None:
    """``gold_by_base_name`` and ``default_gold`` (the GitHub Action's gold): a nested trace
    takes the gold named after its base name, a trace with none takes the default, and the
    default is read before anything runs."""
    from toolscore.errors import GoldFileError

    calls = [{"tool": "search", "args": {"q": "x"}}, {"tool": "fetch", "args": {"u": 1}}]
    gold, traces = tmp_path / "gold", tmp_path / "traces"
    (traces / "team").mkdir(parents=True)
    gold.mkdir()
    (gold / "c.json").write_text(json.dumps(calls), encoding="utf-8")
    (gold / "unused.json").write_text(json.dumps(calls), encoding="utf-8")
    (tmp_path / "default.json").write_text(json.dumps(calls[:1]), encoding="utf-8")
    for name in ("team/c.jsonl", "d.jsonl"):
        (traces / name).write_text("".join(json.dumps(c) + "\n" for c in calls), "utf-8")

    plain = evaluate_dataset(str(gold), str(traces), engine="inline", missing_trace="skip")
    assert {r.trace_id: r.status for r in plain} == {
        "d": "no_gold", "team/c": "no_gold", "c": "no_trace", "unused": "no_trace"
    }  # fmt: skip
    matched = evaluate_dataset(
        str(gold),
        str(traces),
        engine="inline",
        gold_by_base_name=True,
        default_gold=str(tmp_path / "default.json"),
        missing_trace="skip",
    )
    records = {r.trace_id: r for r in matched}
    assert {t: r.status for t, r in records.items()} == {
        "d": "ok", "team/c": "ok", "unused": "no_trace"
    }  # fmt: skip
    assert records["team/c"].expected_calls == 2 and records["d"].expected_calls == 1
    with pytest.raises(GoldFileError):
        evaluate_dataset(
            str(gold), str(traces), engine="inline", default_gold=str(tmp_path / "nope.json")
        )


def test_a_rule_file_with_hard_rules_applies_to_every_trace(tmp_path: Path) -> None:
    # the CLI's --forbidden takes a rule object (forbidden and hard rules) for a dataset as for
    # one trace; each trace's findings are those evaluate() gives that trace alone
    example = REPO / "examples" / "dataset"
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            {"forbidden": [{"tool": "refund"}], "counts": [{"tool": "search_flights", "max": 1}]}
        )
    )
    per_trace = tmp_path / "per-trace.jsonl"
    proc = run_cli(
        "eval",
        str(example / "gold.jsonl"),
        str(example / "traces.jsonl"),
        "--forbidden",
        str(rules),
        "-o",
        str(tmp_path / "out.json"),
        "--per-trace",
        str(per_trace),
    )
    assert proc.returncode == 0, proc.stderr
    records = {r["trace_id"]: r for r in map(json.loads, per_trace.read_text().splitlines())}
    assert all(r["status"] == "ok" and r["error"] is None for r in records.values())
    gold = _gold(example / "gold.jsonl")
    for trace_id, calls in _by_trace(example / "traces.jsonl").items():
        alone = evaluate(gold[trace_id], calls, forbidden=str(rules))
        kinds: dict[str, int] = defaultdict(int)
        for finding in alone.findings:
            kinds[f"{finding.check}/{finding.kind}"] += 1
        assert records[trace_id]["findings"] == dict(kinds), trace_id
    assert records["agent-v2/rebook/trial2"]["findings"]["rules/too_many_calls"] == 1


def test_a_bad_rule_file_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    # the rule file's problem is the rule file's (its name and line, exit 2), said once; not
    # an error record per trace blamed on the traces file
    example = REPO / "examples" / "dataset"
    rules = tmp_path / "rules.json"
    rules.write_text('{\n  "forbidden": [{"tool": 5}]\n}\n')
    out = tmp_path / "out.json"
    args = [str(example / "gold.jsonl"), str(example / "traces.jsonl"), "-o", str(out)]
    proc = run_cli("eval", *args, "--forbidden", str(rules))
    assert proc.returncode == 2
    assert f"{rules}:2: forbidden: forbidden rule 0 needs a non-empty 'tool'" in proc.stderr
    assert "traces.jsonl" not in proc.stderr and not out.exists()
    proc = run_cli("eval", *args, "--forbidden", str(tmp_path / "none.json"))
    assert proc.returncode == 2
    assert f"{tmp_path / 'none.json'}: cannot read the rule file: file not found" in proc.stderr


def test_a_rule_file_naming_a_schema_file(tmp_path: Path) -> None:
    # "schemas": "tools.json" is read next to the rule file, for every trace of the dataset
    example = REPO / "examples" / "dataset"
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    schema = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    tools = [{"name": "search_flights", "input_schema": schema}]
    (rules_dir / "tools.json").write_text(json.dumps(tools))
    rules = rules_dir / "rules.json"
    rules.write_text(json.dumps({"schemas": "tools.json"}))
    result = evaluate_dataset(
        str(example / "gold.jsonl"), str(example / "traces.jsonl"), forbidden=str(rules)
    )
    gold = _gold(example / "gold.jsonl")
    found = 0
    for record in result:
        calls = _by_trace(example / "traces.jsonl")[record.trace_id]
        alone = evaluate(gold[record.trace_id], calls, forbidden=str(rules))
        kinds: dict[str, int] = defaultdict(int)
        for finding in alone.findings:
            kinds[f"{finding.check}/{finding.kind}"] += 1
        assert record.findings == dict(kinds), record.trace_id
        found += record.findings.get("rules/schema_violation", 0)
    assert found > 0


_LINE = st.one_of(
    st.tuples(st.just("id"), st.integers(0, 5), st.text("ab{}", max_size=30)),
    st.tuples(st.sampled_from(["blank", "bad", "noid"])),
)


def _file_of(items: list[tuple[Any, ...]]) -> bytes:
    out = []
    for item in items:
        if item[0] == "id":
            out.append(json.dumps({"trace_id": f"t{item[1]}", "pad": item[2]}).encode() + b"\n")
        else:
            out.append({"blank": b"  \n", "bad": b"{oops\n", "noid": b'{"x": 1}\n'}[item[0]])
    return b"".join(out)


def _events(f: Any, start: int, end: int | None, base: int, first_line: int) -> tuple[Any, int]:
    """What contiguous_traces reads, with the file's offsets and line numbers."""
    from toolscore.dataset.inputs import IdReader, contiguous_traces

    out: list[Any] = []
    lines = 0
    for got in contiguous_traces(f, IdReader("trace_id", None), start, end):
        if isinstance(got, tuple):
            if got[2]:
                out.append((got[0] + first_line, got[1] + base, got[2]))
            else:
                lines = got[0]
            continue
        numbers = [n + first_line for n in got.linenos]
        out.append((got.trace_id, b"".join(got.lines), numbers, got.offset + base))
    return out, lines


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=60), st.integers(8, 300))
def test_shipped_ranges_read_what_byte_ranges_read(items: list[Any], part_bytes: int) -> None:
    # the file read in byte ranges, or in ranges sent with their bytes (cut at trace
    # boundaries, read whole where they land), gives the traces, line errors, offsets and
    # line numbers of the file read whole
    import io
    import tempfile

    from toolscore.dataset.inputs import Input, ship_parts

    data = _file_of(items)
    whole, _ = _events(io.BytesIO(data), 0, None, 0, 0)
    in_place: list[Any] = []
    line = 0
    for start in range(0, len(data), part_bytes):
        end = min(start + part_bytes, len(data))
        got, lines = _events(io.BytesIO(data), start, end, 0, line)
        in_place += got
        line += lines
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "copy.jsonl")
        with open(path, "wb") as f:
            f.write(data)
        item = Input(url="x.jsonl.gz", size=len(data), name="x", local=path)
        parts = ship_parts(item, "trace_id", None, part_bytes, 0)
    assert parts[0].start == 0 and parts[-1].end == len(data)
    assert all(a.end == b.start and a.start < a.end for a, b in itertools.pairwise(parts))
    sent: list[Any] = []
    line = 0
    for part in parts:
        assert part.ship and part.end is not None
        got, lines = _events(io.BytesIO(data[part.start : part.end]), 0, None, part.start, line)
        sent += got
        line += lines
    # (an error line inside a trace's span is yielded before the trace when read whole,
    # after it when a range ends there: the same records, in line order)
    assert sorted(in_place, key=_first_line) == sorted(whole, key=_first_line)
    assert sorted(sent, key=_first_line) == sorted(whole, key=_first_line)


def _first_line(event: tuple[Any, ...]) -> int:
    first: int = event[2][0] if isinstance(event[2], list) else event[0]
    return first


def test_a_cut_after_a_line_without_an_id(tmp_path: Path) -> None:
    # a line without an id does not end the trace around it, for a byte range as for the
    # file read whole: the broken line after it goes with that trace once, the lines after
    # keep their numbers
    calls = [
        {"trace_id": f"t{i // 3}", "tool": "search", "args": {"q": "x" * 40}} for i in range(9)
    ]
    lines = [json.dumps(c) for c in calls]
    lines[4:4] = ['{"no_id": true}', "{broken", ""]
    traces = tmp_path / "traces.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"tool": "search", "args": {"q": "x"}}]))
    whole = evaluate_dataset(str(gold), str(traces), engine="inline")
    cut_at = sum(len(line) + 1 for line in lines[:5])  # just after the line without an id

    def records(result: DatasetResult) -> list[dict[str, Any]]:
        out = [_asdict(r) | {"order": None} for r in result]
        return sorted(out, key=lambda d: (d["line"] or 0, d["trace_id"]))

    want = records(whole)
    assert [d["line"] for d in want] == [1, 4, 5, 10]  # t0, t1, the line without an id, t2
    for part_bytes in (cut_at - 2, cut_at, cut_at + 3):
        cut = evaluate_dataset(str(gold), str(traces), engine="inline", part_bytes=part_bytes)
        assert records(cut) == want, part_bytes


def test_the_progress_counts_traces_as_they_finish_in_one_process(
    generated: tuple[Path, Path],
) -> None:
    # one part, run in this process: the count moves while the part runs, not only at its end
    gold, traces = generated
    counts: list[tuple[int, int]] = []

    def seen(records: int, _: int | None, done: int, __: int) -> None:
        counts.append((records, done))

    result = evaluate_dataset(str(gold), str(traces), engine="inline", on_progress=seen)
    total = result.summary()["traces"]
    during = [n for n, done in counts if done == 0]
    assert total > PROGRESS_EVERY
    assert during[: total // PROGRESS_EVERY] == [
        PROGRESS_EVERY * (i + 1) for i in range(total // PROGRESS_EVERY)
    ]
    assert counts[-1][0] >= total - 1 and counts[-1][1] > 0
    result.close()


def test_a_pool_under_a_long_temporary_directory_starts(tmp_path: Path) -> None:
    # a forkserver's socket lives under TMPDIR and must fit an AF_UNIX address: under a long
    # TMPDIR the pool starts its workers otherwise ("AF_UNIX path too long" was exit 2)
    traces, gold = tmp_path / "traces.jsonl", tmp_path / "gold.jsonl"
    generate_dataset(traces, gold, 400, seed=5)
    assert traces.stat().st_size > 600 * 1024  # more than one part for each of 2 workers
    deep = tmp_path / ("t" * 90)
    deep.mkdir()
    out = tmp_path / "report.json"
    env = {**cli_env(), "TMPDIR": str(deep)}
    done = subprocess.run(
        [sys.executable, "-m", "toolscore", "eval", str(gold), str(traces), "--workers", "2",
         "-o", str(out)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["summary"]["traces"] == 400
    assert report["summary"]["engine"] == "local"
