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
call's best candidate is distinct (the usual case); otherwise it is solved on small integers,
first the most matched arguments (the Hungarian method: Hopcroft-Karp phases on the tight
edges, a Dijkstra for each dual step), then the preference in gold order (exchanges along
alternating cycles among the optimal pairings). Measured with best candidates colliding
(gold ``{"a": 1, "b": i}``, trace ``{"a": 1, "b": j % 700}``): 0.02 s for 500 distinct gold
calls of one tool against 500 trace calls (28 s before), 0.25 s for 2000 against 2000 (before:
killed, out of memory, after 2 minutes), 0.17 s for 2000 against 300 (15 s before); building
the 2000 x 2000 candidate lists takes 3-4 s (every trace call enters the lists of all 2000
gold calls until they fill). Denser ties cost more: 2.6 s for 2000 against 2000 and 8 s for
2000 against 1999 when the weights depend only on which of six kinds the gold call and the
trace call are.

Differences from Toolscore, all deliberate:

- ``trajectory_details`` keeps at most :data:`MAX_TAIL_DETAILS` trace-only tail steps unless
  ``keep_details=True``; when steps are left out, ``trajectory_metrics`` gains the key
  ``"trajectory_details_omitted"`` with their count.
- Non-dict arguments (a list, a string) never crash: they match no gold key, and count
  ``len(args)`` actual arguments as Toolscore does. Non-dict gold args count as ``{}``.
- Non-numeric durations and costs (strings, bools) are skipped instead of crashing the sum.
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from operator import add
from typing import Any

from ..calls import Batch, Finding, ToolCall
from ..columns import Columns
from ..matchers import compare_values, lenient_str_misses
from ._base import BaseCheck

__all__ = ["BIT_PARALLEL_MIN_GOLD", "MAX_TAIL_DETAILS", "ExpectedCheck", "expected_check"]

MAX_TAIL_DETAILS = 1000
"""Trace-only trajectory steps kept in ``trajectory_details`` without ``keep_details``."""

BIT_PARALLEL_MIN_GOLD = 2
"""Gold lengths from which the bit-parallel Levenshtein column is used (measured faster)."""
STEP_TABLE_MAX = 1 << 16
"""Steps of the bit-parallel column kept in its table at most (a few MB)."""

_MISSING = object()
_NO_ARGS: dict[str, Any] = {}
"""The args of a call whose args are not a dict: they match no gold key."""
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
    dozen integer operations however long the gold list is. The column's state (the two
    vectors) takes few values in practice, so each step is also kept in a table, keyed by
    state and match mask: a trace name then costs one lookup. The table stops growing at
    :data:`STEP_TABLE_MAX` entries; past that, every step is computed.
    """

    __slots__ = ("dist", "full", "m", "peq", "state", "table", "top")

    def __init__(self, gold: Sequence[str]) -> None:
        m = len(gold)
        peq: dict[str, int] = {}
        for i, name in enumerate(gold):
            peq[name] = peq.get(name, 0) | (1 << i)
        self.peq = peq
        self.m = m
        self.full = (1 << m) - 1
        self.top = 1 << (m - 1)
        self.state = self.full  # vp | vn << m, with vp = full and vn = 0
        self.dist = m
        self.table: dict[int, tuple[int, int]] | None = {}
        """(state << m | mask) -> (next state, change of the distance); None once full."""

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
        """Step through names given as their match masks."""
        table = self.table
        if table is None:
            self.state, self.dist = self._compute(self.state, self.dist, masks)
            return
        m = self.m
        state = self.state
        dist = self.dist
        get = table.get
        masks = iter(masks)
        for mask in masks:
            key = (state << m) | mask
            known = get(key)
            if known is None:
                known = table[key] = self._compute(state, 0, (mask,))
                if len(table) >= STEP_TABLE_MAX:  # full: the rest by the bit operations
                    self.table = None
                    state, change = known
                    self.state, self.dist = self._compute(state, dist + change, masks)
                    return
            state, change = known
            dist += change
        self.state = state
        self.dist = dist

    def _compute(self, state: int, dist: int, masks: Iterable[int]) -> tuple[int, int]:
        """The state and distance after ``masks`` from ``state`` and ``dist``, by the bit
        operations alone (the loop keeps the state in locals)."""
        m = self.m
        top = self.top
        full = self.full
        vp = state & full
        vn = state >> m
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
        return vp | (vn << m), dist

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


def _key_hits(expected: Any, values: list[Any], strict: bool) -> list[int]:
    """1 where a trace call's value for one gold key matches ``expected``, else 0 (the key
    missing is :data:`_MISSING`): Toolscore's comparison, a column at a time."""
    if strict:
        return [
            1 if v is not _MISSING and compare_values(expected, v, strict=True) else 0
            for v in values
        ]
    if expected.__class__ is str:  # the common case: equal, or equal once stripped
        if lenient_str_misses(expected, values):
            return [0] * len(values)
        stripped = expected.strip()
        return [
            (1 if v == expected or v.strip() == stripped else 0)
            if v.__class__ is str
            else (1 if v is not _MISSING and compare_values(expected, v) else 0)
            for v in values
        ]
    cls = expected.__class__
    return [
        1
        if v is not _MISSING
        and ((v.__class__ is cls and expected == v) or compare_values(expected, v))
        else 0
        for v in values
    ]


