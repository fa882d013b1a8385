"""Datasets: thousands of traces, each scored against its own gold, on all cores or a cluster.

``evaluate_dataset(gold, traces)`` (and ``await aevaluate_dataset(...)``) reads every trace of
a file, directory, glob or fsspec URL, scores each whole against its gold in a worker, and
adds the per-trace records up into a mergeable :class:`Aggregate` (mean, median, p10, grades,
pass rate, pass@k and pass^k by task, per-tool failure and retry rates, findings by kind).
See :mod:`.inputs` for what TRACES may be, :mod:`.gold` for the gold forms, :mod:`toolscore.parts`
for where parts run.

Each name is imported the first time it is used: ``toolscore eval`` imports
:mod:`.cli` for its options on every run, and a single trace needs none of the engine
(multiprocessing, concurrent.futures, sqlite3).
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:
    from .aggregate import Aggregate as Aggregate
    from .aggregate import TaskOutcome as TaskOutcome
    from .aggregate import pass_at_k as pass_at_k
    from .aggregate import pass_hat_k as pass_hat_k
    from .records import PassCriterion as PassCriterion
    from .records import TraceRecord as TraceRecord
    from .run import DatasetResult as DatasetResult
    from .run import aevaluate_dataset as aevaluate_dataset
    from .run import evaluate_dataset as evaluate_dataset

__all__ = [
    "Aggregate",
    "DatasetResult",
    "PassCriterion",
    "TaskOutcome",
    "TraceRecord",
    "aevaluate_dataset",
    "evaluate_dataset",
    "pass_at_k",
    "pass_hat_k",
]

_EXPORTS: dict[str, str] = {
    "Aggregate": ".aggregate",
    "TaskOutcome": ".aggregate",
    "pass_at_k": ".aggregate",
    "pass_hat_k": ".aggregate",
    "PassCriterion": ".records",
    "TraceRecord": ".records",
    "DatasetResult": ".run",
    "aevaluate_dataset": ".run",
    "evaluate_dataset": ".run",
}


def __getattr__(name: str) -> _Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    obj = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = obj
    return obj


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
