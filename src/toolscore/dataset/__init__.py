"""Datasets: thousands of traces, each scored against its own gold, on all cores or a cluster.

``evaluate_dataset(gold, traces)`` (and ``await aevaluate_dataset(...)``) reads every trace of
a file, directory, glob or fsspec URL, scores each whole against its gold in a worker, and
adds the per-trace records up into a mergeable :class:`Aggregate` (mean, median, p10, grades,
pass rate, pass@k and pass^k by task, per-tool failure and retry rates, findings by kind).
See :mod:`.inputs` for what TRACES may be, :mod:`.gold` for the gold forms, :mod:`.engine`
for where parts run.
"""

from __future__ import annotations

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
