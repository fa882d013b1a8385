"""The argument pairing past :data:`~toolscore.limits.EXACT_PAIRING_MAX_GOLD` gold calls of a
tool: bounded memory, time linear in the trace, and an approximate assignment.

The exact pairing (:mod:`.pairing`) keeps, for each of a tool's ``k`` gold calls, its ``k``
best trace calls and weighs every trace call of the tool against every gold call: memory
``k**2`` and time ``k`` per trace call. Past the threshold a tool is paired here instead:

- **Weights through an index.** Each gold argument ``(key, value)`` is an *item*, indexed by a
  hashable form of its value that is equal exactly when Toolscore's comparison matches
  (:func:`lenient_key`, :func:`strict_key`). An item shared by more than
  :data:`COMMON_ITEM_GROUPS` gold calls is *common*: a trace call's common items form its
  *signature*, and its weight for a gold call is the gold call's *rare* items it matches
  (found through the index) plus the size of the gold call's common items within the
  signature. A trace call thus costs its own arguments' lookups, not one weighing per gold
  call. Gold values the index cannot hold (matchers such as ``Regex``) are compared call by
  call, as the exact pairing does.
- **Bounded candidates.** Each gold call keeps its
  :data:`~toolscore.limits.APPROX_PAIRING_CANDIDATES` best trace calls among those matching
  one of its rare items; per signature (the first :data:`SIGNATURES_PER_GOLD_CALL` ``* k``
  signatures of the trace) the first that many trace calls are kept, and the tool's first
  ``k`` trace calls (position, argument count, signature). The best candidates of a gold call
  among all trace calls are exactly the best of these two lists together (its signature
  class's, :func:`_shared`, computed once per set of common items). Everything is kept as
  ranked lists cut at a fixed length, so parts of a trace merged in order give exactly the
  state of the whole (:class:`ApproxLog`), unless the trace has more signatures than are
  kept: then the log says so (``capped``, reported as ``signatures_capped``) and a part
  cannot know which of its signatures an earlier part already kept.
- **Greedy assignment** (:func:`pair_approx`): the candidate pairs by weight, most first (then
  gold order, then the earliest trace call), each taken when both sides are free; a gold call
  left over then takes the best free trace call among the tool's first ``k`` (or one of its
  own candidates), so the pairing has as many pairs as the exact one (``min(gold, trace)``).

What may differ from the exact pairing: which trace call a gold call is paired with (greedy
instead of the most matched arguments overall), and a pair's weight can be undercounted when a
gold call was paired, for lack of free candidates, with a trace call that matched one of its
rare items but had left its candidate list. The matched-argument count is thus never more than
the exact pairing's. README "Limits" quotes measured differences.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections import deque
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...matchers import Matcher, compare_values
from .gold_order import neg_weight, rank
from .pairing import MISSING, Candidate, GoldGroup, arg_count

__all__ = [
    "COMMON_ITEM_GROUPS",
    "SIGNATURES_PER_GOLD_CALL",
    "ApproxIndex",
    "ApproxLog",
    "ApproxRecorder",
    "Signature",
    "lenient_key",
    "pair_approx",
    "strict_key",
]

COMMON_ITEM_GROUPS = 16
"""A gold item shared by more gold groups than this is common (part of the signatures)."""

SIGNATURES_PER_GOLD_CALL = 16
"""Signatures kept per gold call of the tool: the first ``16 * n`` of the trace each keep up to
the candidate cap of their trace calls (what bounds the signature classes' memory). A trace
with more distinct signatures than that is flagged (``signatures_capped``): its later
signatures are left out, and its result may then depend on where a parallel read cut it."""

Signature = tuple[int, ...]
"""The common items a trace call matches (their ids, ascending)."""


class Unindexable(Exception):
    """A value the index cannot hold: its item is compared call by call."""


def _eq_key(value: Any) -> Hashable:
    """A hashable form equal exactly when the values are ``==`` (JSON-like values)."""
    if isinstance(value, Matcher):
        raise Unindexable
    cls = value.__class__
    if cls is dict:
        return ("d", frozenset((k, _eq_key(v)) for k, v in value.items()))
    if cls is list:
        return ("l", tuple(_eq_key(v) for v in value))
    if cls is tuple:
        return ("t", tuple(_eq_key(v) for v in value))
    if cls in (str, int, float, bool) or value is None:
        return value  # type: ignore[no-any-return]
    raise Unindexable


def lenient_key(value: Any) -> Hashable:
    """The index form of a value under Toolscore's lenient comparison: strings stripped,
    numbers (bools included) as floats, anything else by ``==``; raises
    :class:`Unindexable` for a matcher or a type outside JSON's."""
    if isinstance(value, str):
        return ("s", value.strip())
    if isinstance(value, (int, float)):
        try:
            f = float(value)
        except OverflowError:
            return ("i", value)
        return ("n", f)
    return ("c", _eq_key(value))


def _strict(value: Any) -> Hashable:
    if isinstance(value, Matcher):
        raise Unindexable
    cls = value.__class__
    if cls is dict:
        return (dict, frozenset((k, _strict(v)) for k, v in value.items()))
    if cls is list or cls is tuple:
        return (cls, tuple(_strict(v) for v in value))
    if cls in (str, int, float, bool) or value is None:
        return (cls, value)
    raise Unindexable


def strict_key(value: Any) -> Hashable:
    """The index form of a value under the strict comparison (identical types,
    recursively); raises :class:`Unindexable` as :func:`lenient_key` does."""
    return _strict(value)


class ApproxIndex:
    """What the gold fixes for one approximately paired tool: its items and their index."""

    def __init__(self, tool: str, groups: Sequence[GoldGroup], group_ids: list[int], strict: bool):
        self.tool = tool
        self.n = sum(len(g.members) for g in groups)
        """The tool's gold calls."""
        self.group_ids = group_ids
        """The plan's indices of the tool's groups (local index -> plan index)."""
        self.strict = strict
        self.key = strict_key if strict else lenient_key
        item_of: dict[tuple[str, Hashable], int] = {}
        holders: list[list[int]] = []
        self.slow: list[tuple[int, list[tuple[str, Any]]]] = []
        """Per local group with items the index cannot hold, those items."""
        items_of: list[list[int]] = []
        for local, group in enumerate(groups):
            mine: list[int] = []
            slow: list[tuple[str, Any]] = []
            for k, v in group.items or ():
                try:
                    hk = self.key(v)
                except (Unindexable, TypeError):
                    slow.append((k, v))
                    continue
                if isinstance(v, float) and v != v:
                    continue  # NaN matches nothing
                item = item_of.setdefault((k, hk), len(holders))
                if item == len(holders):
                    holders.append([])
                holders[item].append(local)
                mine.append(item)
            items_of.append(mine)
            if slow:
                self.slow.append((local, slow))
        self.common = {i for i, h in enumerate(holders) if len(h) > COMMON_ITEM_GROUPS}
        self.rare: dict[int, list[int]] = {
            i: h for i, h in enumerate(holders) if i not in self.common
        }
        """Per rare item, the local groups that have it."""
        self.profiles: list[frozenset[int]] = [
            frozenset(i for i in mine if i in self.common) for mine in items_of
        ]
        """Per local group, its common items."""
        self.by_key: dict[str, dict[Hashable, int]] = {}
        for (k, hk), item in item_of.items():
            self.by_key.setdefault(k, {})[hk] = item

    def weigh(self, args: Any) -> tuple[Signature, dict[int, int]]:
        """A trace call's signature and, per local group it matches a rare (or call-by-call)
        item of, that count."""
        hits: dict[int, int] = {}
        common: list[int] = []
        if isinstance(args, dict):
            by_key, key, rare = self.by_key, self.key, self.rare
            for k, v in args.items():
                values = by_key.get(k)
                if values is None:
                    continue
                try:
                    item = values.get(key(v))
                except (Unindexable, TypeError):
                    continue
                if item is None:
                    continue
                holders = rare.get(item)
                if holders is None:
                    common.append(item)
                else:
                    for g in holders:
                        hits[g] = hits.get(g, 0) + 1
            for g, slow in self.slow:
                n = sum(
                    1
                    for k, v in slow
                    if (a := args.get(k, MISSING)) is not MISSING
                    and compare_values(v, a, self.strict)
                )
                if n:
                    hits[g] = hits.get(g, 0) + n
        common.sort()
        return tuple(common), hits

    def common_weight(self, local: int, sig: Signature) -> int:
        profile = self.profiles[local]
        return sum(1 for i in sig if i in profile) if profile else 0


@dataclass(frozen=True)
class ApproxLog:
    """What a part of the trace tells about one approximately paired tool, besides the gold
    calls' own candidates: its first trace calls, overall and per signature. Merged in
    order, parts give the whole's log."""

    firsts: tuple[tuple[int, int, Signature], ...] = ()
    """The tool's first ``n`` trace calls (``n``: its gold calls): position, arg count,
    signature."""
    buckets: tuple[tuple[Signature, tuple[tuple[int, int], ...]], ...] = ()
    """Per signature (the first ``n *`` :data:`SIGNATURES_PER_GOLD_CALL` signatures, in order
    of first appearance), its first trace calls (position, arg count); at most the candidate
    cap."""
    capped: bool = False
    """More distinct signatures than that were seen (the trace has more)."""

    def merge(self, later: ApproxLog, offset: int, n: int, cap: int) -> ApproxLog:
        firsts = self.firsts
        if len(firsts) < n and later.firsts:
            firsts += tuple((q + offset, c, s) for q, c, s in later.firsts[: n - len(firsts)])
        buckets = dict(self.buckets)
        most = n * SIGNATURES_PER_GOLD_CALL
        capped = self.capped or later.capped
        for sig, calls in later.buckets:
            mine = buckets.get(sig)
            if mine is None:
                if len(buckets) >= most:
                    capped = True
                    continue
                mine = ()
            if len(mine) < cap:
                buckets[sig] = mine + tuple((q + offset, c) for q, c in calls[: cap - len(mine)])
        return ApproxLog(firsts, tuple(buckets.items()), capped)


class ApproxRecorder:
    """The check's growing :class:`ApproxLog` and candidate lists for one tool."""

    def __init__(self, index: ApproxIndex, cap: int) -> None:
        self.index = index
        self.cap = cap
        self.firsts: list[tuple[int, int, Signature]] = []
        self.buckets: dict[Signature, list[tuple[int, int]]] = {}
        self.capped = False

    def offer(
        self,
        cands: list[list[Candidate]],
        targs: list[Any],
        where: Iterable[int],
        pos: int,
    ) -> None:
        """A batch's calls of the tool (args ``targs`` at batch positions ``where``, the batch
        starting at trace position ``pos``); ``cands`` are the plan's candidate lists."""
        index, cap = self.index, self.cap
        firsts, buckets = self.firsts, self.buckets
        n = index.n
        most = n * SIGNATURES_PER_GOLD_CALL
        ids = index.group_ids
        for a, j in zip(targs, where, strict=True):
            q = pos + j
            c = arg_count(a)
            sig, hits = index.weigh(a)
            if len(firsts) < n:
                firsts.append((q, c, sig))
            bucket = buckets.get(sig)
            if bucket is None:
                if len(buckets) < most:
                    buckets[sig] = [(q, c)]
                else:
                    self.capped = True
            elif len(bucket) < cap:
                bucket.append((q, c))
            for local, h in hits.items():
                w = h + index.common_weight(local, sig)
                mine = cands[ids[local]]
                if len(mine) >= cap and w <= mine[-1][0]:
                    continue
                mine.insert(bisect.bisect_right(mine, -w, key=neg_weight), (w, q, c))
                if len(mine) > cap:
                    mine.pop()

    def log(self) -> ApproxLog:
        return ApproxLog(
            tuple(self.firsts),
            tuple((s, tuple(b)) for s, b in self.buckets.items()),
            self.capped,
        )


def _shared(
    profile: frozenset[int],
    by_item: dict[int, list[int]],
    log: ApproxLog,
    n: int,
    want: int,
) -> list[Candidate]:
    """A profile's best ``want`` trace calls by its common items alone, ranked: the
    signatures that share an item with it, level by level (earliest calls first through a
    merge), then the calls that match none of its items, earliest first."""
    weights: dict[int, int] = {}
    for item in profile:
        for b in by_item.get(item, ()):
            weights[b] = weights.get(b, 0) + 1
    levels: dict[int, list[int]] = {}
    for b, w in weights.items():
        levels.setdefault(w, []).append(b)
    out: list[Candidate] = []
    buckets = log.buckets
    for w in sorted(levels, reverse=True):
        merged = heapq.merge(*(buckets[b][1] for b in levels[w]))
        out += [(w, q, c) for q, c in itertools.islice(merged, want - len(out))]
        if len(out) >= want:
            return out
    # Weight 0: the earliest calls whose signature shares nothing with the profile.
    hit = {buckets[b][0] for b in weights}
    zero = [(0, q, c) for q, c, sig in log.firsts if sig not in hit]
    if len(zero) < want - len(out) and len(log.firsts) >= n:  # calls past the first n
        rest = heapq.merge(*(calls for sig, calls in buckets if sig not in hit))
        zero = [(0, q, c) for q, c in itertools.islice(rest, want - len(out))]
    return out + zero[: want - len(out)]


def pair_approx(
    index: ApproxIndex,
    groups: Sequence[GoldGroup],
    own: Sequence[Sequence[Candidate]],
    log: ApproxLog,
    m: int,
    cap: int,
) -> dict[int, Candidate]:
    """The greedy pairing of one tool (see the module docstring).

    Args:
        index: the tool's index.
        groups: its gold groups (local order).
        own: per local group, its candidates (ranked, at most ``cap``).
        log: the tool's first trace calls.
        m: its number of trace calls (> 0).
        cap: the candidate cap.

    Returns:
        Gold position -> its candidate ``(weight, trace position, arg count)``.
    """
    # Per local group: its best candidates, from its own list and its signature classes.
    n = index.n
    by_item: dict[int, list[int]] = {}
    """Per common item, the buckets whose signature has it."""
    for b, (sig, _) in enumerate(log.buckets):
        for item in sig:
            by_item.setdefault(item, []).append(b)
    by_profile: dict[frozenset[int], list[Candidate]] = {}
    lists: list[list[Candidate]] = []
    for local, mine in enumerate(own):
        profile = index.profiles[local]
        shared = by_profile.get(profile)
        if shared is None:
            shared = by_profile[profile] = _shared(profile, by_item, log, n, 2 * cap)
        taken = {q for _, q, _ in mine}
        merged = sorted([*mine, *(x for x in shared if x[1] not in taken)], key=rank)[:cap]
        lists.append(merged)
    edges = sorted(
        (-w, p, q, c)
        for local, group in enumerate(groups)
        for p in group.members
        for w, q, c in lists[local]
    )
    out: dict[int, Candidate] = {}
    used: set[int] = set()
    for nw, p, q, c in edges:
        if p not in out and q not in used:
            out[p] = (-nw, q, c)
            used.add(q)
    target = min(n, m)
    if len(out) >= target:
        return out
    # The gold calls left over take the best free trace call among the tool's first ones
    # (there are enough: at most n - left of the first n are used) or their own candidates:
    # the earliest free call of each signature sharing a common item with the gold call,
    # and the earliest free call of all (the best of those that share none).
    free: dict[Signature, deque[tuple[int, int]]] = {}
    earliest: deque[tuple[int, int, Signature]] = deque()
    for q, c, sig in log.firsts:
        if q not in used:
            free.setdefault(sig, deque()).append((q, c))
            earliest.append((q, c, sig))
    free_by_item: dict[int, list[deque[tuple[int, int]]]] = {}
    for sig, calls in free.items():
        for item in sig:
            free_by_item.setdefault(item, []).append(calls)
    local_of = {p: local for local, group in enumerate(groups) for p in group.members}
    left = sorted(p for p in local_of if p not in out)
    if m < n:
        left.reverse()  # the exact pairing lets the earliest gold calls go unpaired
    for p in left:
        if len(out) >= target:
            break
        local = local_of[p]
        best: tuple[int, int, int] | None = None
        for w, q, c in own[local]:
            if q not in used and (best is None or (w, -q) > (best[0], -best[1])):
                best = (w, q, c)
        while earliest and earliest[0][0] in used:
            earliest.popleft()
        if earliest:
            q, c, sig = earliest[0]
            w = index.common_weight(local, sig)
            if best is None or (w, -q) > (best[0], -best[1]):
                best = (w, q, c)
        profile = index.profiles[local]
        weights: dict[int, int] = {}
        fronts: dict[int, deque[tuple[int, int]]] = {}
        for item in profile:
            for calls in free_by_item.get(item, ()):
                key = id(calls)
                weights[key] = weights.get(key, 0) + 1
                fronts[key] = calls
        for key, calls in fronts.items():
            while calls and calls[0][0] in used:
                calls.popleft()
            if calls:
                q, c = calls[0]
                w = weights[key]
                if best is None or (w, -q) > (best[0], -best[1]):
                    best = (w, q, c)
        if best is None:  # pragma: no cover - the first n trace calls always suffice
            break
        out[p] = best
        used.add(best[1])
    return out
