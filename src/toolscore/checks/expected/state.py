"""The expected-calls check's state: what it knows as a value, merged in order, and its metrics.

:class:`ExpectedState` holds counters (per tool name; successful calls of each gold tool),
the candidate lists of the argument pairing, the latency and cost sums (exact:
:class:`~toolscore._exact.ExactSum`), and what depends on position:

- *anchored* (read from the start of the trace): the Levenshtein column and the trajectory
  steps of the first ``|gold|`` (+ :data:`MAX_TAIL_DETAILS`) calls;
- *a later part* read on its own (:meth:`ExpectedCheck.begin_part`): its first calls as they
  are and its tool names as ids on disk, which a merge after an anchored state turns into
  steps and replays through the column.

:meth:`ExpectedState.metrics` solves the pairing and computes every metric from the state, so
a live snapshot or a merge of parts gives what one pass over the whole trace gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from ... import limits
from ..._exact import ExactAdder, ExactSum
from ...calls import ToolCall
from ...matchers import OptionalArg
from .._base import State
from .approx import ApproxIndex, ApproxLog, pair_approx
from .gold_order import rank
from .metrics import gold_metrics, score_metrics
from .pairing import MISSING, Candidate, gold_groups, pair_tool
from .sequence import BitParallelDistance, ColumnDistance, Segment, distance_tracker, id_blocks

__all__ = [
    "MAX_TAIL_DETAILS",
    "NO_STATS",
    "ExpectedPlan",
    "ExpectedState",
    "Stats",
    "StatsAdder",
    "step_detail",
]

MAX_TAIL_DETAILS = 1000
"""Trace-only trajectory steps kept in ``trajectory_details`` without ``keep_details``."""


class ExpectedPlan:
    """What the gold file fixes for the check: the calls, their groups, the options."""

    def __init__(
        self,
        gold: list[ToolCall],
        strict: bool,
        keep_details: bool,
        exact_pairing_max: int | None = None,
        approx_candidates: int | None = None,
    ) -> None:
        self.gold = gold
        self.strict = strict
        self.keep_details = keep_details
        self.gold_counts: dict[str, int] = {}
        for g in gold:
            self.gold_counts[g.tool] = self.gold_counts.get(g.tool, 0) + 1
        self.exact_pairing_max = (
            limits.exact_pairing_max() if exact_pairing_max is None else exact_pairing_max
        )
        """The most gold calls of a tool paired exactly (more: :mod:`.approx`)."""
        self.approx_candidates = (
            limits.APPROX_PAIRING_CANDIDATES if approx_candidates is None else approx_candidates
        )
        """Past :attr:`exact_pairing_max`, the candidates kept per gold call."""
        cap = self.approx_candidates
        wide = {t for t, n in self.gold_counts.items() if n > self.exact_pairing_max}
        self.groups = [
            group._replace(k=min(group.k, cap)) if group.tool in wide else group
            for group in gold_groups(gold)
        ]
        """The gold calls in groups of one tool and identical args (one candidate list each)."""
        self.by_tool: dict[str, list[int]] = {}
        """Per gold tool, its groups' indices."""
        for i, group in enumerate(self.groups):
            self.by_tool.setdefault(group.tool, []).append(i)
        self.approx: dict[str, ApproxIndex] = {
            tool: ApproxIndex(tool, [self.groups[i] for i in ids], ids, strict)
            for tool, ids in self.by_tool.items()
            if tool in wide
        }
        """The tools paired approximately, with their index."""
        self.group_of = [0] * len(gold)
        for i, group in enumerate(self.groups):
            for p in group.members:
                self.group_of[p] = i
        self.names = ["", *dict.fromkeys(g.tool for g in gold)]
        """Tool names by id, for a part's :class:`~.sequence.IdLog` (0: not a gold name)."""
        self.tail_end = len(gold) + MAX_TAIL_DETAILS if not keep_details else 1 << 62
        """Trajectory details are kept for the calls before this position."""

    @cached_property
    def _tracker(self) -> ColumnDistance | BitParallelDistance:
        return distance_tracker([g.tool for g in self.gold])

    def tracker(self) -> ColumnDistance | BitParallelDistance:
        """A sequence tracker of the gold's tool names at its start (built once a plan)."""
        return self._tracker.fresh()

    @cached_property
    def start_column(self) -> tuple[int, ...]:
        return self._tracker.fresh().snapshot()

    @cached_property
    def live(self) -> dict[str, list[int]]:
        """Per exactly paired gold tool, its groups' indices: where an expected-calls check's
        candidate lists start (a check copies the dict, never the lists)."""
        return {tool: groups for tool, groups in self.by_tool.items() if tool not in self.approx}

    @cached_property
    def members_of(self) -> dict[str, tuple[list[int], list[int]]]:
        """Per exactly paired gold tool, its gold positions in order and each one's group:
        what :meth:`ExpectedState.pairing` reads for every trace of this gold."""
        out: dict[str, tuple[list[int], list[int]]] = {}
        for tool, indices in self.by_tool.items():
            if tool not in self.approx:
                members = sorted(p for i in indices for p in self.groups[i].members)
                out[tool] = (members, [self.group_of[p] for p in members])
        return out


