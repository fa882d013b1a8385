"""The expected-calls check: every gold-based metric, computed in one streaming pass.

The check keeps only state bounded by the gold file (plus one counter per distinct trace tool
name), whatever the length of the trace:

- selection, invocation, tool correctness and redundancy come from per-tool counters;
- sequence accuracy is a Levenshtein distance kept as one DP column over the gold names,
  updated per trace call (bit-parallel, Myers/Hyyrö, on Python ints for all but tiny golds);
- trajectory is positional, so only the first ``|gold|`` calls are compared;
- argument precision/recall/F1 need Toolscore's one-to-one pairing within a tool name. For a
  tool with ``k`` gold calls, each gold call keeps its ``k`` best candidates ``(weight, trace
  index, arg count)``; an exchange argument shows the assignment Toolscore's exact search picks
  (most pairs, then most matched arguments, then the lexicographically smallest choice in gold
  order, "skip" before the earliest trace call) only ever uses those, so the small assignment is
  solved exactly at the end. Unlike Toolscore, which turns greedy past 12 trace calls of a
  tool, this is exact at any size;
- required-call recall counts successful calls (``batch.done``) of each gold tool.

Cost: a trace call costs a few microseconds (it is weighed against the gold calls of its tool
until their candidate lists cannot improve). The final assignment is skipped when every gold
call's best candidate is distinct (the usual case); otherwise it is solved by successive
shortest paths, about cubic in the gold calls of one tool: 0.7 s for 500 distinct gold calls
of one tool against 500 trace calls, minutes for 2000 against 2000.

Differences from Toolscore, all deliberate:

- ``trajectory_details`` keeps at most :data:`MAX_TAIL_DETAILS` trace-only tail steps unless
  ``keep_details=True``; when steps are left out, ``trajectory_metrics`` gains the key
  ``"trajectory_details_omitted"`` with their count.
- Non-dict arguments (a list, a string) never crash: they match no gold key, and count
  ``len(args)`` actual arguments as Toolscore does. Non-dict gold args count as ``{}``.
- Non-numeric durations and costs (strings, bools) are skipped instead of crashing the sum.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any

from ..calls import Batch, Finding, ToolCall
from ..columns import Columns
from ..matchers import compare_values
from ._base import BaseCheck

__all__ = ["BIT_PARALLEL_MIN_GOLD", "MAX_TAIL_DETAILS", "ExpectedCheck", "expected_check"]

MAX_TAIL_DETAILS = 1000
"""Trace-only trajectory steps kept in ``trajectory_details`` without ``keep_details``."""

BIT_PARALLEL_MIN_GOLD = 2
"""Gold lengths from which the bit-parallel Levenshtein column is used (measured faster)."""

_MISSING = object()
_PLAIN = (str, int, float, bool, type(None))


# -- sequence: Levenshtein over tool names, one column at a time ----------------------------


class _ColumnDistance:
    """Levenshtein distance to a fixed gold name list, one plain DP column per trace name."""

    __slots__ = ("col", "gold")

    def __init__(self, gold: Sequence[str]) -> None:
        self.gold = list(gold)
        self.col = list(range(len(self.gold) + 1))

    def step(self, name: str) -> None:
        col = self.col
        diag = col[0]
        col[0] = diag + 1
        i = 1
        for g in self.gold:
            up = col[i]
            best = diag if g == name else diag + 1
            if up + 1 < best:
                best = up + 1
            if col[i - 1] + 1 < best:
                best = col[i - 1] + 1
            col[i] = best
            diag = up
            i += 1

    def run(self, names: Iterable[str]) -> None:
        for name in names:
            self.step(name)

    def replay(self, ids: Iterable[int], names: list[str]) -> None:
        """Step through names given as ids into ``names`` (see :class:`_PartRecorder`)."""
        self.run(map(names.__getitem__, ids))

    @property
    def distance(self) -> int:
        return self.col[-1]


class _BitParallelDistance:
    """The same distance by Hyyrö's bit-vector form of Myers' algorithm.

    Bit ``i`` of the vertical delta vectors stands for gold row ``i + 1``; a trace name costs a
    dozen integer operations however long the gold list is.
    """

    __slots__ = ("dist", "full", "peq", "top", "vn", "vp")

    def __init__(self, gold: Sequence[str]) -> None:
        m = len(gold)
        peq: dict[str, int] = {}
        for i, name in enumerate(gold):
            peq[name] = peq.get(name, 0) | (1 << i)
        self.peq = peq
        self.full = (1 << m) - 1
        self.top = 1 << (m - 1)
        self.vp = self.full
        self.vn = 0
        self.dist = m

    def step(self, name: str) -> None:
        self.run([name])

    def run(self, names: Iterable[str]) -> None:
        """Step through ``names``."""
        self.run_masks(map(self.peq.get, names, repeat(0)))

    def replay(self, ids: Iterable[int], names: list[str]) -> None:
        """Step through names given as ids into ``names`` (see :class:`_PartRecorder`)."""
        masks = [self.peq.get(name, 0) for name in names]
        self.run_masks(map(masks.__getitem__, ids))

    def run_masks(self, masks: Iterable[int]) -> None:
        """Step through names given as their match masks; the loop keeps the state in
        locals."""
        top = self.top
        full = self.full
        vp = self.vp
        vn = self.vn
        dist = self.dist
        for mask in masks:
            x = mask | vn
            d0 = (((x & vp) + vp) ^ vp) | x
            hp = vn | ~(d0 | vp)
            hn = d0 & vp
            if hp & top:
                dist += 1
            elif hn & top:
                dist -= 1
            hp = (hp << 1) | 1
            vp = ((hn << 1) | ~(d0 | hp)) & full
            vn = hp & d0 & full
        self.vp = vp
        self.vn = vn
        self.dist = dist

    @property
    def distance(self) -> int:
        return self.dist


def _distance_tracker(gold: Sequence[str]) -> _ColumnDistance | _BitParallelDistance:
    if len(gold) >= BIT_PARALLEL_MIN_GOLD:
        return _BitParallelDistance(gold)
    return _ColumnDistance(gold)


# -- arguments: per-gold best candidates and the exact assignment ---------------------------


def _freeze(value: Any) -> Any:
    """A hashable, type-exact key for plain JSON values; raises TypeError for anything else."""
    if isinstance(value, dict):
        return ("d", tuple((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    if isinstance(value, _PLAIN):
        return (type(value).__name__, value)
    raise TypeError


def _arg_count(args: Any) -> int:
    if not args:
        return 0
    try:
        return len(args)
    except TypeError:
        return 0


class _Group:
    """Gold calls of one tool with identical args: same weights, so one candidate list."""

    __slots__ = ("cands", "items", "k", "max_weight", "members")

    def __init__(self, items: list[tuple[Any, Any]] | None, k: int) -> None:
        self.items = items
        """The gold ``(key, value)`` pairs, or None when the gold args are None."""
        self.k = k
        """How many candidates to keep: the tool's number of gold calls."""
        self.max_weight = len(items) if items else 0
        self.cands: list[tuple[int, int, int]] = []
        """Best trace calls so far as ``(weight, trace position, arg count)``, ranked by
        weight descending then position ascending; at most ``k``."""
        self.members: list[int] = []
        """Gold positions in this group."""


