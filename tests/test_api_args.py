"""The Python API refuses wrong argument types with a TypeError (a bad value with a
UsageError) that says what the argument accepts; a path may be bytes, as open() takes it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolscore import evaluate, evaluate_stream, evaluate_trace
from toolscore.errors import UsageError

CALLS = [{"tool": "search", "args": {"q": "x"}}, {"tool": "fetch", "args": {"url": "u"}}]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"tool": "search", "args": {"q": "x"}}]))
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in CALLS))
    return gold, trace


def test_bytes_paths_are_paths(files: tuple[Path, Path]) -> None:
    gold, trace = files
    expected = evaluate_trace(gold, trace).to_dict()
    got = evaluate_trace(os.fsencode(gold), os.fsencode(trace)).to_dict()
    assert got["score"] == expected["score"] and got["score"] > 0
    streamed = anyio.run(evaluate_stream, os.fsencode(gold), os.fsencode(trace))
    assert streamed.to_dict()["score"] == expected["score"]


@pytest.mark.parametrize(
    "trace",
    [CALLS, (c for c in CALLS), None, 42, {"tool": "search"}],
    ids=["list", "generator", "None", "int", "dict"],
)
def test_evaluate_trace_refuses_what_is_not_a_trace_file(
    files: tuple[Path, Path], trace: Any
) -> None:
    gold, _ = files
    with pytest.raises(TypeError, match=r"trace_file must be a path \(str, os.PathLike or bytes\)"):
        evaluate_trace(gold, trace)


def test_calls_in_memory_point_to_the_right_function(files: tuple[Path, Path]) -> None:
    gold, _ = files
    with pytest.raises(TypeError, match="evaluate_stream"):
        evaluate_trace(gold, CALLS)
    # ... which does take them
    result = anyio.run(evaluate_stream, gold, CALLS)
    assert result.to_dict()["score"] == evaluate_trace(gold, files[1]).to_dict()["score"]


@pytest.mark.parametrize("gold", [3, 2.5, object()], ids=["int", "float", "object"])
def test_gold_of_the_wrong_type(files: tuple[Path, Path], gold: Any) -> None:
    with pytest.raises(TypeError, match=r"gold_file must be a path .* or a list of expected calls"):
        evaluate_trace(gold, files[1])


@pytest.mark.parametrize("workers", [-3, 0])
def test_workers_below_one_is_a_usage_error(files: tuple[Path, Path], workers: int) -> None:
    with pytest.raises(UsageError, match="workers must be at least 1"):
        evaluate_trace(*files, workers=workers)


@pytest.mark.parametrize("workers", ["2", 1.5, True])
def test_workers_of_the_wrong_type(files: tuple[Path, Path], workers: Any) -> None:
    with pytest.raises(TypeError, match="workers must be a positive int"):
        evaluate_trace(*files, workers=workers)


def test_format_and_rules_of_the_wrong_type(files: tuple[Path, Path]) -> None:
    with pytest.raises(TypeError, match="format must be a string"):
        evaluate_trace(*files, format=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="forbidden must be a path"):
        evaluate_trace(*files, forbidden=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="forbidden must be a path"):
        evaluate([], CALLS, forbidden=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("source", [None, 5, 2.0], ids=["None", "int", "float"])
def test_evaluate_stream_refuses_what_is_not_a_source(
    files: tuple[Path, Path], source: Any
) -> None:
    with pytest.raises(TypeError, match="source must be a path"):
        anyio.run(evaluate_stream, files[0], source)
