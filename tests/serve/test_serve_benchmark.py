"""Smoke tests for ``benchmarks/serve.py``'s load and its percentiles (the benchmark itself
never runs here)."""

from __future__ import annotations

import pytest

from _bench import load_benchmark
from toolscore.serve.otlp import PROTOBUF, decode_traces

bench = load_benchmark("serve")


def test_the_load_is_tool_spans_one_in_twenty_forbidden() -> None:
    load = bench.Load(1, 10)
    spans, rejected = decode_traces(bench.encode(load.spans(200)), PROTOBUF)
    assert rejected == 0 and len(spans) == 200
    assert all(s.attrs["gen_ai.operation.name"] == "execute_tool" for s in spans)
    assert sum(s.attrs["gen_ai.tool.name"] == "delete_database" for s in spans) == 10
    assert not any(s.root for s in spans) and len({s.trace_id for s in spans}) >= 10


def test_quantiles_from_cumulative_buckets() -> None:
    buckets = [(0.01, 50.0), (0.02, 90.0), (0.05, 100.0), (float("inf"), 100.0)]
    assert bench.quantile(buckets, 0.5) == pytest.approx(0.01)
    assert bench.quantile(buckets, 0.7) == pytest.approx(0.015)
    assert bench.quantile(buckets, 0.99) == pytest.approx(0.047)
    assert bench.pct([3.0, 1.0, 2.0], 0.5) == 2.0
