"""The hard rules' states: what a stretch of a trace (a batch, a part read by another
process, the whole trace) leaves behind, and how two consecutive stretches merge.

Every rule but the allowlist and the schemas looks back: "at most once" needs the calls
before, "A before B" whether A came earlier, a data-flow rule whether a source came earlier.
A stretch that does not start the trace cannot decide those on its own, so its state keeps
what the earlier stretch will decide them with, bounded by the rules:

- a count rule: the calls counted, and the first ``max + 1`` calls to its tool (their
  indices), so the merge finds the call that went past ``max``;
- an order rule: whether ``before`` was called, and the first call to ``after`` with no
  ``before`` ahead of it in the stretch;
- a data-flow rule: its first source, and the sink calls ahead of it (at most
  :data:`PENDING_SINKS`).

A state whose stretch starts the trace (``origin``) has nothing pending: merging a stretch
into it turns what the later stretch kept into violations, which the merge returns. Merging
is associative, so a trace read whole, a batch at a time, or in parts by other processes and
merged in order gives the same violations (tests hold this with hypothesis).

Where things are: :class:`Violation` and what both states share in ``_violation``; the
states of the rules read in order (counts, order, allowlist, schemas, match) in ``_seq``; the
data-flow rules' in ``_flow``.
"""

from __future__ import annotations

from ._flow import PENDING_SINKS, FlowRun, FlowState
from ._seq import IN_PLACES, SeqRun, SeqState, head_lines
from ._violation import Places as Places
from ._violation import Source as Source
from ._violation import Violation

__all__ = [
    "IN_PLACES",
    "PENDING_SINKS",
    "FlowRun",
    "FlowState",
    "SeqRun",
    "SeqState",
    "Violation",
    "head_lines",
]