def _rank(candidate: tuple[int, int, int]) -> tuple[int, int]:
    """Candidates rank by weight, most first, then by position, earliest first."""
    return (-candidate[0], candidate[1])


def _lenient_weight(items: list[tuple[Any, Any]], args: dict[str, Any]) -> int:
    w = 0
    for key, expected in items:
        actual = args.get(key, _MISSING)
        if actual is _MISSING:
            continue
        if (expected.__class__ is actual.__class__ and expected == actual) or compare_values(
            expected, actual
        ):
            w += 1
    return w


def _strict_weight(items: list[tuple[Any, Any]], args: dict[str, Any]) -> int:
    w = 0
    for key, expected in items:
        actual = args.get(key, _MISSING)
        if actual is not _MISSING and compare_values(expected, actual, strict=True):
            w += 1
    return w


def _min_cost_assignment(edges: list[list[tuple[int, int]]]) -> list[int]:
    """Assign every row a distinct column at least total cost (successive shortest paths).

    Args:
        edges: per row, ``(column, cost)`` pairs with costs ``>= 0``. A complete assignment
            must exist.

    Returns:
        The column of each row.
    """
    n = len(edges)
    u = [0] * n
    v: dict[int, int] = {}
    col_row: dict[int, int] = {}
    row_col = [0] * n
    for s in range(n):
        dist: dict[int, int] = {}
        pred: dict[int, int] = {}
        done: dict[int, int] = {}
        heap: list[tuple[int, int]] = []
        for c, w in edges[s]:
            d = w - u[s] - v.get(c, 0)
            if c not in dist or d < dist[c]:
                dist[c] = d
                pred[c] = s
                heapq.heappush(heap, (d, c))
        sink: int | None = None
        delta = 0
        while heap:
            d, c = heapq.heappop(heap)
            if c in done or d != dist[c]:
                continue
            done[c] = d
            r = col_row.get(c)
            if r is None:
                sink, delta = c, d
                break
            base = d - u[r]
            for c2, w in edges[r]:
                if c2 in done:
                    continue
                nd = base + w - v.get(c2, 0)
                if c2 not in dist or nd < dist[c2]:
                    dist[c2] = nd
                    pred[c2] = r
                    heapq.heappush(heap, (nd, c2))
        if sink is None:  # pragma: no cover - the callers always leave an assignment possible
            raise RuntimeError("no complete assignment")
        u[s] += delta
        for c, d in done.items():
            if c != sink:
                v[c] = v.get(c, 0) + d - delta
                u[col_row[c]] += delta - d
        c = sink
        while True:
            r = pred[c]
            prev = row_col[r]
            row_col[r] = c
            col_row[c] = r
            if r == s:
                break
            c = prev
    return row_col


