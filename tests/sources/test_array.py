"""The array decoder (runs of whole items, decoded by msgspec) reads what ijson reads: the same
calls, the same findings, and the same fault at the same byte offset and line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from _streamed import fed
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from toolscore import evaluate_trace
from toolscore.reports.json import CallSpool, write_json_report
from toolscore.sources import Session, _array

call = st.fixed_dictionaries(
    {"tool": st.sampled_from(["search", "fetch", "run_shell"])},
    optional={
        "args": st.sampled_from([{}, {"q": "a},{b"}, {"rows": [{"a": 1}, {"b": [2, {}]}]}]),
        "result": st.sampled_from(
            ["", 0, [], {"a": {"b": [1, {"c": "},\n{"}]}}, "x\ny", [{"k": 1}, {"k": 2}], None]
        ),
        "error": st.sampled_from(["timeout", ""]),
        "duration": st.sampled_from([0.5, 0, 2]),
        "trace_id": st.sampled_from(["t1", "t2"]),
    },
)
item = call | st.sampled_from([{"name": "fetch", "arguments": {"u": 1}}, {"tool": 5}, 3, "x"])
layout = st.sampled_from(["compact", "spaces", "line", "indent2", "indent0"])


def render(items: list[Any], how: str, container: str | None) -> bytes:
    value: Any = items if container is None else {container: items}
    if how == "compact":
        text = json.dumps(value, separators=(",", ":"))
    elif how == "spaces":
        text = json.dumps(value)
    elif how == "line":
        body = ",\n".join(json.dumps(i, separators=(",", ":")) for i in items)
        text = f"[\n{body}\n]" if container is None else f'{{"{container}": [\n{body}\n]}}'
    else:
        text = json.dumps(value, indent=2 if how == "indent2" else 0)
    return text.encode()


def read(data: bytes, step: int, *, arrays: bool) -> tuple[Any, ...]:
    """The calls, finding messages and fault of ``data`` fed ``step`` bytes at a time, read
    with array runs or with ijson alone."""
    old = dict(_array.ARRAY_PREFIXES)
    if not arrays:
        _array.ARRAY_PREFIXES.clear()
    try:
        calls, findings, error, _ = fed(data, "custom", step=step)
    finally:
        _array.ARRAY_PREFIXES.update(old)
    err = None if error is None else (type(error).__name__, str(error), error.offset)
    summary = [(c.tool, c.args, c.result, c.metadata, c.index) for c in calls]
    return summary, [f.message for f in findings], err


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(item, max_size=12),
    how=layout,
    container=st.sampled_from([None, "calls"]),
    step=st.sampled_from([5, 97, 1 << 20]),
    damage=st.sampled_from(["none", "truncate", "garbage", "break"]),
    at=st.floats(0, 1),
)
def test_runs_read_what_ijson_reads(
    items: list[Any], how: str, container: str | None, step: int, damage: str, at: float
) -> None:
    data = render(items, how, container)
    if damage == "truncate":
        data = data[: int(len(data) * at)]
    elif damage == "garbage":
        data += b' {"x": 1}'
    elif damage == "break":
        cut = int(len(data) * at)
        data = data[:cut] + b"\x01" + data[cut:]
    event(f"damage={damage}")
    assert read(data, step, arrays=True) == read(data, step, arrays=False)


def test_a_long_trace_is_read_in_runs_and_a_fault_has_its_offset() -> None:
    items = [{"tool": "search", "args": {"q": str(i)}, "result": {"n": i}} for i in range(3000)]
    data = render(items, "line", None)
    session = Session("custom", "t")
    blocks = 0
    n = 0
    for start in range(0, len(data), 1 << 14):
        batch = session.feed(data[start : start + (1 << 14)])
        blocks += batch.block is not None
        n += batch.n_calls
    n += session.close().n_calls
    assert n == 3000
    assert blocks >= 5

    broken = data[:50_000] + b"@" + data[50_000:]
    calls, _, err = read(broken, 1 << 14, arrays=True)
    assert err is not None and err[0] == "MalformedTrace" and err[2] == 50_000
    assert err == read(broken, 1 << 14, arrays=False)[2]
    assert 0 < len(calls) < 3000


@pytest.mark.parametrize(
    "doc",
    [
        b'{"model": "m", "calls": [{"tool": "a"}, {"tool": "b"}]}',
        b'[{"tool": "a"}]',
        b'[{"tool": "a"}, 5, {"tool": "b"}]',
        b"[]",
        b'  [ {"tool":"a"} , {"tool":"b"} ]  ',
    ],
)
def test_other_shapes_go_through_ijson_and_agree(doc: bytes) -> None:
    for step in (1, 3, 1 << 20):
        assert read(doc, step, arrays=True) == read(doc, step, arrays=False)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=st.lists(call, min_size=1, max_size=30), how=layout)
def test_json_report_is_the_same(tmp_path: Path, items: list[Any], how: str) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(render(items, how, None))
    reports = []
    for arrays in (True, False):
        old = dict(_array.ARRAY_PREFIXES)
        if not arrays:
            _array.ARRAY_PREFIXES.clear()
        try:
            with CallSpool(tmp_path) as spool:
                result = evaluate_trace([{"tool": "search"}], path, "custom", on_calls=spool)
                out = tmp_path / "r.json"
                write_json_report(result, out, spool)
        finally:
            _array.ARRAY_PREFIXES.update(old)
        report = json.loads(out.read_bytes())
        del report["timestamp"]
        reports.append(report)
    assert reports[0] == reports[1]


def test_pieces_fit_together() -> None:
    # every way of cutting a small document into three pieces
    data = render([{"tool": "a", "result": "x"}, {"tool": "b"}, {"tool": "c"}], "line", "calls")
    for i, j in itertools.combinations(range(1, len(data)), 2):
        session = Session("custom", "t")
        got = []
        for piece in (data[:i], data[i:j], data[j:]):
            got += session.feed(piece).calls
        got += session.close().calls
        assert [c.tool for c in got] == ["a", "b", "c"], (i, j)


@given(data=st.binary(max_size=300) | st.text(max_size=200).map(str.encode))
def test_newlines_are_counted_as_bytes_count_counts_them(data: bytes) -> None:
    from toolscore.sources._util import count_newlines

    assert count_newlines(data) == data.count(b"\n")
    assert count_newlines(data + b"\n\n" + data) == 2 * data.count(b"\n") + 2
    for end in (0, len(data) // 2, len(data)):
        assert count_newlines(data, end) == data.count(b"\n", 0, end)
