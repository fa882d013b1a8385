"""Baselines: keep what a run scored and found, and fail a later run that is worse.

A baseline holds one small summary per trace (:class:`TraceSummary`) plus an aggregate over
all of them. ``toolscore eval ... --save-baseline FILE`` writes one; ``--baseline FILE``
compares the run with it (:func:`compare`) and fails (exit 1) on a *regression*:

- a trace's score (or, for several traces, the mean score) dropped by more than the tolerance
  (``--baseline-tolerance``, an absolute amount of score: 0.05 is five points; default 0);
- fewer required calls were completed (a required call stopped being made, or now fails);
- a finding that the baseline did not have appeared, or one it had became more frequent.
  Findings are compared by :func:`finding_key` (check, kind, tool, and the rule for forbidden
  calls), never by message text, so rewording a message or moving a call does not count;
- a trace of the baseline was not evaluated, or could no longer be read to its end.

Trace ids, tool names and finding keys holding a credential are stored redacted, each with a
hash of its raw text (:func:`baseline_name`); a run's are named the same way before they are
compared, so they match exactly without the file ever holding the key.

The file is JSON written for diffs: keys sorted, one trace per line::

    {
    "aggregate": {"findings": {...}, "mean_score": 0.74, "required": [1, 2], ...},
    "format": "toolscore-baseline",
    "traces": {
    "examples/guardrails/trace.json": {"calls": 5, "complete": true, "findings": {...}, ...}
    },
    "version": 1
    }

For a dataset (many traces), build a :class:`TraceSummary` per trace with :func:`summarize`
and pass the mapping ``trace_id -> summary`` to :func:`write_baseline` and :func:`compare`;
nothing here reads a trace, so memory is one small record per trace. For more traces than
memory should hold, the streaming forms do the same one trace at a time:
:func:`iter_baseline` (read), :class:`AggregateBuilder`, :class:`Comparer` (compare, in
trace-id order) and :func:`write_baseline_entries` (write, entries sorted by id), as
``toolscore eval`` does on a dataset (:mod:`toolscore.dataset.ci`).

Where things are: the summaries and the aggregate in ``_baseline_summary``, the file in
``_baseline_file``, the comparison in ``_baseline_compare``.
"""

from __future__ import annotations

from ._baseline_compare import MAX_LISTED, Comparer, Comparison, Regression, compare
from ._baseline_file import (
    BASELINE_FORMAT,
    BASELINE_VERSION,
    Baseline,
    baseline_lines,
    dumps_baseline,
    iter_baseline,
    load_baseline,
    write_baseline,
    write_baseline_entries,
)
from ._baseline_summary import (
    AggregateBuilder,
    TraceSummary,
    aggregate,
    baseline_name,
    finding_key,
    summaries_of,
    summarize,
)

__all__ = [
    "BASELINE_FORMAT",
    "BASELINE_VERSION",
    "MAX_LISTED",
    "AggregateBuilder",
    "Baseline",
    "Comparer",
    "Comparison",
    "Regression",
    "TraceSummary",
    "aggregate",
    "baseline_lines",
    "baseline_name",
    "compare",
    "dumps_baseline",
    "finding_key",
    "iter_baseline",
    "load_baseline",
    "summaries_of",
    "summarize",
    "write_baseline",
    "write_baseline_entries",
]