def _weights(items: list[tuple[Any, Any]], dicts: list[dict[str, Any]], strict: bool) -> list[int]:
    """Per trace call (its args as a dict, ``{}`` when they are not one), how many of the
    gold ``items`` it matches."""
    total: list[int] | None = None
    for key, expected in items:
        hits = _key_hits(
            expected, list(map(dict.get, dicts, repeat(key), repeat(_MISSING))), strict
        )
        total = hits if total is None else list(map(add, total, hits))
    return total if total is not None else [0] * len(dicts)


def _neg_weight(candidate: tuple[int, int, int]) -> int:
    return -candidate[0]


def _augment_tight(
    rows: list[list[tuple[int, int, int]]],
    top: int,
    u: list[int],
    v: dict[int, int],
    row_col: list[int],
    col_row: dict[int, int],
    left: list[int],
) -> list[int]:
    """One Hopcroft-Karp phase on the tight edges: augment along vertex-disjoint shortest
    tight paths from the rows ``left`` to free columns; the rows still unassigned.

    A row's tight edges are a prefix of it: ``(r, c)`` is tight when ``v[c] == top - u[r] -
    weight``, and ``v <= 0``.
    """
    layer = dict.fromkeys(left, 0)
    frontier = left
    depth = 0
    reached = False
    while frontier and not reached:
        depth += 1
        ahead: list[int] = []
        for r in frontier:
            need = top - u[r]
            for w, c, _ in rows[r]:
                if w < need:
                    break
                if v.get(c, 0) == need - w:
                    r2 = col_row.get(c, -1)
                    if r2 < 0:
                        reached = True
                    elif r2 not in layer:
                        layer[r2] = depth
                        ahead.append(r2)
        frontier = ahead
    if not reached:
        return left
    still: list[int] = []
    for f in left:
        stack = [f]
        at = [0]
        cols: list[int] = []
        found = False
        while stack:
            r = stack[-1]
            row = rows[r]
            need = top - u[r]
            deeper = layer[r] + 1
            i = at[-1]
            end = len(row)
            nxt = -1
            while i < end:
                w, c, _ = row[i]
                i += 1
                if w < need:
                    break
                if v.get(c, 0) != need - w:
                    continue
                r2 = col_row.get(c, -1)
                if r2 < 0 or layer.get(r2) == deeper:
                    cols.append(c)
                    nxt = r2
                    found = r2 < 0
                    break
            if found:
                break
            if nxt < 0:
                stack.pop()
                at.pop()
                del layer[r]  # no shortest path from r any more
                if cols:
                    cols.pop()
            else:
                at[-1] = i
                stack.append(nxt)
                at.append(0)
        if found:
            for r, c in zip(stack, cols, strict=True):
                row_col[r] = c
                col_row[c] = r
                del layer[r]  # the paths of one phase are disjoint
        else:
            still.append(f)
    return still