def _pair_tool(golds: list[list[tuple[int, int, int]]], m: int) -> list[int | None]:
    """Toolscore's exact pairing for one tool, from each gold's candidate list.

    Args:
        golds: per gold call of the tool, in gold order, its candidates ``(weight, trace
            position, arg count)`` ranked by weight descending then position ascending.
        m: the number of trace calls of the tool (> 0).

    Returns:
        Per gold call, the index into its candidate list it is paired with, or None.
    """
    n = len(golds)
    # Fast path: every gold's best candidate is distinct, so each can take it (the result then
    # has all n pairs, each at its maximum weight and earliest such position).
    firsts = {cands[0][1] for cands in golds}
    if len(firsts) == n and m >= n:
        return [0] * n
    # Every optimal assignment has min(n, m) pairs, and with m < n every trace call of the tool
    # is a candidate of every gold, so: rows = golds when m >= n, else rows = trace calls; a
    # complete assignment of the rows then has the most pairs. What is left to maximize is the
    # weight, then the lexicographic preference in gold order (skip first, then candidates by
    # position), encoded as a penalty below one weight unit: rank * base**(n - 1 - p).
    base = n + 1
    weight_unit = base**n
    values: dict[tuple[int, int], int] = {}
    scale = weight_unit
    for p, cands in enumerate(golds):
        scale //= base
        rank_of = {pos: rank for rank, pos in enumerate(sorted(c[1] for c in cands), 1)}
        for w, pos, _ in cands:
            values[p, pos] = w * weight_unit - rank_of[pos] * scale
    top = max(values.values())
    by_gold = m >= n
    rows: dict[int, list[tuple[int, int]]] = {}
    for (p, pos), value in values.items():
        row, col = (p, pos) if by_gold else (pos, p)
        rows.setdefault(row, []).append((col, top - value))
    keys = list(rows)
    cols = _min_cost_assignment([rows[k] for k in keys])
    chosen: dict[int, int] = {}
    for row, col in zip(keys, cols, strict=True):
        p, pos = (row, col) if by_gold else (col, row)
        chosen[p] = pos
    out: list[int | None] = []
    for p, cands in enumerate(golds):
        taken = chosen.get(p)
        out.append(None if taken is None else next(i for i, c in enumerate(cands) if c[1] == taken))
    return out


