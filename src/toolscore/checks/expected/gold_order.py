"""Among the optimal pairings of one tool, the one Toolscore's search picks: first in gold order.

:func:`first_in_gold_order` takes an optimal pairing (with the duals that prove it optimal)
and exchanges pairs along alternating cycles until each gold call, in gold order, has its
first option among the optimal pairings that agree with the gold calls settled before it.
The search is a class (:class:`GoldOrder`) so that each step has a name: which positions are
tight for a gold (:meth:`~GoldOrder.tight_of`), which of them a gold may still take
(:meth:`~GoldOrder.options`), the breadth-first search for a cycle (:meth:`~GoldOrder.search`)
and the exchange along it (:meth:`~GoldOrder.flip`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

__all__ = ["GoldOrder", "first_in_gold_order", "neg_weight", "rank"]

Candidate = tuple[int, int, int]


def rank(candidate: Candidate) -> tuple[int, int]:
    """Candidates rank by weight, most first, then by position, earliest first."""
    return (-candidate[0], candidate[1])


def neg_weight(candidate: Candidate) -> int:
    return -candidate[0]


def first_in_gold_order(
    golds: Sequence[Sequence[Candidate]],
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
            :func:`~.pairing.pair_tool`.
        top: the weight that costs 0.
        gold_dual: per gold, its dual.
        pos_dual: per position, its dual (missing: 0).
        gold_pos: per gold, its position or -1 (an optimal pairing; updated in place).
        pos_gold: per paired position, its gold (the same pairing; updated in place).
        by_gold: whether the golds (else the positions) were the rows.
    """
    order = GoldOrder(golds, top, gold_dual, pos_dual, gold_pos, pos_gold, by_gold)
    for p in range(len(golds)):
        order.settle(p)