def _min_cost_assignment(
    rows: list[list[tuple[int, int, int]]], top: int
) -> tuple[list[int], list[int], dict[int, int]]:
    """Assign every row a distinct column at least total cost, with duals proving it optimal.

    The cost of an edge is ``top - weight``. The rows first take, in row order, the first free
    column of their least cost. Then, in rounds (the Hungarian method): augment along tight
    paths while there are some (Hopcroft-Karp phases); else raise the duals of the rows left
    over by their distance to the nearest free column (one Dijkstra from all of them), which
    makes that path tight.

    Args:
        rows: per row, its edges ``(weight, column, _)``, by weight descending, each column
            at most once. A complete assignment must exist.
        top: at least every weight.

    Returns:
        ``(row_col, u, v)``: the column of each row, and dual potentials of the rows and of
        the columns (``v`` holds the non-zero ones): the reduced cost ``top - weight - u[r] -
        v[c]`` is ``>= 0`` on every edge and ``0`` on the assigned ones; ``v <= 0``, and
        ``v == 0`` on every column left unassigned.
    """
    n = len(rows)
    u = [top - row[0][0] for row in rows]
    v: dict[int, int] = {}
    row_col = [-1] * n
    col_row: dict[int, int] = {}
    left: list[int] = []
    for r, row in enumerate(rows):
        best = row[0][0]
        for w, c, _ in row:
            if w < best:
                left.append(r)
                break
            if c not in col_row:
                row_col[r] = c
                col_row[c] = r
                break
        else:
            left.append(r)
    # Now u = each row's least cost and v = 0: every reduced cost is >= 0, and 0 on the
    # assigned edges. The updates below lower v only on assigned columns, which stay so.
    while left:
        still = _augment_tight(rows, top, u, v, row_col, col_row, left)
        if len(still) < len(left):
            left = still
            continue
        dist: dict[int, int] = {}
        for s in left:
            base = top - u[s]
            for w, c, _ in rows[s]:
                d = base - w - v.get(c, 0)
                old = dist.get(c)
                if old is None or d < old:
                    dist[c] = d
        heap = [(d, c) for c, d in dist.items()]
        heapq.heapify(heap)
        done: dict[int, int] = {}
        delta = -1
        while heap:
            d, c = heapq.heappop(heap)
            if c in done or d != dist[c]:
                continue
            r = col_row.get(c, -1)
            if r < 0:
                delta = d
                break
            done[c] = d
            base = d + top - u[r]
            for w, c2, _ in rows[r]:
                if c2 in done:
                    continue
                nd = base - w - v.get(c2, 0)
                old = dist.get(c2)
                if old is None or nd < old:
                    dist[c2] = nd
                    if nd == d and c2 not in col_row:
                        delta = d  # no path is shorter than d
                        break
                    heapq.heappush(heap, (nd, c2))
            if delta >= 0:
                break
        if delta < 0:  # pragma: no cover - the callers always leave an assignment possible
            raise RuntimeError("no complete assignment")
        for s in left:
            u[s] += delta
        for c, d in done.items():
            if d != delta:
                v[c] = v.get(c, 0) + d - delta
                u[col_row[c]] += delta - d
    return row_col, u, v