# -- a part of a trace, read in another process ----------------------------------------------


class _PartRecorder:
    """What a part of a trace read in another process keeps for :meth:`ExpectedCheck.merge_part`.

    Two metrics depend on the calls before the part, which that process does not see: the
    trajectory (positional) and the Levenshtein column. So the part keeps its first calls
    (as many as the trajectory can use) and writes its sequence of tool names to ``path`` as
    4-byte ids into ``names`` (0: not a gold name), to be replayed after the calls before it.
    """

    def __init__(self, gold_names: list[str], limit: int, path: str) -> None:
        self.names = ["", *dict.fromkeys(gold_names)]
        self._ids = {name: i for i, name in enumerate(self.names) if i}
        self.head: list[tuple[str, Any]] = []
        self.limit = limit
        self.path = path
        self._file = open(path, "wb")

    def record(self, tools: list[str], args: list[Any]) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head.extend(zip(tools[:room], args[:room], strict=True))
        array("I", map(self._ids.get, tools, repeat(0))).tofile(self._file)

    def close(self) -> None:
        self._file.close()


def _id_blocks(path: str) -> Iterator[array[int]]:
    """The ids a :class:`_PartRecorder` wrote, in arrays of at most 65,536."""
    with open(path, "rb") as fh:
        while True:
            block = array("I")
            try:
                block.fromfile(fh, 1 << 16)
            except EOFError:
                if block:
                    yield block
                return
            yield block


# -- the check ------------------------------------------------------------------------------


def _prf(correct: int, expected: int, actual: int, vacuous: int) -> dict[str, float]:
    if expected == 0 and actual == 0 and vacuous > 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    precision = correct / actual if actual > 0 else 0.0
    recall = correct / expected if expected > 0 else 0.0
    f1 = 2 * (precision * recall) / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _step_matches(gold: ToolCall, tool: str, targs: Any) -> bool:
    if gold.tool != tool:
        return False
    gargs = gold.args or {}
    if not isinstance(gargs, dict) or not gargs:
        return True
    if not isinstance(targs, dict):
        return False
    for key, expected in gargs.items():
        actual = targs.get(key, _MISSING)
        if actual is _MISSING or expected != actual:
            return False
    return True


