"""The expected-calls check itself: per batch, counters, the column, the candidate lists.

Its state and metrics are in :mod:`.state` and :mod:`.metrics`; the Levenshtein trackers in
:mod:`.sequence`; the argument pairing in :mod:`.pairing`.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Sequence
from fnmatch import fnmatchcase
from itertools import compress
from operator import itemgetter
from typing import Any

from ..._exact import SUM_CHUNK
from ...calls import Batch, Finding, ToolCall
from ...columns import Columns, ListColumns
from ...failed import DEFAULT_FAILURES, FailureRules
from .._base import BaseCheck
from .approx import ApproxRecorder
from .gold_order import neg_weight
from .metrics import extra_metrics
from .pairing import NO_ARGS, Candidate, arg_count, call_weights
from .plans import plan_for
from .sequence import IdLog
from .state import NO_STATS, ExpectedPlan, ExpectedState, StatsAdder, step_detail

__all__ = ["ExpectedCheck", "expected_check"]

_weight = itemgetter(0)
_ONE_BY_ONE = 16
"""Up to this many new candidates for a gold group, each is inserted in place; more are
sorted in with the kept ones at once (2,000 golds of one tool, each offered 2,000 calls:
6.2 s inserted one at a time, 3.6 s sorted in)."""


class ExpectedCheck(BaseCheck):
    """Compares the trace with the gold calls; emits no findings, feeds the reducer.

    Build it with :func:`expected_check`. :meth:`state` is an
    :class:`~.state.ExpectedState`, whose ``metrics()`` gives the gold-based part of
    ``EvaluationResult.metrics`` and the latency and cost metrics.
    """

    name = "expected"
    mergeable = True

    def __init__(
        self,
        gold: Sequence[ToolCall],
        *,
        strict: bool = False,
        keep_details: bool = False,
        arg_view: Callable[[str, list[Any]], list[Any]] | None = None,
        exact_pairing_max: int | None = None,
        approx_candidates: int | None = None,
        trajectory: bool = True,
        free: Sequence[str] = (),
        failures: FailureRules = DEFAULT_FAILURES,
    ) -> None:
        self._failures = failures
        """What counts as a failed call (required-call recall counts successful ones)."""
        self.plan: ExpectedPlan = plan_for(
            gold, strict, keep_details, exact_pairing_max, approx_candidates
        )
        self._arg_view = arg_view
        """How the argument pairing sees a tool's calls' arguments (argument modes that a
        user opted into the score with; None: as recorded)."""
        self.gold = self.plan.gold
        self.strict = strict
        self.keep_details = keep_details
        self._calls = 0
        self._counts: Counter[str] = Counter()
        self._distance = self.plan.tracker()
        self._correct_steps = 0
        self._details: list[dict[str, Any]] = []
        self._still_needed = dict(self.plan.gold_counts)
        self._cands: list[list[Candidate]] = [[] for _ in self.plan.groups]
        """Per gold group, its best trace calls so far, ranked by weight descending then
        position ascending; at most the group's ``k``."""
        self._live = dict(self.plan.live)
        """The exactly paired tools whose candidate lists can still improve (their groups'
        indices)."""
        self._approx = {
            tool: ApproxRecorder(index, self.plan.approx_candidates)
            for tool, index in self.plan.approx.items()
        }
        """The approximately paired tools' logs and candidate lists (:mod:`.approx`)."""
        self._durations: StatsAdder | None = None
        self._costs: StatsAdder | None = None
        """The calls' durations and costs (made at the first)."""
        self._cost_by_tool: dict[str, StatsAdder] = {}
        """Each tool's costs, in the order of the first (their sums, :meth:`_tool_costs`)."""
        self._tool_pending = 0
        """Costs given to :attr:`_cost_by_tool` since its adders last took them in."""
        self._part: IdLog | None = None
        self._head: list[tuple[str, Any]] = []
        self._free = tuple(free)
        """Globs of the tools the gold does not judge (see :meth:`_judged`)."""
        self._is_free: dict[str, bool] = {}
        self._trajectory = trajectory
        """Compare the first calls with the gold's step by step (``trajectory_metrics``);
        off, the state's steps are empty (for :meth:`~.state.ExpectedState.score_metrics`)."""

    def begin_part(self) -> None:
        """Read a later part of a trace on its own: keep its first calls and log its tool
        names (:class:`~.sequence.IdLog`) instead of the position-dependent metrics."""
        if self._calls:
            raise RuntimeError("begin_part() is called before the first batch")
        self._part = IdLog(self.plan.names)

    # -- streaming ----------------------------------------------------------------------------

    def feed(self, batch: Batch) -> list[Finding]:
        """Account for ``batch.calls`` (names and args) and ``batch.done`` (results)."""
        if batch.n_calls:
            cols = batch.columns()
            judged = self._judged(cols) if self._free else cols
            if judged is not None:
                self._feed_calls(judged)
        if batch.n_done:
            self._feed_done(batch.done_columns())
        return []

    def _judged(self, cols: Columns) -> Columns | None:
        """The batch's calls the gold judges: without the calls of free tools (a glob of
        ``free`` names them and the gold does not), None when none is left."""
        is_free = self._is_free
        flags: list[bool] = []
        for tool in cols.tools:
            free = is_free.get(tool)
            if free is None:
                free = is_free[tool] = tool not in self.plan.gold_counts and any(
                    fnmatchcase(tool, glob) for glob in self._free
                )
            flags.append(free)
        if not any(flags):
            return cols
        if all(flags):
            return None
        kept = list(compress(cols.calls(), (not f for f in flags)))
        return ListColumns(kept, "json" if cols.json_values else "any")

    def _feed_calls(self, cols: Columns) -> None:
        tools = cols.tools
        args = cols.args
        pos = self._calls
        self._counts.update(tools)
        if self._part is None:
            self._distance.run(tools)
            if self._trajectory:
                self._steps(tools, args, pos)
        else:
            self._part.record(tools)
            room = self.plan.tail_end - len(self._head)
            if room > 0:
                self._head.extend(zip(tools[:room], args[:room], strict=True))
        live = self._live
        wide = self._approx
        if live or wide:
            view = self._arg_view
            for name, where in cols.by_tool().items():
                if name not in live and name not in wide:
                    continue
                targs = cols.args_of(name)
                if view is not None:
                    targs = view(name, targs)
                recorder = wide.get(name)
                if recorder is not None:
                    recorder.offer(self._cands, targs, where, pos)
                elif not self._offer(live[name], targs, where, pos):
                    del live[name]
        self._calls = pos + cols.n

    def _steps(self, tools: list[str], args: list[Any], pos: int) -> None:
        """The trajectory steps of the calls from position ``pos`` on, and the tail."""
        gold = self.gold
        n_gold = len(gold)
        end = self.plan.tail_end
        if pos < end:
            for i in range(min(len(tools), end - pos)):
                at = pos + i
                step = step_detail(gold[at] if at < n_gold else None, tools[i], args[i], at)
                self._correct_steps += step["matches"]
                self._details.append(step)

    def _offer(self, groups: list[int], targs: list[Any], where: list[int], pos: int) -> bool:
        """Offer a batch's calls of one tool (their args ``targs``, at batch positions
        ``where``, the batch starting at trace position ``pos``) to the tool's gold groups,
        in order; False once none of the groups can improve."""
        dicts: list[dict[str, Any]] | None = None
        saturated = 0
        specs = self.plan.groups
        for g in groups:
            group = specs[g]
            cands = self._cands[g]
            k = group.k
            top = group.max_weight
            if len(cands) >= k and cands[-1][0] >= top:
                saturated += 1  # nothing can beat the worst kept candidate, ever
                continue
            weights: list[int] | None = None
            if group.items:
                if dicts is None:
                    dicts = [a if isinstance(a, dict) else NO_ARGS for a in targs]
                weights = call_weights(group.items, dicts, self.strict)
            offered: Sequence[int]
            if len(cands) < k:
                offered = range(len(where))
            elif weights is None:
                continue  # all weigh 0: none beats a full list
            else:  # only a call weighing more than the worst kept one can get in
                worst = cands[-1][0]
                offered = [j for j, w in enumerate(weights) if w > worst]
            optional = group.optional
            if len(offered) <= max(len(cands), _ONE_BY_ONE):
                for j in offered:
                    w = 0 if weights is None else weights[j]
                    if len(cands) >= k and w <= cands[-1][0]:
                        continue
                    # after every kept candidate of weight >= w (they all come earlier)
                    i = bisect.bisect_right(cands, -w, key=neg_weight)
                    cands.insert(i, (w, pos + where[j], arg_count(targs[j], optional)))
                    if len(cands) > k:
                        cands.pop()
            else:  # more new than kept: the same k best, ties in arrival order, by a stable
                # sort (the kept ones come before the batch's, the batch's in order)
                cands.extend(
                    (
                        0 if weights is None else weights[j],
                        pos + where[j],
                        arg_count(targs[j], optional),
                    )
                    for j in offered
                )
                cands.sort(key=_weight, reverse=True)
                del cands[k:]
            if len(cands) >= k and cands[-1][0] >= top:
                saturated += 1
        return saturated < len(groups)

    def _feed_done(self, cols: Columns) -> None:
        needed = self._still_needed
        if any(needed.values()):
            tools = cols.tools
            ok = Counter(tools)
            for i in cols.failed(self._failures):
                ok[tools[i]] -= 1
            for tool, left in needed.items():
                if left:
                    needed[tool] = max(0, left - ok[tool])
        durations = cols.durations()
        if durations:
            if self._durations is None:
                self._durations = StatsAdder()
            self._durations.add(durations)
        costs = cols.costs()
        if costs:
            if self._costs is None:
                self._costs = StatsAdder()
            self._costs.add([cost for _, cost in costs])
            by_tool: dict[str, list[float]] = {}
            for tool, cost in costs:
                found = by_tool.get(tool)
                if found is None:
                    by_tool[tool] = [cost]
                else:
                    found.append(cost)
            totals = self._cost_by_tool
            for tool, values in by_tool.items():
                mine = totals.get(tool)
                if mine is None:
                    mine = totals[tool] = StatsAdder()
                mine.add(values)
            self._tool_pending += len(costs)
            if self._tool_pending > SUM_CHUNK:  # the tools' pending costs, bounded in all
                for adder in totals.values():
                    adder.total()
                self._tool_pending = 0

    def _tool_costs(self) -> dict[str, Any]:
        """Each tool's exact cost sum."""
        return {tool: adder.total() for tool, adder in self._cost_by_tool.items()}

    # -- the state ----------------------------------------------------------------------------

    def state(self) -> ExpectedState:
        """What the check knows so far (an anchored state, or a later part's)."""
        part = self._part
        common: dict[str, Any] = {
            "plan": self.plan,
            "calls": self._calls,
            "counts": dict(self._counts),
            "candidates": tuple(map(tuple, self._cands)),
            "approx": {tool: rec.log() for tool, rec in self._approx.items()},
            "needed": dict(self._still_needed),
            "durations": NO_STATS if self._durations is None else self._durations.stats(),
            "costs": NO_STATS if self._costs is None else self._costs.stats(),
            "cost_by_tool": self._tool_costs(),
        }
        if part is None:
            return ExpectedState(
                **common,
                column=self._distance.snapshot(),
                correct_steps=self._correct_steps,
                details=tuple(self._details),
            )
        return ExpectedState(
            **common,
            anchored=False,
            head=tuple(self._head),
            sequence=(part.segment(),),
            keep=part,
        )

    def pairing(self) -> dict[int, int]:
        """Gold position -> trace position of the argument pairing."""
        return {g: cand[1] for g, cand in sorted(self.state().pairing().items())}

    def metrics(self) -> dict[str, Any]:
        """The gold-based part of ``EvaluationResult.metrics``, in Toolscore's key order."""
        out = self.state().metrics()
        out.pop("latency_metrics", None)
        out.pop("cost_metrics", None)
        return out

    def extra_metrics(self) -> dict[str, Any]:
        """``latency_metrics`` and ``cost_metrics``, each only when its total is > 0."""
        return extra_metrics(self.state())


