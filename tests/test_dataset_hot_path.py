"""The dataset's per-trace hot path: each record equals what evaluating that trace alone gives,
the aggregate's bounded lists equal a brute-force computation, and a part's records cross
process boundaries unchanged."""

from __future__ import annotations

import io
import itertools
import json
import pickle
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from _datasets import dataset_in
from toolscore import evaluate_trace
from toolscore.dataset import Aggregate, TraceRecord, evaluate_dataset
from toolscore.dataset.aggregate import EXAMPLES, WORST
from toolscore.dataset.worker import PartResult


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return dataset_in(tmp_path_factory.mktemp("hot"), 160, seed=11)


def test_each_record_equals_the_trace_evaluated_alone(
    tmp_path: Path, generated: tuple[Path, Path]
) -> None:
    gold_path, traces = generated
    lines: dict[str, list[bytes]] = defaultdict(list)
    for line in traces.read_bytes().splitlines(keepends=True):
        lines[json.loads(line)["trace_id"]].append(line)
    gold = {
        d["trace_id"]: d["expected"] for d in map(json.loads, gold_path.read_bytes().splitlines())
    }
    result = evaluate_dataset(str(gold_path), str(traces), engine="inline", part_bytes=50_000)
    records = {r.trace_id: r for r in result}
    assert len(records) == len(lines) == 160
    with_failures = 0
    for trace_id, trace_lines in lines.items():
        path = tmp_path / "one.jsonl"
        path.write_bytes(b"".join(trace_lines))
        alone = evaluate_trace(gold[trace_id], str(path))
        r = records[trace_id]
        assert r.status == "ok"
        assert r.score == alone.score and r.grade == alone.grade
        assert r.argument_f1 == alone.argument_f1
        assert r.sequence_accuracy == alone.sequence_accuracy
        assert r.required_call_recall == alone.required_call_recall
        assert r.calls == alone.trace_calls_count == len(trace_lines)
        assert r.expected_calls == len(gold[trace_id])
        failed = dict(alone.failed_tools)
        assert r.failed_calls == sum(failed.values())
        kinds = Counter(f"{f.check}/{f.kind}" for f in alone.findings)
        assert r.findings == dict(kinds)
        retried = Counter(f.tool for f in alone.findings if f.kind == "retry_after_error")
        assert r.retries == sum(retried.values())
        per_tool = Counter(json.loads(line)["tool"] for line in trace_lines)
        assert r.tools == {
            tool: [per_tool[tool], failed.get(tool, 0), retried.get(tool, 0)] for tool in per_tool
        }
        with_failures += bool(failed)
    assert with_failures > 20  # the generated traces do exercise failures and retries
    result.close()


def test_part_results_cross_processes_unchanged() -> None:
    records = [
        TraceRecord(
            trace_id="a/t1/trial0",
            task="a/t1",
            score=0.1 + 0.2,
            grade="F",
            passed=False,
            calls=3,
            expected_calls=2,
            selection_accuracy=1 / 3,
            required_call_recall=None,
            findings={"errors/failed_call": 2},
            tools={"x": [3, 2, 1], "y\u00e9": [1, 0, 0]},
            source="s3://b/k.jsonl",
            line=7,
            order=(4, 2),
        ),
        TraceRecord(trace_id="", task="", status="error", error="f.jsonl:3: bad", order=(4, 3)),
    ]
    part = PartResult(4, records, [12, 0], 1234)
    back = pickle.loads(pickle.dumps(part))
    assert back.index == 4 and back.lines == [12, 0] and back.bytes_read == 1234
    assert [msgspec.structs.asdict(r) for r in back.records] == [
        msgspec.structs.asdict(r) for r in records
    ]
    assert back.records[0].order == (4, 2) and back.records[0].score == 0.1 + 0.2


_records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.floats(0, 1)),
        st.sets(st.sampled_from(["errors/failed_call", "secrets/secret", "policy/forbidden"])),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(_records, st.randoms(use_true_random=False))