class ExpectedCheck(BaseCheck):
    """Compares the trace with the gold calls; emits no findings, feeds the reducer.

    Build it with :func:`expected_check`. After :meth:`finish`, :meth:`metrics` returns the
    gold-based part of ``EvaluationResult.metrics`` and :meth:`extra_metrics` the latency and
    cost metrics (present only when their totals are positive).
    """

    name = "expected"
    mergeable = True

    def __init__(
        self, gold: Sequence[ToolCall], *, strict: bool = False, keep_details: bool = False
    ) -> None:
        self.gold = list(gold)
        self.strict = strict
        self.keep_details = keep_details
        names = [g.tool for g in self.gold]
        self._gold_counts: dict[str, int] = {}
        for name in names:
            self._gold_counts[name] = self._gold_counts.get(name, 0) + 1
        self._calls = 0
        self._counts: Counter[str] = Counter()
        self._distance = _distance_tracker(names)
        self._correct_steps = 0
        self._details: list[dict[str, Any]] = []
        self._tail_omitted = 0
        self._still_needed = dict(self._gold_counts)
        self._weigh: Callable[[list[tuple[Any, Any]], dict[str, Any]], int] = (
            _strict_weight if strict else _lenient_weight
        )
        self._groups: dict[str, list[_Group]] = {}
        self._group_of: list[_Group] = []
        self._build_groups()
        self._live = {tool: list(groups) for tool, groups in self._groups.items()}
        """The tools whose candidate lists can still improve."""
        self._tail_end = len(self.gold) + MAX_TAIL_DETAILS if not keep_details else 1 << 62
        self._durations = _Stats()
        self._costs = _Stats()
        self._cost_by_tool: dict[str, float] = {}
        self._pairing: dict[int, tuple[int, int, int]] | None = None
        self._part: _PartRecorder | None = None

    def record_part(self, path: str) -> None:
        """Read a part of a trace for :meth:`merge_part` (in the process that reads it):
        keep its first calls and write its tool-name sequence to ``path`` instead of the
        position-dependent metrics."""
        self._part = _PartRecorder([g.tool for g in self.gold], self._tail_end, path)

    def _build_groups(self) -> None:
        keyed: dict[tuple[str, Any], _Group] = {}
        for pos, g in enumerate(self.gold):
            args = g.args
            items: list[tuple[Any, Any]] | None
            if args is None:
                key: Any = None
                items = None
            else:
                items = list(args.items()) if isinstance(args, dict) else []
                try:
                    key = ("a", _freeze(items))
                except TypeError:
                    key = ("id", pos)
            group = keyed.get((g.tool, key))
            if group is None:
                group = _Group(items, self._gold_counts[g.tool])
                keyed[(g.tool, key)] = group
                self._groups.setdefault(g.tool, []).append(group)
            group.members.append(pos)
            self._group_of.append(group)

    # -- streaming ----------------------------------------------------------------------------

    def feed(self, batch: Batch) -> list[Finding]:
        """Account for ``batch.calls`` (names and args) and ``batch.done`` (results)."""
        if batch.n_calls:
            self._feed_calls(batch.columns())
        if batch.n_done:
            self._feed_done(batch.done_columns())
        return []

    def _feed_calls(self, cols: Columns) -> None:
        tools = cols.tools
        args = cols.args
        pos = self._calls
        self._counts.update(tools)
        if self._part is None:
            self._distance.run(tools)
            self._steps(tools, args, pos)
        else:
            self._part.record(tools, args)
        live = self._live
        if live:
            for i, name in enumerate(tools):
                tool_groups = live.get(name)
                if tool_groups is not None and not self._offer(tool_groups, args[i], pos + i):
                    del live[name]
        self._calls = pos + cols.n

    def _steps(self, tools: list[str], args: list[Any], pos: int) -> None:
        """The trajectory steps of the calls from position ``pos`` on, and the tail."""
        n_gold = len(self.gold)
        n = len(tools)
        if pos < self._tail_end:
            for i in range(min(n, self._tail_end - pos)):
                if pos + i < n_gold:
                    self._trajectory_step(self.gold[pos + i], tools[i], args[i], pos + i)
                else:
                    self._tail_step(tools[i], args[i], pos + i)
        if pos + n > self._tail_end:
            self._tail_omitted += pos + n - max(pos, self._tail_end)

    def _trajectory_step(self, gold: ToolCall, tool: str, args: Any, pos: int) -> None:
        matches = _step_matches(gold, tool, args)
        if matches:
            self._correct_steps += 1
        self._details.append(
            {
                "step": pos + 1,
                "expected_tool": gold.tool,
                "actual_tool": tool,
                "matches": matches,
                "expected_args": gold.args or {},
                "actual_args": args or {},
            }
        )

    def _tail_step(self, tool: str, args: Any, pos: int) -> None:
        self._details.append(
            {
                "step": pos + 1,
                "expected_tool": None,
                "actual_tool": tool,
                "matches": False,
                "expected_args": {},
                "actual_args": args or {},
                "error": "Unnecessary step - not in expected path",
            }
        )

    def _offer(self, tool_groups: list[_Group], args: Any, pos: int) -> bool:
        """Offer trace call ``pos`` to the tool's gold groups; False once none can improve."""
        plain = args if isinstance(args, dict) else None
        count = -1
        saturated = 0
        for group in tool_groups:
            cands = group.cands
            full = len(cands) >= group.k
            if full and cands[-1][0] >= group.max_weight:
                saturated += 1  # nothing can beat the worst kept candidate, ever
                continue
            items = group.items
            w = self._weigh(items, plain) if items and plain else 0
            if full and w <= cands[-1][0]:
                continue
            if count < 0:
                count = _arg_count(args)
            i = len(cands)
            while i and cands[i - 1][0] < w:
                i -= 1
            cands.insert(i, (w, pos, count))
            if len(cands) > group.k:
                cands.pop()
        return saturated < len(tool_groups)

    def _feed_done(self, cols: Columns) -> None:
        needed = self._still_needed
        if any(needed.values()):
            tools = cols.tools
            ok = Counter(tools)
            ok.subtract(tools[i] for i in cols.failed())
            for tool, left in needed.items():
                if left:
                    needed[tool] = max(0, left - ok[tool])
        durations = cols.durations()
        if durations:
            self._durations.add_all(durations)
        costs = cols.costs()
        if costs:
            by_tool = self._cost_by_tool
            for tool, cost in costs:
                by_tool[tool] = by_tool.get(tool, 0.0) + cost
            self._costs.add_all([cost for _, cost in costs])

    def part_state(self) -> dict[str, Any]:
        part = self._part
        if part is None:
            raise RuntimeError("record_part() was not called before reading the part")
        part.close()
        return {
            "calls": self._calls,
            "counts": dict(self._counts),
            "head": part.head,
            "sequence": part.path,
            "names": part.names,
            "candidates": [g.cands for groups in self._groups.values() for g in groups],
            "needed": dict(self._still_needed),
            "durations": self._durations.state(),
            "costs": self._costs.state(),
            "cost_by_tool": dict(self._cost_by_tool),
        }

    def merge_part(self, state: dict[str, Any], calls: int, lines: int) -> list[Finding]:
        offset = self._calls
        head = state["head"]
        self._steps([tool for tool, _ in head], [args for _, args in head], offset)
        rest = state["calls"] - len(head)  # past the trajectory's reach
        if rest > 0:
            self._tail_omitted += rest
        for ids in _id_blocks(state["sequence"]):
            self._distance.replay(ids, state["names"])
        self._counts.update(state["counts"])
        groups = [g for groups in self._groups.values() for g in groups]
        for group, theirs in zip(groups, state["candidates"], strict=True):
            if theirs:
                moved = [(w, pos + offset, count) for w, pos, count in theirs]
                group.cands = sorted(group.cands + moved, key=_rank)[: group.k]
        for tool, left in state["needed"].items():
            done = self._gold_counts[tool] - left
            self._still_needed[tool] = max(0, self._still_needed[tool] - done)
        self._durations.merge(state["durations"])
        self._costs.merge(state["costs"])
        for tool, cost in state["cost_by_tool"].items():
            self._cost_by_tool[tool] = self._cost_by_tool.get(tool, 0.0) + cost
        self._calls = offset + state["calls"]
        return []

    def finish(self) -> list[Finding]:
        """Solve the argument pairing; no findings."""
        if self._pairing is None:
            self._pairing = self._solve()
        return []

    # -- the end of the stream --------------------------------------------------------------

    def _solve(self) -> dict[int, tuple[int, int, int]]:
        pairing: dict[int, tuple[int, int, int]] = {}
        for tool, tool_groups in self._groups.items():
            m = self._counts.get(tool, 0)
            if m == 0:
                continue
            members = sorted(p for group in tool_groups for p in group.members)
            lists = [self._group_of[p].cands for p in members]
            chosen = _pair_tool(lists, m)
            for p, cands, i in zip(members, lists, chosen, strict=True):
                if i is not None:
                    pairing[p] = cands[i]
        return pairing

    def pairing(self) -> dict[int, int]:
        """Gold position -> trace position of the argument pairing (after :meth:`finish`)."""
        self.finish()
        assert self._pairing is not None
        return {g: cand[1] for g, cand in sorted(self._pairing.items())}

    def metrics(self) -> dict[str, Any]:
        """This check's part of ``EvaluationResult.metrics``, in Toolscore's key order."""
        self.finish()
        return {
            "invocation_accuracy": self._invocation(),
            "selection_accuracy": self._selection(),
            "tool_correctness_metrics": self._tool_correctness(),
            "sequence_metrics": self._sequence(),
            "trajectory_metrics": self._trajectory(),
            "argument_metrics": self._arguments(),
            "efficiency_metrics": self._efficiency(),
            "required_call_recall": self._required_call_recall(),
        }

    def extra_metrics(self) -> dict[str, Any]:
        """``latency_metrics`` and ``cost_metrics``, each only when its total is > 0."""
        out: dict[str, Any] = {}
        d = self._durations
        if d.total > 0:
            out["latency_metrics"] = {
                "total_duration": d.total,
                "average_duration": d.total / d.count,
                "max_duration": d.max,
                "min_duration": d.min,
            }
        c = self._costs
        if c.total > 0:
            out["cost_metrics"] = {
                "total_cost": c.total,
                "average_cost": c.total / c.count,
                "cost_by_tool": dict(self._cost_by_tool),
            }
        return out

    def _invocation(self) -> float:
        if not self.gold and not self._calls:
            return 1.0
        if not self.gold or not self._calls:
            return 0.0
        gold_names = self._gold_counts.keys()
        trace_names = self._counts.keys()
        correct = len(gold_names & trace_names)
        penalty = len(trace_names - gold_names) + len(gold_names - trace_names)
        return min(1.0, max(0.0, (correct - penalty * 0.5) / len(gold_names)))

    def _selection(self) -> float:
        if not self._calls:
            return 1.0 if not self.gold else 0.0
        if not self.gold:
            return 0.0
        hits = sum(n for name, n in self._counts.items() if name in self._gold_counts)
        return hits / self._calls

    def _tool_correctness(self) -> dict[str, Any]:
        called = sorted(self._counts)
        if not self.gold:
            return {
                "tool_correctness": 1.0 if not self._calls else 0.0,
                "expected_tools": [],
                "called_tools": called,
                "missing_tools": [],
                "extra_tools": list(called),
                "correct_count": 0,
                "total_expected": 0,
            }
        expected = self._gold_counts.keys()
        trace = self._counts.keys()
        correct = len(expected & trace)
        return {
            "tool_correctness": correct / len(expected),
            "expected_tools": sorted(expected),
            "called_tools": called,
            "missing_tools": sorted(expected - trace),
            "extra_tools": sorted(trace - expected),
            "correct_count": correct,
            "total_expected": len(expected),
            "strict_order": False,
        }

    def _sequence(self) -> dict[str, float]:
        d = self._distance.distance
        normalized = d / max(len(self.gold), self._calls, 1)
        return {
            "edit_distance": float(d),
            "normalized_distance": normalized,
            "sequence_accuracy": 1.0 - normalized,
        }

    def _trajectory(self) -> dict[str, Any]:
        n, m = len(self.gold), self._calls
        if not n:
            out: dict[str, Any] = {
                "trajectory_accuracy": 1.0 if not m else 0.0,
                "step_match_rate": 1.0 if not m else 0.0,
                "path_efficiency": 1.0,
                "correct_steps": 0,
                "total_expected_steps": 0,
                "trajectory_details": [],
            }
            return out
        if not m:
            return {
                "trajectory_accuracy": 0.0,
                "step_match_rate": 0.0,
                "path_efficiency": 0.0,
                "correct_steps": 0,
                "total_expected_steps": n,
                "trajectory_details": [
                    self._missing_step(i, "Agent did not execute this step") for i in range(n)
                ],
            }
        details = list(self._details)
        if m < n:
            # Gold-only steps go before nothing: the trace is shorter, so no tail follows.
            details.extend(
                self._missing_step(i, "Agent stopped early - step not executed")
                for i in range(m, n)
            )
        rate = self._correct_steps / n
        efficiency = n / m if m > n else 1.0
        out = {
            "trajectory_accuracy": rate * efficiency,
            "step_match_rate": rate,
            "path_efficiency": efficiency,
            "correct_steps": self._correct_steps,
            "total_expected_steps": n,
            "trajectory_details": details,
        }
        if self._tail_omitted:
            out["trajectory_details_omitted"] = self._tail_omitted
        return out

    def _missing_step(self, i: int, error: str) -> dict[str, Any]:
        g = self.gold[i]
        return {
            "step": i + 1,
            "expected_tool": g.tool,
            "actual_tool": None,
            "matches": False,
            "expected_args": g.args or {},
            "actual_args": {},
            "error": error,
        }

    def _arguments(self) -> dict[str, float]:
        if not self.gold and not self._calls:
            return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
        if not self.gold or not self._calls:
            return {"precision": 0.0, "recall": 0.0, "f1": 0.0}
        assert self._pairing is not None
        correct = expected = actual = vacuous = 0
        for pos, g in enumerate(self.gold):
            cand = self._pairing.get(pos)
            if g.args is None:
                if cand is not None:
                    vacuous += 1
                continue
            n_expected = len(g.args) if isinstance(g.args, dict) else 0
            if cand is None:
                expected += n_expected
                continue
            w, _, n_actual = cand
            correct += w
            expected += n_expected
            actual += n_actual
            if n_expected == 0 and n_actual == 0:
                vacuous += 1
        return _prf(correct, expected, actual, vacuous)

    def _efficiency(self) -> dict[str, Any]:
        if not self._calls:
            return {"redundant_count": 0, "total_calls": 0, "redundant_rate": 0.0}
        gold = self._gold_counts
        redundant = 0
        for name, n in self._counts.items():
            extra = n - gold.get(name, 0)
            if extra > 0:
                redundant += extra
        return {
            "redundant_count": redundant,
            "total_calls": self._calls,
            "redundant_rate": redundant / self._calls,
        }

    def _required_call_recall(self) -> float | None:
        if not self.gold:
            return None
        met = len(self.gold) - sum(self._still_needed.values())
        return met / len(self.gold)