@dataclass(frozen=True)
class Stats:
    """A sum (exact), count, max and min, with the semantics of ``sum``/``max``/``min``."""

    total: ExactSum = field(default_factory=ExactSum)
    count: int = 0
    max: float = 0.0
    min: float = 0.0

    @staticmethod
    def of(values: list[float]) -> Stats:
        return Stats(ExactSum.of(values), len(values), max(values), min(values))

    def merge(self, later: Stats) -> Stats:
        if not later.count:
            return self
        if not self.count:
            return later
        return Stats(
            self.total + later.total,
            self.count + later.count,
            max(self.max, later.max),
            min(self.min, later.min),
        )


NO_STATS = Stats()
"""The stats of no value (frozen: one for every adder that had none)."""


class StatsAdder:
    """:class:`Stats` of values given a batch at a time, as merging each batch's
    :meth:`Stats.of` in gives them (the sum by an :class:`~toolscore._exact.ExactAdder`)."""

    __slots__ = ("_sum", "count", "max", "min")

    def __init__(self) -> None:
        self._sum = ExactAdder()
        self.count = 0
        self.max = 0.0
        self.min = 0.0

    def add(self, values: list[float]) -> None:
        """Add a batch's values (at least one)."""
        top, bottom = max(values), min(values)
        if self.count:  # as Stats.merge does
            top, bottom = max(self.max, top), min(self.min, bottom)
        self.max, self.min = top, bottom
        self.count += len(values)
        self._sum.extend(values)

    def total(self) -> ExactSum:
        """The exact sum of every value added."""
        return self._sum.total()

    def stats(self) -> Stats:
        """The values' :class:`Stats`."""
        if not self.count:
            return NO_STATS
        return Stats(self.total(), self.count, self.max, self.min)


def step_detail(gold: ToolCall | None, tool: str, args: Any, pos: int) -> dict[str, Any]:
    """The trajectory step of the call at position ``pos`` (``gold``: the gold call at that
    position, None past the gold's end)."""
    if gold is None:
        return {
            "step": pos + 1,
            "expected_tool": None,
            "actual_tool": tool,
            "matches": False,
            "expected_args": {},
            "actual_args": args or {},
            "error": "Unnecessary step - not in expected path",
        }
    return {
        "step": pos + 1,
        "expected_tool": gold.tool,
        "actual_tool": tool,
        "matches": _step_matches(gold, tool, args),
        "expected_args": gold.args or {},
        "actual_args": args or {},
    }