def test_worst_traces_and_examples_are_the_smallest_whatever_the_order(
    items: list[tuple[float | None, set[str]]], rng: Any
) -> None:
    records = [
        TraceRecord(
            trace_id=f"t{i}",
            task="k",
            score=score,
            passed=None if score is None else i % 3 != 0,
            findings={kind: 1 for kind in sorted(kinds)},
            order=(i // 7, i % 7),
        )
        for i, (score, kinds) in enumerate(items)
    ]
    shuffled = list(records)
    rng.shuffle(shuffled)
    agg = Aggregate()
    for r in shuffled:
        agg.add(r)
    # the worst: the lowest-scored failing traces (one that passed is never among them)
    want_worst = sorted(
        (r.score, r.order, r.trace_id) for r in records if r.score is not None and not r.passed
    )
    assert agg.worst == want_worst[:WORST]
    kinds = {kind for r in records for kind in r.findings}
    for kind in kinds:
        want = sorted((r.order, r.trace_id) for r in records if kind in r.findings)
        assert agg.examples[kind] == want[:EXAMPLES]
    assert set(agg.examples) == kinds


_line = st.one_of(
    st.builds(lambda i: json.dumps({"trace_id": f"t{i}", "tool": "a"}), st.integers(0, 3)),
    st.builds(lambda i: json.dumps({"trace_id": i, "tool": "a"}), st.integers(0, 3)),
    st.just('{"tool": "a"}'),  # no id
    st.just('{"trace_id": null}'),
    st.just('{"trace_id": "t1"} {"trace_id": "t2"}'),  # two values on one line
    st.just('{"trace_id": "t1", "tool": '),  # truncated
    st.just("[1, 2]"),  # not an object
    st.sampled_from(["", " ", "\r", "\t \r", "\x0c"]),  # blank (and a form feed)
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_line, max_size=40), st.booleans(), st.integers(1, 64))
def test_ids_read_a_chunk_at_a_time_equal_ids_read_line_by_line(
    lines: list[str], final_newline: bool, chunk: int
) -> None:
    import io

    from toolscore.dataset import inputs
    from toolscore.dataset.inputs import BLANK, IdReader, id_chunks, iter_lines, line_ids

    def iter_ids(f: Any, ids: IdReader) -> list[tuple[int, bytes, Any]]:
        out = []
        for pos, body, lines, got in id_chunks(f, ids):
            assert body == b"".join(line + b"\n" for line in lines)
            for line, one in zip(lines, line_ids(got), strict=True):
                out.append((pos, line + b"\n", one))
                pos += len(line) + 1
        return out

    data = "\n".join(lines).encode() + (b"\n" if final_newline and lines else b"")

    class Small(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:  # chunks end anywhere
            return super().read(chunk if size is None or size < 0 else min(size, chunk))

    for task_key in (None, "tool"):
        ids = IdReader("trace_id", task_key)
        want = [
            (offset, line, ids.read(line) if line.strip() else BLANK)
            for offset, line in iter_lines(io.BytesIO(data))
        ]
        assert iter_ids(io.BytesIO(data), ids) == want
        assert iter_ids(Small(data), ids) == want
        assert inputs.BLANK is BLANK


_id_line = st.builds(
    lambda i, tool: json.dumps({"trace_id": f"t{i}", "tool": tool}),
    st.integers(0, 2),
    st.sampled_from(["a", "b"]),
)


def _traces_line_by_line(data: bytes, ids: Any) -> list[Any]:
    """What contiguous_traces gives for a whole file, restated a line at a time."""
    from toolscore.dataset.inputs import BLANK, iter_lines

    out: list[Any] = []
    current: list[Any] | None = None
    lineno = reached = 0
    for offset, line in iter_lines(io.BytesIO(data)):
        lineno += 1
        reached = offset + len(line)
        one = ids.read(line) if line.strip() else BLANK
        if one is BLANK:
            continue
        if one is None or one[0] is None:
            if one is None and current is not None:
                current[3] += line
                current[4].append(lineno)
            else:
                problem = "malformed JSON line (not a JSON object)" if one is None else "no id"
                out.append(("problem", lineno, offset, problem))
            continue
        if current is None or current[1] != one[0]:
            if current is not None:
                out.append(current)  # a trace is given when it ends
            current = ["trace", one[0], one[1], line, [lineno], offset]
        else:
            current[3] += line
            current[4].append(lineno)
    if current is not None:
        out.append(current)
    out.append(("end", lineno, reached))
    return [tuple(x) for x in out]


def _as_rows(got: list[Any]) -> list[Any]:
    rows = []
    for item in got:
        if isinstance(item, tuple):
            lineno, offset, problem = item
            if not problem:
                rows.append(("end", lineno, offset))
            else:
                problem = "no id" if problem.startswith("the line has no") else problem
                rows.append(("problem", lineno, offset, problem))
        else:
            rows.append(
                ("trace", item.trace_id, item.task, b"".join(item.lines), item.linenos, item.offset)
            )
    return rows


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(_id_line, _id_line, _id_line, _line), max_size=40),
    st.booleans(),
    st.integers(1, 200),
    st.booleans(),
    st.lists(st.integers(0, 2000), max_size=4),
)
@example(  # a trace's task is its first line's
    [json.dumps({"trace_id": "t0", "tool": tool}) for tool in "ab"], True, 200, True, []
)
def test_contiguous_traces_equal_their_line_by_line_reading(
    lines: list[str], final_newline: bool, chunk: int, task: bool, cut_at: list[int]
) -> None:
    # whole chunks of id-bearing lines are cut into traces as slices (a run per id), other
    # chunks line by line: either way, what reading each line in turn gives
    from toolscore.dataset import _reading
    from toolscore.dataset.inputs import IdReader, contiguous_traces

    data = "\n".join(lines).encode() + (b"\n" if final_newline and lines else b"")

    class Small(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:  # chunks end anywhere
            return super().read(chunk if size is None or size < 0 else min(size, chunk))

    ids = IdReader("trace_id", "tool" if task else None)
    want = _traces_line_by_line(data, ids)
    assert _as_rows(list(contiguous_traces(io.BytesIO(data), ids))) == want
    assert _as_rows(list(contiguous_traces(Small(data), ids))) == want

    # byte ranges: each trace is read whole (with the blank and malformed lines that go with
    # it) by the range its first line starts in; a malformed line before any trace is
    # reported once. (A line with no id inside a trace does not end it when the file is read
    # whole, and does end a range's reading: the trace's later lines are then a piece of it,
    # regrouped by the driver, tested with the datasets.)
    if any(line.strip() and (ids.read(line) or ("",))[0] is None for line in data.split(b"\n")):
        return
    # (a file's reads are whole: here chunks end anywhere through the read size instead)
    cuts = sorted({0, *(c % (len(data) + 1) for c in cut_at), len(data)})
    parts = []
    with (
        mock.patch.object(_reading, "READ_BYTES", chunk),
        mock.patch.object(_reading, "BACK_BYTES", max(1, chunk // 3)),
    ):
        for start, end in itertools.pairwise(cuts):
            got = _as_rows(list(contiguous_traces(io.BytesIO(data), ids, start, end)))
            parts += [row[:4] + row[5:] if row[0] == "trace" else row[2:] for row in got[:-1]]
    assert parts == [row[:4] + row[5:] if row[0] == "trace" else row[2:] for row in want[:-1]]


def test_a_range_inside_a_long_run_of_malformed_lines_reads_the_run_once() -> None:
    # the run goes with the trace before it, which the first range reads to its end. A later
    # range starting inside the run looks back for that trace's id: in blocks, not two
    # 64 KiB reads a line (which read 2.5 GB here, and made a file's cost grow with the
    # square of the run's length); and it stops reading at its own end
    from toolscore.dataset.inputs import IdReader, contiguous_traces

    good = b"".join(b'{"trace_id": "t%d", "tool": "a"}\n' % (i // 3) for i in range(30))
    bad = b'{"trace_id": "t9", "tool": broken\n' * 20_000
    after = b'{"trace_id": "t10", "tool": "a"}\n'
    data = good + bad + after
    read = 0

    class Counted(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            nonlocal read
            got = super().read(size)
            read += len(got)
            return got

    ids = IdReader("trace_id", None)
    third = len(data) // 3
    got = [
        list(contiguous_traces(Counted(data), ids, a, b))
        for a, b in [(0, third), (third, 2 * third), (2 * third, len(data))]
    ]
    assert read < 2 * 3 * len(data)  # at most the file twice a range: back, and on
    first, middle, last = got
    assert [t.trace_id for t in first[:-1]] == [f"t{i}" for i in range(10)]
    assert len(first[-2].lines) == 3 + 20_000  # the run goes with t9
    assert middle == [(0, _next_start(data, third), "")]
    assert [t.trace_id for t in last[:-1]] == ["t10"]


def _next_start(data: bytes, pos: int) -> int:
    return data.index(b"\n", pos - 1) + 1


def test_fewer_collections_restores_the_thresholds_when_the_last_block_ends() -> None:
    # blocks in two threads overlap (a Dask worker running two parts): the first to end
    # leaves the raised threshold to the other; the last restores the caller's thresholds
    import gc
    import threading

    from toolscore.dataset.worker import YOUNG_COLLECTION_THRESHOLD, fewer_collections

    before = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    try:
        a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
        seen: dict[str, tuple[int, ...]] = {}

        def first() -> None:
            with fewer_collections():
                a_in.set()
                b_in.wait(5)
            a_out.set()

        def second() -> None:
            a_in.wait(5)
            with fewer_collections():
                b_in.set()
                a_out.wait(5)
                seen["after the first ended"] = gc.get_threshold()

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert seen["after the first ended"] == (YOUNG_COLLECTION_THRESHOLD, 11, 12)
        assert gc.get_threshold() == (900, 11, 12)
        with fewer_collections(), fewer_collections():
            assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 11, 12)
        assert gc.get_threshold() == (900, 11, 12)
    finally:
        gc.set_threshold(*before)


def test_a_trace_without_its_last_newline_loses_no_call(tmp_path: Path) -> None:
    # a decoder's end of a trace then holds its last call: the record counts it as the
    # trace read with the newline does (scored through the same decoder factory)
    from toolscore.calls import ToolCall
    from toolscore.dataset.gold import build_gold
    from toolscore.dataset.worker import Config, FileFormat, evaluate_one

    calls = [
        {"tool": "a", "args": {"q": 1}, "is_error": True},
        {"tool": "a", "args": {"q": 1}},
        {"tool": "b", "args": {"q": 2}},
    ]
    data = b"".join(json.dumps(c).encode() + b"\n" for c in calls)
    gold = [ToolCall(tool="a", args={"q": 1}), ToolCall(tool="b", args={"q": 2})]
    cfg = Config(gold=build_gold([{"tool": "a"}], str(tmp_path), key=None))
    make = FileFormat(cfg, "t.jsonl").decoder(data)
    assert make is not None
    records = [
        evaluate_one(cfg, "t", "t", io.BytesIO(text), gold, source="t.jsonl", decoder=make)
        for text in (data, data.rstrip(b"\n"))
    ]
    whole, cut = records
    assert whole.calls == cut.calls == 3
    assert whole.score == cut.score and whole.retries == cut.retries == 1
    assert whole.tools == cut.tools == {"a": [2, 1, 1], "b": [1, 0, 0]}