class _Stats:
    """A running sum, count, max and min with the semantics of ``sum``/``max``/``min``."""

    __slots__ = ("count", "max", "min", "total")

    def __init__(self) -> None:
        self.total: float = 0
        self.count = 0
        self.max: float = 0.0
        self.min: float = 0.0

    def state(self) -> tuple[float, int, float, float]:
        return (self.total, self.count, self.max, self.min)

    def merge(self, other: tuple[float, int, float, float]) -> None:
        """Add another run's totals (the sum of the two sums: equal to a sum in one pass
        within rounding)."""
        total, count, high, low = other
        if not count:
            return
        if self.count == 0:
            self.max, self.min = high, low
        else:
            self.max = max(self.max, high)
            self.min = min(self.min, low)
        self.total += total
        self.count += count

    def add_all(self, values: list[float]) -> None:
        """Add ``values`` (not empty), in order: ``total`` is summed as ``sum`` would."""
        high = max(values)
        low = min(values)
        if self.count == 0:
            self.max, self.min = high, low
        else:
            if high > self.max:
                self.max = high
            if low < self.min:
                self.min = low
        self.total = sum(values, self.total)
        self.count += len(values)


def expected_check(
    gold: list[ToolCall], *, strict: bool = False, keep_details: bool = False
) -> ExpectedCheck:
    """The expected-calls check for ``gold``.

    Args:
        gold: the expected calls, in order.
        strict: compare argument types exactly (``1 != 1.0``), recursively.
        keep_details: keep every trace-only step in ``trajectory_details`` (memory then grows
            with the trace); otherwise at most :data:`MAX_TAIL_DETAILS` are kept.
    """
    return ExpectedCheck(gold, strict=strict, keep_details=keep_details)
