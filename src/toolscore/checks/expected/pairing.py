"""The argument pairing: Toolscore's one-to-one pairing of gold and trace calls, exactly.

Argument precision/recall/F1 need Toolscore's one-to-one pairing within a tool name. For a
tool with ``k`` gold calls, each gold call keeps its ``k`` best candidates ``(weight, trace
index, arg count)``; an exchange argument shows the assignment Toolscore's exact search picks
(most pairs, then most matched arguments, then the lexicographically smallest choice in gold
order, "skip" before the earliest trace call) only ever uses those, so the small assignment is
solved exactly at the end. Unlike Toolscore, which turns greedy past 12 trace calls of a
tool, this is exact at any size;

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

"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence
from itertools import repeat
from operator import add
from typing import Any, NamedTuple

from ...calls import ToolCall
from ...matchers import OptionalArg, compare_values, lenient_str_misses
from .gold_order import first_in_gold_order, rank

__all__ = [
    "MISSING",
    "NO_ARGS",
    "ROW_WEIGHTS_MAX",
    "Candidate",
    "GoldGroup",
    "arg_count",
    "augment_tight",
    "call_weights",
    "gold_groups",
    "key_hits",
    "min_cost_assignment",
    "pair_tool",
]

MISSING = object()
"""A key the trace call's args do not have."""
NO_ARGS: dict[str, Any] = {}
"""The args of a call whose args are not a dict: they match no gold key."""
_PLAIN = (str, int, float, bool, type(None))

Candidate = tuple[int, int, int]
"""A trace call kept for a gold call: ``(weight, trace position, arg count)``."""


_PLAIN_NAMES = {t: t.__name__ for t in _PLAIN}
"""The name of each plain type, by the type (a plain value's key, without a chain of checks)."""