def _step_matches(gold: ToolCall, tool: str, targs: Any) -> bool:
    if gold.tool != tool:
        return False
    gargs = gold.args or {}
    if not isinstance(gargs, dict) or not gargs:
        return True
    if not isinstance(targs, dict):
        return False
    for key, expected in gargs.items():
        actual = targs.get(key, MISSING)
        if actual is MISSING:
            if expected.__class__ is not OptionalArg:
                return False
        elif expected != actual:
            return False
    return True


@dataclass(frozen=True)
class ExpectedState(State):
    """What the expected-calls check knows; see the module docstring. Equal states give
    equal metrics; the plan (the gold) is not compared."""

    check: str = field(default="expected", kw_only=True)
    plan: ExpectedPlan | None = field(default=None, compare=False, repr=False)
    calls: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    """Trace calls per tool name, in order of first appearance."""
    anchored: bool = True
    """Read from the start of the trace (else: a later part, read on its own)."""
    column: tuple[int, ...] = ()
    """The Levenshtein tracker's snapshot (anchored)."""
    correct_steps: int = 0
    details: tuple[dict[str, Any], ...] = ()
    """The trajectory steps of the first calls (anchored)."""
    head: tuple[tuple[str, Any], ...] = ()
    """A later part's first calls, ``(tool, args)`` (as many as the trajectory can use)."""
    sequence: tuple[Segment, ...] = ()
    """A later part's tool names, as id log segments."""
    keep: Any = field(default=None, compare=False, repr=False)
    """The id logs whose files ``sequence`` names, kept alive with the state (not pickled)."""
    candidates: tuple[tuple[Candidate, ...], ...] = ()
    """Per gold group (:attr:`ExpectedPlan.groups`), its best trace calls, ranked."""
    approx: dict[str, ApproxLog] = field(default_factory=dict)
    """Per approximately paired tool (:attr:`ExpectedPlan.approx`), its first trace calls."""
    needed: dict[str, int] = field(default_factory=dict)
    """Per gold tool, the gold calls still without a successful trace call."""
    durations: Stats = field(default_factory=Stats)
    costs: Stats = field(default_factory=Stats)
    cost_by_tool: dict[str, ExactSum] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the id logs' owners and without the plan: a state sent to another
        process is merged after a state of that process, whose plan it takes."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _LOCAL}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "keep", None)
        object.__setattr__(self, "plan", None)

    # -- merging ------------------------------------------------------------------------------

    def merge(self, later: ExpectedState) -> ExpectedState:
        if later.anchored and later.calls:
            raise ValueError("a state read from the start of a trace cannot follow another")
        plan = self.plan or later.plan
        assert plan is not None
        offset = self.calls
        calls = offset + later.calls
        if self.anchored:
            anchored = self._anchored_with(later, plan)
        else:
            room = max(0, plan.tail_end - len(self.head))
            anchored = {
                "anchored": False,
                "head": self.head + later.head[:room],
                "sequence": self.sequence + later.sequence,
            }
        counts = dict(self.counts)
        for tool, n in later.counts.items():
            counts[tool] = counts.get(tool, 0) + n
        candidates = tuple(
            mine
            if not theirs
            else tuple(
                sorted(mine + tuple((w, q + offset, c) for w, q, c in theirs), key=rank)[
                    : plan.groups[i].k
                ]
            )
            for i, (mine, theirs) in enumerate(zip(self.candidates, later.candidates, strict=True))
        )
        approx = {
            tool: self.approx.get(tool, _NO_LOG).merge(
                later.approx.get(tool, _NO_LOG),
                offset,
                plan.gold_counts[tool],
                plan.approx_candidates,
            )
            for tool in plan.approx
        }
        needed = dict(self.needed)
        for tool, left in later.needed.items():
            done = plan.gold_counts[tool] - left
            needed[tool] = max(0, needed[tool] - done)
        cost_by_tool = dict(self.cost_by_tool)
        for tool, total in later.cost_by_tool.items():
            mine_total = cost_by_tool.get(tool)
            cost_by_tool[tool] = total if mine_total is None else mine_total + total
        return ExpectedState(
            plan=plan,
            calls=calls,
            counts=counts,
            keep=(self.keep, later.keep),
            candidates=candidates,
            approx=approx,
            needed=needed,
            durations=self.durations.merge(later.durations),
            costs=self.costs.merge(later.costs),
            cost_by_tool=cost_by_tool,
            **anchored,
        )

    def _anchored_with(self, later: ExpectedState, plan: ExpectedPlan) -> dict[str, Any]:
        """The position-dependent fields of this anchored state followed by ``later``."""
        tracker = plan.tracker()
        tracker.restore(self.column)
        names = plan.names
        for ids in id_blocks(later.sequence):
            tracker.replay(ids, names)
        details = list(self.details)
        correct = self.correct_steps
        gold = plan.gold
        for i, (tool, args) in enumerate(later.head[: max(0, plan.tail_end - self.calls)]):
            pos = self.calls + i
            step = step_detail(gold[pos] if pos < len(gold) else None, tool, args, pos)
            correct += step["matches"]
            details.append(step)
        return {
            "anchored": True,
            "column": tracker.snapshot(),
            "correct_steps": correct,
            "details": tuple(details),
        }

    @staticmethod
    def start(plan: ExpectedPlan) -> ExpectedState:
        """The anchored state of no call."""
        return ExpectedState(
            plan=plan,
            column=plan.start_column,
            candidates=tuple(() for _ in plan.groups),
            approx={tool: _NO_LOG for tool in plan.approx},
            needed=dict(plan.gold_counts),
        )

    def anchor(self) -> ExpectedState:
        """This state as if read from the start of the trace (a later part's, alone)."""
        if self.anchored:
            return self
        assert self.plan is not None
        return ExpectedState.start(self.plan).merge(self)

    # -- metrics ------------------------------------------------------------------------------

    def pairing(self) -> dict[int, Candidate]:
        """Gold position -> its paired candidate ``(weight, trace position, arg count)``."""
        plan = self.plan
        assert plan is not None
        out: dict[int, Candidate] = {}
        for tool, indices in plan.by_tool.items():
            m = self.counts.get(tool, 0)
            if m == 0:
                continue
            index = plan.approx.get(tool)
            if index is not None:
                out.update(
                    pair_approx(
                        index,
                        [plan.groups[i] for i in indices],
                        [self.candidates[i] for i in indices],
                        self.approx.get(tool, _NO_LOG),
                        m,
                        plan.approx_candidates,
                    )
                )
                continue
            members, groups = plan.members_of[tool]
            lists = [self.candidates[g] for g in groups]
            chosen = pair_tool(lists, m)
            for p, cands, i in zip(members, lists, chosen, strict=True):
                if i is not None:
                    out[p] = cands[i]
        return out

    def approximate_tools(self) -> list[tuple[str, int, int, bool]]:
        """The tools whose pairing is approximate and has trace calls: ``(tool, gold calls,
        trace calls, signatures capped)``, in gold order."""
        plan = self.plan
        assert plan is not None
        return [
            (tool, plan.gold_counts[tool], self.counts[tool], self.approx[tool].capped)
            for tool in plan.approx
            if self.counts.get(tool, 0)
        ]

    def metrics(self) -> dict[str, Any]:
        """The gold-based metrics in Toolscore's key order, then ``latency_metrics`` and
        ``cost_metrics`` (each only when its total is > 0; the reducer keeps them for file
        traces only)."""
        if not self.anchored:
            return self.anchor().metrics()
        return gold_metrics(self)

    def score_metrics(self) -> dict[str, Any]:
        """The metrics the score and a dataset's record read (see
        :func:`~.metrics.score_metrics`); an anchored state of a check that skipped the
        trajectory steps gives them too."""
        if not self.anchored:
            return self.anchor().score_metrics()
        return score_metrics(self)


_LOCAL = ("keep", "plan")
_NO_LOG = ApproxLog()