def expected_check(
    gold: list[ToolCall],
    *,
    strict: bool = False,
    keep_details: bool = False,
    arg_view: Callable[[str, list[Any]], list[Any]] | None = None,
    exact_pairing_max: int | None = None,
    approx_candidates: int | None = None,
    trajectory: bool = True,
    free: Sequence[str] = (),
    failures: FailureRules = DEFAULT_FAILURES,
) -> ExpectedCheck:
    """The expected-calls check for ``gold``.

    Args:
        gold: the expected calls, in order.
        strict: compare argument types exactly (``1 != 1.0``), recursively.
        keep_details: keep every trace-only step in ``trajectory_details`` (memory then grows
            with the trace); otherwise at most :data:`~.state.MAX_TAIL_DETAILS` are kept.
        arg_view: how the argument pairing sees a tool's column of arguments (see
            :func:`toolscore.hardrules.matching.score_view`).
        exact_pairing_max: the most gold calls of one tool whose argument pairing is exact
            (default :data:`toolscore.limits.EXACT_PAIRING_MAX_GOLD`); a tool with more is
            paired by the bounded approximation of :mod:`.approx`, flagged in
            ``argument_metrics["pairing"]``.
        approx_candidates: past that, the candidates kept per gold call (default
            :data:`toolscore.limits.APPROX_PAIRING_CANDIDATES`).
        trajectory: compare the first calls with the gold's step by step; ``False`` when only
            :meth:`~.state.ExpectedState.score_metrics` is read (a dataset's records).
        free: globs of the tools the gold does not judge: their calls are left out of every
            metric but latency and cost (a tool the gold names is judged all the same).
        failures: what counts as a failed call (:mod:`toolscore.failed`).
    """
    return ExpectedCheck(
        gold,
        strict=strict,
        keep_details=keep_details,
        arg_view=arg_view,
        exact_pairing_max=exact_pairing_max,
        approx_candidates=approx_candidates,
        trajectory=trajectory,
        free=free,
        failures=failures,
    )
