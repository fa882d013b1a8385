from __future__ import annotations

import json
import math
import tracemalloc
from datetime import datetime
from pathlib import Path

import pytest
from _results import guardrails_metrics, make_result

from _mounts import tiny_tmpfs
from toolscore.calls import Finding, ToolCall
from toolscore.columns import ListColumns
from toolscore.errors import TruncatedTrace
from toolscore.reports import json as report_json
from toolscore.reports.json import (
    CallSpool,
    FindingSpool,
    JsonReport,
    dumps,
    write_json_report,
)
from toolscore.result import call_record

KEY = "AKIAIOSFODNN7EXAMPLE"


def trace_calls(n: int) -> list[ToolCall]:
    calls = []
    for i in range(n):
        md = {"error": "boom"} if i % 3 == 0 else {}
        calls.append(ToolCall("t" if i % 2 else "u", {"i": i, "key": KEY}, result=i, metadata=md))
        calls[-1].index = i
    return calls


def read(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_streamed_report_equals_to_dict_with_calls(tmp_path: Path) -> None:
    calls = trace_calls(7)
    kept = make_result(trace_calls=calls, count=7)  # in-memory: to_dict() lists every call
    streamed = make_result(count=7)
    with CallSpool() as spool:
        spool(calls[:3])
        spool([])
        spool(calls[3:])
        assert spool.count == 7
        path = tmp_path / "out.json"
        write_json_report(streamed, path, spool, now=datetime(2024, 5, 6, 7, 8, 9))
    data = read(path)
    # the verdict first, then the calls as they were read, then what only the end knows
    assert list(data)[:4] == ["timestamp", "summary", "calls", "findings"]
    assert data["timestamp"] == "2024-05-06T07:08:09"
    rest = {k: v for k, v in data.items() if k not in ("timestamp", "summary", "findings")}
    assert rest == json.loads(json.dumps(kept.to_dict()))
    record = kept.to_dict()
    assert list(rest) == ["calls", *(key for key in record if key != "calls")]
    actual = rest["calls"]["actual"]  # type: ignore[index]
    assert actual == [call_record(c) for c in calls]
    assert actual[0]["args"]["key"] == KEY  # the record keeps arguments as recorded


def test_summary(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write_json_report(make_result(), path)
    summary = read(path)["summary"]
    assert summary == {
        "gold_calls_count": 2,
        "trace_calls_count": 5,
        "score": make_result().score,
        "grade": "C",
        "weights": make_result().weights,
        "required_call_recall": 0.5,
        "failed_calls": 2,
        "policy_violations": 1,
        "secrets": 1,
        "violations": 2,
        "violations_by_kind": {"forbidden": 1, "credentials": 1, "rules": 0, "personal_data": 0},
        "passed": False,
        "pass_criterion": "grade A or better, all required calls completed, no violations",
        "complete": True,
        "input_error": None,
        "input_problems": 0,
    }


def test_without_spool_uses_to_dict_calls(tmp_path: Path) -> None:
    calls = trace_calls(2)
    path = tmp_path / "out.json"
    write_json_report(make_result(trace_calls=calls, count=2), path)
    assert read(path)["calls"]["actual"] == [call_record(c) for c in calls]  # type: ignore[index]
    with CallSpool() as empty:
        write_json_report(make_result(count=0), path, empty)
    assert read(path)["calls"] == {  # type: ignore[comparison-overlap]
        "expected": [
            {"tool": "run_shell", "args": {"command": "make test"}},
            {"tool": "deploy", "args": {"env": "staging"}},
        ],
        "actual": [],
    }


def test_findings_from_spool_and_result(tmp_path: Path) -> None:
    kept = Finding("errors", "failed_call", "warning", "call 1 t failed", call_index=0, tool="t")
    path = tmp_path / "out.json"
    write_json_report(make_result(findings=[kept]), path)
    assert read(path)["findings"] == [kept.to_json()]
    many = [
        Finding("policy", "forbidden_call", "error", f"call {i + 1}", call_index=i)
        for i in range(25)
    ]
    with FindingSpool() as spool:
        spool(many[:10])
        spool(many[10:])
        write_json_report(make_result(findings=many[:3]), path, findings=spool)
    assert read(path)["findings"] == [f.to_json() for f in many]


def test_incomplete_and_odd_values(tmp_path: Path) -> None:
    metrics = guardrails_metrics()
    error = TruncatedTrace("t.json", "ended inside a value", offset=40)
    odd = ToolCall("t", {"nan": math.nan, "big": 10**30, "set": {1}, 5: object()}, index=0)
    with CallSpool() as spool:
        spool([odd])
        path = tmp_path / "out.json"
        write_json_report(make_result(metrics, error=error, count=1), path, spool)
    data = read(path)
    assert data["summary"]["complete"] is False  # type: ignore[index]
    assert data["summary"]["input_error"]["offset"] == 40  # type: ignore[index]
    assert data["incomplete"]["message"] == "t.json: byte 40: ended inside a value"  # type: ignore[index]
    args = data["calls"]["actual"][0]["args"]  # type: ignore[index]
    assert args["nan"] == "nan"
    assert args["big"] == 10**30
    assert args["set"] == "{1}"
    assert args["5"].startswith("<object object")


def test_dumps_falls_back_for_what_orjson_refuses() -> None:
    assert json.loads(dumps({"big": 2**70, 1: (1, 2)})) == {"big": 2**70, "1": [1, 2]}
    assert json.loads(dumps({"x": {1, 2}})) == {"x": [1, 2]}


def test_spool_memory_is_flat() -> None:
    batch = trace_calls(500)
    with CallSpool() as spool:
        spool(batch)
        tracemalloc.start()
        try:
            spool(batch)
            _, one_batch = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            for _ in range(40):  # 20,000 calls
                spool(batch)
            spool.flush()  # the writes still queued for the writer's thread are done
            held, forty_batches = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert spool.count == 21_000
    assert held < 100_000  # nothing kept per call
    # the peak is a few batches (the one being encoded, those queued), however many
    queued = report_json.MAX_QUEUED // 2
    assert forty_batches < one_batch * (1 + queued) * 1.2 + 100_000


def test_report_written_while_reading_keeps_the_room_only_when_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscore.reports import json as report_json

    calls = trace_calls(40)
    result = make_result(count=40)
    for small in (True, False):
        if not small:
            monkeypatch.setattr(report_json, "_SMALL", 100)
        path = tmp_path / f"r{small}.json"
        with JsonReport(path, result.gold_calls) as report:
            report(calls[:10])
            report.take_columns(ListColumns(calls[10:]))
            assert not path.exists()  # written next to it, renamed at the end
            report.finish(result)
        text = path.read_bytes()
        assert (b" " * 1000 in text) is not small  # a big report keeps the padded room
        data = json.loads(text)
        assert list(data)[:3] == ["timestamp", "summary", "calls"]
        assert data["calls"]["actual"] == [call_record(c) for c in calls]
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_summary_too_big_for_the_room_is_written_anyway(tmp_path: Path) -> None:
    error = TruncatedTrace("t" * 10_000 + ".json", "ended inside a value", offset=4)
    result = make_result(error=error, count=1)
    path = tmp_path / "out.json"
    with JsonReport(path, result.gold_calls) as report:
        report(trace_calls(1))
        report.finish(result)
    assert read(path)["summary"]["input_error"]["offset"] == 4  # type: ignore[index]


def test_an_unfinished_report_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    with JsonReport(path) as report:
        report(trace_calls(3))
    assert list(tmp_path.iterdir()) == []


def test_adopted_parts_copy_without_copy_file_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    calls = trace_calls(30)
    with CallSpool(path=tmp_path / "part") as part:
        part(calls[10:])
        part.flush()
        for kernel in (True, False):
            if not kernel:  # another system: the copy goes through memory
                monkeypatch.delattr(os, "copy_file_range", raising=False)
            path = tmp_path / f"r{kernel}.json"
            with JsonReport(path) as report:
                report(calls[:10])
                report.adopt(tmp_path / "part", part.count)
                report.finish(make_result(count=30))
            assert read(path)["calls"]["actual"] == [call_record(c) for c in calls]  # type: ignore[index]


class _FailingFile:
    """A file whose writes fail after the first ``ok`` of them (a disk that fills up)."""

    def __init__(self, ok: int) -> None:
        self.ok = ok
        self.written: list[bytes] = []

    def write(self, data: bytes | memoryview) -> int:
        if len(self.written) >= self.ok:
            raise OSError(28, "No space left on device")
        self.written.append(bytes(data))
        return len(data)


def test_writer_thread_keeps_order_and_starts_at_the_first_write(tmp_path: Path) -> None:
    with open(tmp_path / "out", "w+b") as fh:
        writer = report_json.BackgroundWriter(fh)
        assert not writer.running  # nothing started before a write: safe to fork
        for i in range(200):
            writer.write(b"%d," % i)
        writer.drain()
        writer.stop()
        assert not writer.running
    text = (tmp_path / "out").read_bytes()
    assert text == b"".join(b"%d," % i for i in range(200))


def test_writer_thread_error_reaches_the_caller() -> None:
    target = _FailingFile(ok=3)
    writer = report_json.BackgroundWriter(target)  # type: ignore[arg-type]
    for i in range(3):
        writer.write(b"x%d" % i)
    writer.drain()  # the three that fit
    writer.write(b"y")  # fails in the thread
    with pytest.raises(OSError, match="No space left"):
        writer.drain()
    with pytest.raises(OSError, match="No space left"):
        writer.write(b"z")  # and every later write says so at once
    writer.stop()
    assert target.written == [b"x0", b"x1", b"x2"]


def test_full_disk_while_the_report_is_written_is_one_clear_error(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "small") as mount:
        report = JsonReport(mount / "out.json")
        with report:
            report(trace_calls(2000))  # about 1 MB of records on a 64 KiB file system
            with pytest.raises(OSError, match="No space left"):
                report.finish(make_result())
        assert list(mount.iterdir()) == []  # the unfinished report is removed


def test_writer_thread_survives_an_unexpected_error() -> None:
    # A closed file raises ValueError, not OSError: the thread keeps draining (a dead thread
    # would leave write() blocked on a full queue for ever), and the caller sees the error.
    class Closed:
        def write(self, data: bytes | memoryview) -> int:
            raise ValueError("I/O operation on closed file")

    writer = report_json.BackgroundWriter(Closed())  # type: ignore[arg-type]
    for _ in range(report_json.MAX_QUEUED * 3):
        try:
            writer.write(b"x")
        except ValueError:
            break
    with pytest.raises(ValueError, match="closed file"):
        writer.drain()
    writer.stop()
