"""The migration layer's one door into the package: Toolscore 1.10's list-based functions.

Toolscore 1.10's metric functions take whole lists of calls (``calculate_argument_f1(gold,
trace)``) and its adapters parse a whole JSON value (``OpenAIAdapter().parse(data)``). The
modules under those 1.10 paths (:mod:`toolscore.metrics`, :mod:`toolscore.adapters`, ...) do no
scoring and no parsing of their own: they call the two functions here, which run the lists
through the one pipeline and reducer (:func:`run_calls`) or the bytes through the streamed
readers (:func:`read_calls`), and read the answer.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from .calls import Batch, ToolCall
from .result import EvaluationResult

__all__ = ["indexed", "metric_section", "read_calls", "run_calls"]


def indexed(calls: Iterable[ToolCall]) -> list[ToolCall]:
    """The calls numbered from 0 (the checks report a call by its ``index``)."""
    out: list[ToolCall] = []
    for i, call in enumerate(calls):
        if not isinstance(call, ToolCall):
            raise TypeError(f"item {i} is not a ToolCall: {type(call).__name__}")
        out.append(call if call.index == i else dataclasses.replace(call, index=i))
    return out


def run_calls(
    gold: Sequence[ToolCall],
    trace: Sequence[ToolCall],
    *,
    strict: bool = False,
    forbidden: Any = None,
) -> EvaluationResult:
    """The result of ``trace`` against ``gold``: the built-in checks, one pass, the reducer.

    Every call is kept (``trajectory_details`` in full), and ``latency_metrics`` /
    ``cost_metrics`` are included when their totals are positive, as for a file trace.
    """
    # function-local: the API pulls in the checks, which ``import toolscore`` defers
    from .api import builtin_checks, pipeline_result, read_rules
    from .pipeline import Pipeline, run_sync
    from .result import normalize_weights

    gold_calls = indexed(gold)
    calls = indexed(trace)
    pipeline = Pipeline(
        builtin_checks(gold_calls, read_rules(forbidden), strict=strict, keep_details=True),
        keep_calls=True,
    )
    run_sync(pipeline, [Batch(calls=calls, done=calls)])
    return pipeline_result(pipeline, gold_calls, normalize_weights(None), include_extras=True)


def metric_section(result: EvaluationResult, key: str) -> dict[str, Any]:
    """``result.metrics[key]`` as a dict (empty when the metric is absent)."""
    value = result.metrics.get(key)
    return dict(value) if isinstance(value, Mapping) else {}


def read_calls(
    src: str | os.PathLike[str] | IO[bytes] | bytes, format: str = "auto"
) -> list[ToolCall]:
    """Every call of a trace (a path, a binary file or the bytes), in trace order.

    Raises:
        InputError: (a ``ValueError``) the trace is malformed, or its format not detected.
        UsageError: (a ``ValueError``) an unknown format.
    """
    # start-up of `toolscore.core`/`toolscore.metrics`: the readers load only to read a trace
    from .sources import iter_batches

    if isinstance(src, bytes):
        src = io.BytesIO(src)
    calls: list[ToolCall] = []
    for batch in iter_batches(src, format):
        calls.extend(batch.done)
        if batch.error is not None:
            raise batch.error
    calls.sort(key=lambda call: call.index)
    return calls