class GoldOrder:
    """The state of :func:`first_in_gold_order`'s search (see its docstring for the graph).

    Vertices: gold ``g`` is ``g``, position ``q`` is ``~q`` (< 0), "unpaired" is ``z = n``.
    ``mark`` is each vertex's class (0 at first); ``parent`` the last search's tree.
    """

    def __init__(
        self,
        golds: Sequence[Sequence[Candidate]],
        top: int,
        gold_dual: list[int],
        pos_dual: dict[int, int],
        gold_pos: list[int],
        pos_gold: dict[int, int],
        by_gold: bool,
    ) -> None:
        self.golds = golds
        self.top = top
        self.gold_dual = gold_dual
        self.pos_dual = pos_dual
        self.gold_pos = gold_pos
        self.pos_gold = pos_gold
        self.by_gold = by_gold
        n = self.n = len(golds)
        self.z = n
        # A tight edge costs gold_dual + pos_dual <= gold_dual + pos_top: a prefix of the list.
        self.pos_top = max(0, max(pos_dual.values(), default=0))
        self.gold_forced = [by_gold or d != 0 for d in gold_dual]
        self.z_pos: dict[int, None] = {}
        """Unforced paired positions, in the order they were paired (``z`` reaches them)."""
        if by_gold:
            self.z_pos = dict.fromkeys(q for q in pos_gold if q not in pos_dual)
        self.tight: list[list[int] | None] = [None] * n
        self.mark: dict[int, int] = {}
        self.parent: dict[int, int] = {}
        self.sid = 0
        """The last class made."""
        self.z_golds = [g for g in range(n) if not self.gold_forced[g] and self.tight_of(g)]
        """Unforced golds with a tight edge (the others are dead ends from ``z``)."""
        self.into: dict[int, list[int]] = {}
        """Per position, the golds tight with it (built on first use)."""

    # -- the tight edges ------------------------------------------------------------------

    def tight_of(self, g: int) -> list[int]:
        """The tight positions of gold ``g`` (computed once)."""
        found = self.tight[g]
        if found is None:
            top, pos_dual = self.top, self.pos_dual
            gd = self.gold_dual[g]
            limit = gd + self.pos_top
            found = []
            for w, q, _ in self.golds[g]:
                cost = top - w
                if cost > limit:
                    break
                if cost - gd == pos_dual.get(q, 0):
                    found.append(q)
            self.tight[g] = found
        return found

    def goals_of(self, q0: int) -> set[int]:
        """The golds with a tight edge to ``q0`` (a search reaches only unsettled ones)."""
        into = self.into
        if not into:
            for g in range(self.n):
                for q in self.tight_of(g):
                    into.setdefault(q, []).append(g)
        return set(into.get(q0, ()))

    def options(self, p: int, q0: int) -> list[int]:
        """The tight positions of gold ``p`` before ``q0`` not paired with a settled gold,
        ascending."""
        cands = self.golds[p]
        top, pos_dual, pos_gold = self.top, self.pos_dual, self.pos_gold
        gd = self.gold_dual[p]
        limit = gd + self.pos_top
        out: list[int] = []
        i = 0
        end = len(cands)
        while i < end:
            w = cands[i][0]
            if top - w > limit:
                break
            need = top - w - gd
            stop = bisect.bisect_left(cands, (-w, q0), lo=i, key=rank)
            out += [
                q
                for _, q, _ in cands[i:stop]
                if not 0 <= pos_gold.get(q, -1) < p and pos_dual.get(q, 0) == need
            ]
            i = bisect.bisect_right(cands, -w, lo=stop, key=neg_weight)
        out.sort()
        return out

    # -- one gold ---------------------------------------------------------------------------

    def settle(self, p: int) -> None:
        """Settle gold ``p`` on its first option that an optimal pairing agreeing with the
        golds before it takes: skip, then its tight positions before its own, earliest first
        (each tried by a search for a cycle through it, flipped when found)."""
        mark = self.mark
        q0 = self.gold_pos[p]
        if q0 < 0:
            return  # unpaired: "skip" is its first option
        target = ~q0
        cls = mark.get(p, 0)
        if mark.get(target, 0) != cls:
            return  # p lies on no cycle
        goals: set[int] | None = None
        if not self.gold_forced[p] and mark.get(self.z, 0) == cls:
            goals = self.goals_of(q0)
            if self.search(self.z, p, target, goals, cls):
                self.flip(p, self.z, target)
                return
        for q in self.options(p, q0):
            if mark.get(~q, 0) == cls:
                if goals is None:
                    goals = self.goals_of(q0)
                if self.search(~q, p, target, goals, cls):
                    self.flip(p, ~q, target)
                    return
        # its position is its first option

    def search(self, src: int, p: int, target: int, goals: set[int], cls: int) -> bool:
        """A shortest path from ``src`` (z or a position) to ``target`` within class ``cls``
        (its last step from one of ``goals``), into ``parent``; on failure, what it reached
        becomes a class of its own."""
        self.sid += 1
        sid = self.sid
        z = self.z
        mark, parent = self.mark, self.parent
        gold_pos, pos_gold, gold_forced = self.gold_pos, self.pos_gold, self.gold_forced
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
            if x != z:  # a gold: its tight unpaired edges, and z when it may go unpaired
                own = gold_pos[x]
                for q in self.tight_of(x):
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
            # z: the unpaired unforced golds, and the unforced paired positions
            z_golds = self.z_golds
            for i in range(bisect.bisect_right(z_golds, p), len(z_golds)):
                g = z_golds[i]
                if gold_pos[g] < 0 and mark.get(g, 0) == cls:
                    reach(g, z)
                    if g in goals:
                        return found(g)
                    queue.append(g)
            for q in self.z_pos:
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

    def flip(self, p: int, src: int, target: int) -> None:
        """Exchange the pairs along the cycle the last search found: ``p -> src ... ->
        target -> p``, or ``z ... -> target -> p -> z``."""
        parent, n = self.parent, self.n
        gold_pos, pos_gold = self.gold_pos, self.pos_gold
        path = [target]
        x = target
        while x != src:
            x = parent[x]
            path.append(x)
        path.reverse()
        cycle = [*path, p] if src == self.z else [p, *path]
        arcs = list(zip(cycle, cycle[1:] + cycle[:1], strict=True))
        for a, b in arcs:
            if a < 0 and 0 <= b < n:
                gold_pos[b] = -1
                del pos_gold[~a]
        for a, b in arcs:
            if 0 <= a < n and b < 0:
                gold_pos[a] = ~b
                pos_gold[~b] = a
                if self.by_gold and ~b not in self.pos_dual:
                    self.z_pos[~b] = None