def _first_in_gold_order(
    golds: list[list[tuple[int, int, int]]],
    top: int,
    gold_dual: list[int],
    pos_dual: dict[int, int],
    gold_pos: list[int],
    pos_gold: dict[int, int],
    by_gold: bool,
) -> None:
    """Turn an optimal pairing into the one Toolscore's search picks among the optimal ones.

    An edge is tight when its reduced cost ``top - weight - gold_dual - pos_dual`` is 0. The
    optimal pairings are exactly those made of tight edges that pair every forced vertex
    (complementary slackness): every row of the assignment (the golds if ``by_gold``, else
    the positions) and every vertex with a non-zero dual. Golds are settled in order, each on
    its first option (skip, when it is not forced; then its tight positions, earliest first)
    that some optimal pairing agreeing with the golds settled before takes.

    Take the directed graph of: gold -> position for tight unpaired edges, position -> gold
    for paired ones, and a vertex ``z`` standing for "unpaired": ``z`` -> an unpaired gold or
    a paired unforced position, an unpaired position or a paired unforced gold -> ``z``;
    settled golds and their positions left out. The optimal pairings agreeing with the
    settled golds differ from the current one by vertex-disjoint simple cycles of this graph,
    and flipping any one cycle gives one of them. So an option of gold ``p`` paired with
    ``q0`` is taken when a path closes its cycle: from the position to ``q0`` (then ``q0`` ->
    ``p``), or for skip from ``z`` to ``q0``; the path found is flipped.

    Flipping a cycle reverses its arcs and so keeps which vertex reaches which; settling
    only removes vertices. Hence what a failed search reached within its class can never
    reach the rest of that class: it becomes a class of its own, and every later search stays
    within the class of its gold (a cycle never leaves one; classes only split, each time
    along what one search reached, so a path between two vertices of a class never leaves
    it). Searches are breadth first and stop at a gold with a tight edge to ``q0``.

    Args:
        golds: per gold, its candidates ``(weight, position, _)`` ranked as in
            :func:`_pair_tool`.
        top: the weight that costs 0.
        gold_dual: per gold, its dual.
        pos_dual: per position, its dual (missing: 0).
        gold_pos: per gold, its position or -1 (an optimal pairing; updated in place).
        pos_gold: per paired position, its gold (the same pairing; updated in place).
        by_gold: whether the golds (else the positions) were the rows.
    """
    n = len(golds)
    z = n  # vertices: gold g is g, position q is ~q (< 0), z is n
    # A tight edge costs gold_dual + pos_dual <= gold_dual + pos_top: a prefix of the list.
    pos_top = max(0, max(pos_dual.values(), default=0))
    gold_forced = [by_gold or d != 0 for d in gold_dual]
    z_pos: dict[int, None] = {}
    if by_gold:
        z_pos = dict.fromkeys(q for q in pos_gold if q not in pos_dual)
    tight: list[list[int] | None] = [None] * n
    mark: dict[int, int] = {}
    parent: dict[int, int] = {}

    def tight_of(g: int) -> list[int]:
        """The tight positions of gold ``g`` (computed once)."""
        found = tight[g]
        if found is None:
            gd = gold_dual[g]
            limit = gd + pos_top
            found = []
            for w, q, _ in golds[g]:
                cost = top - w
                if cost > limit:
                    break
                if cost - gd == pos_dual.get(q, 0):
                    found.append(q)
            tight[g] = found
        return found

    z_golds = [g for g in range(n) if not gold_forced[g] and tight_of(g)]  # others: dead ends
    into: dict[int, list[int]] = {}  # per position, the golds tight with it (built once)

    def goals_of(q0: int) -> set[int]:
        """The golds with a tight edge to ``q0`` (a search reaches only unsettled ones)."""
        if not into:
            for g in range(n):
                for q in tight_of(g):
                    into.setdefault(q, []).append(g)
        return set(into.get(q0, ()))

    def options(p: int, q0: int) -> list[int]:
        """The tight positions before ``q0`` not paired with a settled gold, ascending."""
        cands = golds[p]
        gd = gold_dual[p]
        limit = gd + pos_top
        out: list[int] = []
        i = 0
        end = len(cands)
        while i < end:
            w = cands[i][0]
            if top - w > limit:
                break
            need = top - w - gd
            stop = bisect.bisect_left(cands, (-w, q0), lo=i, key=_rank)
            out += [
                q
                for _, q, _ in cands[i:stop]
                if not 0 <= pos_gold.get(q, -1) < p and pos_dual.get(q, 0) == need
            ]
            i = bisect.bisect_right(cands, -w, lo=stop, key=_neg_weight)
        out.sort()
        return out

    def search(src: int, p: int, target: int, goals: set[int], cls: int, sid: int) -> bool:
        """A shortest path from ``src`` (z or a position) to ``target`` within class ``cls``
        (its last step from one of ``goals``), into ``parent``; on failure, what it reached
        becomes class ``sid``."""
        explored = [src]
        mark[src] = sid
        queue = [z]

        def reach(y: int, via: int) -> None:
            explored.append(y)
            mark[y] = sid
            parent[y] = via

        def found(last: int) -> bool:
            """The path ends: ``last`` steps to ``target``; what was reached is back in
            ``cls`` (it may reach the target)."""
            parent[target] = last
            for y in explored:
                mark[y] = cls
            return True

        if src != z:
            first = pos_gold.get(~src, z)
            if mark.get(first, 0) != cls:
                return False
            reach(first, src)
            queue[0] = first
            if first in goals:
                return found(first)
        for x in queue:  # breadth first: the queue grows as it is read
            if x != z:
                own = gold_pos[x]
                for q in tight_of(x):
                    y = ~q
                    if q == own or mark.get(y, 0) != cls:
                        continue
                    reach(y, x)
                    g = pos_gold.get(q, z)  # q's gold, or z when q is unpaired
                    if g > p and mark.get(g, 0) == cls:  # settled golds are left out
                        reach(g, y)
                        if g in goals:
                            return found(g)
                        queue.append(g)
                if own >= 0 and not gold_forced[x] and mark.get(z, 0) == cls:
                    reach(z, x)
                    queue.append(z)
                continue
            for i in range(bisect.bisect_right(z_golds, p), len(z_golds)):
                g = z_golds[i]
                if gold_pos[g] < 0 and mark.get(g, 0) == cls:
                    reach(g, z)
                    if g in goals:
                        return found(g)
                    queue.append(g)
            for q in z_pos:
                g = pos_gold.get(q, -1)
                if g < p:
                    continue  # unpaired, or paired with a settled gold
                y = ~q
                if y == target:
                    return found(z)
                if mark.get(y, 0) != cls:
                    continue
                reach(y, z)
                if mark.get(g, 0) == cls:
                    reach(g, y)
                    if g in goals:
                        return found(g)
                    queue.append(g)
        return False

    sid = 0
    for p in range(n):
        q0 = gold_pos[p]
        if q0 < 0:
            continue  # unpaired: "skip" is its first option
        target = ~q0
        cls = mark.get(p, 0)
        if mark.get(target, 0) != cls:
            continue  # p lies on no cycle
        src = None
        goals: set[int] | None = None
        if not gold_forced[p] and mark.get(z, 0) == cls:
            goals = goals_of(q0)
            sid += 1
            if search(z, p, target, goals, cls, sid):
                src = z
        if src is None:
            for q in options(p, q0):
                if mark.get(~q, 0) == cls:
                    if goals is None:
                        goals = goals_of(q0)
                    sid += 1
                    if search(~q, p, target, goals, cls, sid):
                        src = ~q
                        break
        if src is None:
            continue  # its position is its first option
        path = [target]
        x = target
        while x != src:
            x = parent[x]
            path.append(x)
        path.reverse()
        # The cycle: p -> src ... -> target -> p, or z ... -> target -> p -> z.
        cycle = [*path, p] if src == z else [p, *path]
        arcs = list(zip(cycle, cycle[1:] + cycle[:1], strict=True))
        for a, b in arcs:
            if a < 0 and 0 <= b < n:
                gold_pos[b] = -1
                del pos_gold[~a]
        for a, b in arcs:
            if 0 <= a < n and b < 0:
                gold_pos[a] = ~b
                pos_gold[~b] = a
                if by_gold and ~b not in pos_dual:
                    z_pos[~b] = None


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
    # Every optimal pairing has min(n, m) pairs, and with m < n every trace call of the tool
    # is a candidate of every gold, so: rows = golds when m >= n, else rows = trace calls; a
    # complete assignment of the rows then has the most pairs. First the most weight (least
    # cost top - weight), with duals; then the preference in gold order among those optimal.
    top = max(cands[0][0] for cands in golds)
    by_gold = m >= n
    if by_gold:
        gold_pos, gold_dual, pos_dual = _min_cost_assignment(golds, top)
        pos_gold = {q: p for p, q in enumerate(gold_pos)}
    else:
        by_pos: dict[int, list[tuple[int, int, int]]] = {}
        for p, cands in enumerate(golds):
            for w, q, _ in cands:
                by_pos.setdefault(q, []).append((w, p, 0))
        positions = list(by_pos)
        # By weight, then late golds first (the early ones prefer to skip).
        rows = [sorted(by_pos[q], reverse=True) for q in positions]
        cols, row_dual, col_dual = _min_cost_assignment(rows, top)
        pos_gold = dict(zip(positions, cols, strict=True))
        pos_dual = dict(zip(positions, row_dual, strict=True))
        gold_dual = [col_dual.get(p, 0) for p in range(n)]
        gold_pos = [-1] * n
        for q, p in pos_gold.items():
            gold_pos[p] = q
    _first_in_gold_order(golds, top, gold_dual, pos_dual, gold_pos, pos_gold, by_gold)
    out: list[int | None] = []
    for p, q in enumerate(gold_pos):
        if q < 0:
            out.append(None)
        else:
            w = top - gold_dual[p] - pos_dual.get(q, 0)  # a tight edge
            out.append(bisect.bisect_left(golds[p], (-w, q), key=_rank))
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
        self,
        gold: Sequence[ToolCall],
        *,
        strict: bool = False,
        keep_details: bool = False,
        arg_view: Callable[[str, list[Any]], list[Any]] | None = None,
    ) -> None:
        self.gold = list(gold)
        self._arg_view = arg_view
        """How the argument pairing sees a tool's calls' arguments (argument modes that a
        user opted into the score with; None: as recorded)."""
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
            at: dict[str, list[int]] = {}
            for i, name in enumerate(tools):
                if name in live:
                    found = at.get(name)
                    if found is None:
                        at[name] = [i]
                    else:
                        found.append(i)
            view = self._arg_view
            for name, where in at.items():
                targs = [args[i] for i in where]
                if view is not None:
                    targs = view(name, targs)
                if not self._offer(live[name], targs, where, pos):
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

    def _offer(
        self, tool_groups: list[_Group], targs: list[Any], where: list[int], pos: int
    ) -> bool:
        """Offer a batch's calls of one tool (their args ``targs``, at batch positions
        ``where``, the batch starting at trace position ``pos``) to the tool's gold groups,
        in order; False once none of the groups can improve."""
        dicts: list[dict[str, Any]] | None = None
        saturated = 0
        for group in tool_groups:
            cands = group.cands
            k = group.k
            if len(cands) >= k and cands[-1][0] >= group.max_weight:
                saturated += 1  # nothing can beat the worst kept candidate, ever
                continue
            weights: list[int] | None = None
            if group.items:
                if dicts is None:
                    dicts = [a if isinstance(a, dict) else _NO_ARGS for a in targs]
                weights = _weights(group.items, dicts, self.strict)
            if len(cands) < k:
                offered: Iterable[int] = range(len(where))
            elif weights is None:
                continue  # all weigh 0: none beats a full list
            else:  # only a call weighing more than the worst kept one can get in
                worst = cands[-1][0]
                offered = [j for j, w in enumerate(weights) if w > worst]
            for j in offered:
                w = 0 if weights is None else weights[j]
                if len(cands) >= k and w <= cands[-1][0]:
                    continue
                i = len(cands)
                while i and cands[i - 1][0] < w:
                    i -= 1
                cands.insert(i, (w, pos + where[j], _arg_count(targs[j])))
                if len(cands) > k:
                    cands.pop()
            if len(cands) >= k and cands[-1][0] >= group.max_weight:
                saturated += 1
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
    gold: list[ToolCall],
    *,
    strict: bool = False,
    keep_details: bool = False,
    arg_view: Callable[[str, list[Any]], list[Any]] | None = None,
) -> ExpectedCheck:
    """The expected-calls check for ``gold``.

    Args:
        gold: the expected calls, in order.
        strict: compare argument types exactly (``1 != 1.0``), recursively.
        keep_details: keep every trace-only step in ``trajectory_details`` (memory then grows
            with the trace); otherwise at most :data:`MAX_TAIL_DETAILS` are kept.
        arg_view: how the argument pairing sees a tool's column of arguments (see
            :func:`toolscore.hardrules.matching.score_view`).
    """
    return ExpectedCheck(gold, strict=strict, keep_details=keep_details, arg_view=arg_view)
