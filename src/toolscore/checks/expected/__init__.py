"""The expected-calls check: every gold-based metric, computed in one streaming pass.

:class:`ExpectedCheck` (in :mod:`.check`) reads each batch a column at a time and keeps only
state bounded by the gold file (plus one counter per distinct trace tool name), whatever the
length of the trace; its :meth:`~ExpectedCheck.state` is an :class:`ExpectedState`, whose
``metrics()`` are Toolscore 1.10's:

- selection, invocation, tool correctness and redundancy come from per-tool counters;
- sequence accuracy is a Levenshtein distance kept as one DP column (:mod:`.sequence`);
- trajectory is positional, so only the first ``|gold|`` calls are compared;
- argument precision/recall/F1 need Toolscore's one-to-one pairing within a tool name, kept
  as the best candidates of each gold call and solved exactly at the end (:mod:`.pairing`),
  or past a size approximately (:mod:`.approx`);
- required-call recall counts successful calls (``batch.done``) of each gold tool;
- latency and cost totals are exact sums (any split of the trace gives the same bits).

Differences from Toolscore, all deliberate:

- ``trajectory_details`` keeps at most :data:`MAX_TAIL_DETAILS` trace-only tail steps unless
  ``keep_details=True``; when steps are left out, ``trajectory_metrics`` gains the key
  ``"trajectory_details_omitted"`` with their count.
- Non-dict arguments (a list, a string) never crash: they match no gold key, and count
  ``len(args)`` actual arguments as Toolscore does. Non-dict gold args count as ``{}``.
- Non-numeric durations and costs (strings, bools) are skipped instead of crashing the sum.
- The argument pairing is exact up to :data:`toolscore.limits.EXACT_PAIRING_MAX_GOLD` gold
  calls of a tool (Toolscore turns greedy past 12 trace calls of a tool); past it, a bounded
  approximation (:mod:`.approx`), flagged in ``argument_metrics["pairing"]``.
"""

from .check import ExpectedCheck, expected_check
from .choices import ChoicesCheck, ChoicesState, expected_for
from .sequence import (
    BIT_PARALLEL_MIN_GOLD,
    BitParallelDistance,
    ColumnDistance,
    distance_tracker,
)
from .state import MAX_TAIL_DETAILS, ExpectedState

__all__ = [
    "BIT_PARALLEL_MIN_GOLD",
    "MAX_TAIL_DETAILS",
    "BitParallelDistance",
    "ChoicesCheck",
    "ChoicesState",
    "ColumnDistance",
    "ExpectedCheck",
    "ExpectedState",
    "distance_tracker",
    "expected_check",
    "expected_for",
]