def freeze(value: Any) -> Any:
    """A hashable, type-exact key for plain JSON values; raises TypeError for anything else."""
    name = _PLAIN_NAMES.get(value.__class__)
    if name is not None:
        return (name, value)
    if isinstance(value, dict):
        return ("d", tuple((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(freeze(v) for v in value))
    if isinstance(value, _PLAIN):
        return (type(value).__name__, value)
    raise TypeError


def arg_count(args: Any, optional: tuple[str, ...] = ()) -> int:
    """How many arguments a trace call has; plus, for a gold call whose ``optional`` keys it
    leaves out, those (each counts as a matched argument)."""
    if optional:
        have = args if isinstance(args, dict) else NO_ARGS
        return arg_count(args) + sum(1 for k in optional if k not in have)
    if not args:
        return 0
    try:
        return len(args)
    except TypeError:
        return 0


class GoldGroup(NamedTuple):
    """Gold calls of one tool with identical args: same weights, so one candidate list."""

    tool: str
    items: tuple[tuple[Any, Any], ...] | None
    """The gold ``(key, value)`` pairs, or None when the gold args are None."""
    k: int
    """How many candidates to keep: the tool's number of gold calls."""
    members: tuple[int, ...]
    """Gold positions in this group."""
    optional: tuple[str, ...] = ()
    """The gold keys that may be absent (:class:`~toolscore.matchers.OptionalArg`): an
    absent one counts as a matched argument, so as an actual one too (:func:`arg_count`)."""

    @property
    def max_weight(self) -> int:
        return len(self.items) if self.items else 0


def gold_groups(gold: Sequence[ToolCall]) -> list[GoldGroup]:
    """The gold calls in groups of one tool and identical args: by tool in order of first
    appearance, then in order of first member."""
    counts: dict[str, int] = {}
    for g in gold:
        counts[g.tool] = counts.get(g.tool, 0) + 1
    keyed: dict[tuple[str, Any], tuple[list[tuple[Any, Any]] | None, list[int]]] = {}
    by_tool: dict[str, list[tuple[str, Any]]] = {}
    for pos, g in enumerate(gold):
        args = g.args
        items: list[tuple[Any, Any]] | None
        if args is None:
            key: Any = None
            items = None
        else:
            items = list(args.items()) if isinstance(args, dict) else []
            try:
                # (a key that is a str is its own key: the usual case, one step less)
                key = tuple((k if k.__class__ is str else freeze(k), freeze(v)) for k, v in items)
            except TypeError:
                key = ("id", pos)
        found = keyed.get((g.tool, key))
        if found is None:
            found = keyed[(g.tool, key)] = (items, [])
            by_tool.setdefault(g.tool, []).append((g.tool, key))
        found[1].append(pos)
    return [
        GoldGroup(
            tool,
            None if items is None else tuple(items),
            counts[tool],
            tuple(members),
            tuple(k for k, v in items or () if v.__class__ is OptionalArg),
        )
        for keys in by_tool.values()
        for tool, key in keys
        for items, members in [keyed[(tool, key)]]
    ]


def key_hits(expected: Any, values: list[Any], strict: bool) -> list[int]:
    """1 where a trace call's value for one gold key matches ``expected``, else 0 (the key
    missing is :data:`MISSING`; an optional argument missing is a hit): Toolscore's
    comparison, a column at a time."""
    if expected.__class__ is OptionalArg:
        return [1 if v is MISSING or compare_values(expected, v, strict) else 0 for v in values]
    if strict:
        return [
            1 if v is not MISSING and compare_values(expected, v, strict=True) else 0
            for v in values
        ]
    if expected.__class__ is str:  # the common case: equal, or equal once stripped
        if lenient_str_misses(expected, values):
            return [0] * len(values)
        stripped = expected.strip()
        return [
            (1 if v == expected or v.strip() == stripped else 0)
            if v.__class__ is str
            else (1 if v is not MISSING and compare_values(expected, v) else 0)
            for v in values
        ]
    cls = expected.__class__
    if cls is int and -_EXACT_FLOAT_INT < expected < _EXACT_FLOAT_INT:
        # another int equals it as a float only when it equals it: no need to ask
        return [
            (1 if v == expected else 0)
            if v.__class__ is int
            else (1 if v is not MISSING and compare_values(expected, v) else 0)
            for v in values
        ]
    return [
        1
        if v is not MISSING
        and ((v.__class__ is cls and expected == v) or compare_values(expected, v))
        else 0
        for v in values
    ]


_EXACT_FLOAT_INT = 2**53
"""Ints below this in size are exact as floats."""

ROW_WEIGHTS_MAX = 16
"""Up to this many calls, :func:`call_weights` goes a call at a time: a column's lists and
passes cost more than they save on a few calls (1.3 us against 3.8 for two calls of three
gold keys; even at 16)."""


def call_weights(
    items: Sequence[tuple[Any, Any]], dicts: list[dict[str, Any]], strict: bool
) -> list[int]:
    """Per trace call (its args as a dict, ``{}`` when they are not one), how many of the
    gold ``items`` it matches."""
    if len(dicts) <= ROW_WEIGHTS_MAX:
        return _row_weights(items, dicts, strict)
    total: list[int] | None = None
    for key, expected in items:
        hits = key_hits(expected, list(map(dict.get, dicts, repeat(key), repeat(MISSING))), strict)
        total = hits if total is None else list(map(add, total, hits))
    return total if total is not None else [0] * len(dicts)


def _row_weights(
    items: Sequence[tuple[Any, Any]], dicts: list[dict[str, Any]], strict: bool
) -> list[int]:
    """:func:`call_weights` a call at a time (what :func:`key_hits` tells, value by value:
    lenient, a value of the gold's type equal to it matches before any other comparison)."""
    out: list[int] = []
    if strict:
        for d in dicts:
            w = 0
            for key, expected in items:
                v = d.get(key, MISSING)
                if v is MISSING:
                    w += expected.__class__ is OptionalArg
                elif compare_values(expected, v, True):
                    w += 1
            out.append(w)
        return out
    for d in dicts:
        w = 0
        for key, expected in items:
            v = d.get(key, MISSING)
            if v is MISSING:
                w += expected.__class__ is OptionalArg  # an optional argument may be absent
                continue
            if v.__class__ is expected.__class__:
                if expected == v:
                    w += 1
                    continue
                if v.__class__ is str:  # compare_values' rule for two strings, inline
                    if expected.strip() == v.strip():
                        w += 1
                    continue
                if v.__class__ is int and -_EXACT_FLOAT_INT < expected < _EXACT_FLOAT_INT:
                    continue  # (as key_hits: unequal ints are unequal as floats too)
            if compare_values(expected, v):
                w += 1
        out.append(w)
    return out


def augment_tight(
    rows: Sequence[Sequence[Candidate]],
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


def min_cost_assignment(
    rows: Sequence[Sequence[Candidate]], top: int
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
        still = augment_tight(rows, top, u, v, row_col, col_row, left)
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


def pair_tool(golds: Sequence[Sequence[Candidate]], m: int) -> list[int | None]:
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
        gold_pos, gold_dual, pos_dual = min_cost_assignment(golds, top)
        pos_gold = {q: p for p, q in enumerate(gold_pos)}
    else:
        by_pos: dict[int, list[tuple[int, int, int]]] = {}
        for p, cands in enumerate(golds):
            for w, q, _ in cands:
                by_pos.setdefault(q, []).append((w, p, 0))
        positions = list(by_pos)
        # By weight, then late golds first (the early ones prefer to skip).
        rows = [sorted(by_pos[q], reverse=True) for q in positions]
        cols, row_dual, col_dual = min_cost_assignment(rows, top)
        pos_gold = dict(zip(positions, cols, strict=True))
        pos_dual = dict(zip(positions, row_dual, strict=True))
        gold_dual = [col_dual.get(p, 0) for p in range(n)]
        gold_pos = [-1] * n
        for q, p in pos_gold.items():
            gold_pos[p] = q
    first_in_gold_order(golds, top, gold_dual, pos_dual, gold_pos, pos_gold, by_gold)
    out: list[int | None] = []
    for p, q in enumerate(gold_pos):
        if q < 0:
            out.append(None)
        else:
            w = top - gold_dual[p] - pos_dual.get(q, 0)  # a tight edge
            out.append(bisect.bisect_left(golds[p], (-w, q), key=rank))
    return out
