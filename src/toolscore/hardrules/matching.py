"""Argument modes and trajectory match modes.

**Argument modes** say when a call's arguments match an expected call's (see
:class:`~toolscore.hardrules.spec.ArgumentModes`): :func:`args_match`.

**Match modes** are pass/fail verdicts over the whole trace, next to the graded score. A
trace call *matches* an expected call when the tools are the same and the arguments match
under the argument modes; then the trace passes

- ``strict``: with as many calls as expected, call *i* matching expected call *i*;
- ``unordered``: with as many calls as expected, paired one to one with matching ones;
- ``subset``: every call paired with its own matching expected call (no call unexpected);
- ``superset``: every expected call paired with its own matching call (extra calls allowed).

They are kept in bounded memory, whatever the trace's length (:class:`MatchState`): the
*head* (which expected calls each of the first G calls matches, G being the number of expected
calls) decides ``strict``; for the other three, the calls are taken in order by Kuhn's
augmenting-path algorithm, and only the calls that enlarged the maximum matching are kept
(at most G). A call that could not enlarge it never will: the calls that can be matched
together form a matroid (a transversal matroid), in which a call outside the span of the
earlier ones stays outside it. That is also why two parts of a trace merge exactly: the
greedy basis of the whole is the greedy basis of the two parts' bases, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import compress
from typing import Any

from ..calls import ToolCall
from ..matchers import OptionalArg, all_strings, compare_values, lenient_str_misses
from .spec import ArgMode, ArgumentModes, MatchMode

__all__ = [
    "MatchState",
    "Matching",
    "args_match",
    "column_match",
    "value_match",
    "verdicts",
]

_NO_MODES: Mapping[str, ArgMode] = {}


def _items_within(inner: Sequence[Any], outer: Sequence[Any], strict: bool, flip: bool) -> bool:
    """Every item of ``inner`` matched by its own item of ``outer`` (greedy, in order)."""
    free = list(outer)
    for item in inner:
        for j, other in enumerate(free):
            ok = (
                compare_values(other, item, strict) if flip else compare_values(item, other, strict)
            )
            if ok:
                del free[j]
                break
        else:
            return False
    return True


def value_match(expected: Any, actual: Any, mode: ArgMode = "exact", strict: bool = False) -> bool:
    """One argument's value under a per-argument mode: ``exact`` compares with
    :func:`~toolscore.matchers.compare_values`; ``ignore`` always matches; ``subset`` lets
    the actual dict or list hold more keys or items than expected, ``superset`` fewer."""
    if mode == "ignore":
        return True
    if mode == "exact":
        return compare_values(expected, actual, strict)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        inner, outer = (expected, actual) if mode == "subset" else (actual, expected)
        if not set(inner) <= set(outer):
            return False
        return all(compare_values(expected[k], actual[k], strict) for k in inner)
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if mode == "subset":
            return _items_within(expected, actual, strict, flip=False)
        return _items_within(actual, expected, strict, flip=True)
    return compare_values(expected, actual, strict)


def args_match(
    expected: Any,
    actual: Any,
    mode: ArgMode = "exact",
    per_arg: Mapping[str, ArgMode] = _NO_MODES,
    strict: bool = False,
) -> bool:
    """Whether a call's ``actual`` arguments match ``expected`` under ``mode`` and the
    per-argument modes (``expected`` None: not checked).

    ``exact``: the same argument names, each value matching; ``ignore``: always;
    ``subset``: every expected argument present and matching (extra actual ones are free);
    ``superset``: every actual argument expected and matching (missing ones are free). An
    argument whose per-argument mode is ``ignore`` is left out on both sides.
    """
    if expected is None or mode == "ignore":
        return True
    if not isinstance(expected, Mapping):
        return compare_values(expected, actual, strict)
    got: Mapping[str, Any] = actual if isinstance(actual, Mapping) else {}
    if per_arg:
        want = {k: v for k, v in expected.items() if per_arg.get(k) != "ignore"}
        got = {k: v for k, v in got.items() if per_arg.get(k) != "ignore"}
    else:
        want = dict(expected)
    optional = [k for k, v in want.items() if v.__class__ is OptionalArg and k not in got]
    if optional:  # an optional argument left out: as if it were not expected
        want = {k: v for k, v in want.items() if k not in optional}
    if mode == "exact":
        if want.keys() != got.keys():
            return False
        keys: Any = want
    elif mode == "subset":
        if not want.keys() <= got.keys():
            return False
        keys = want
    else:  # superset
        if not got.keys() <= want.keys():
            return False
        keys = got
    get_mode = per_arg.get
    return all(value_match(want[k], got[k], get_mode(k, "exact"), strict) for k in keys)


def column_match(
    expected: Any,
    column: list[Any],
    mode: ArgMode = "exact",
    per_arg: Mapping[str, ArgMode] = _NO_MODES,
    strict: bool = False,
) -> list[bool]:
    """:func:`args_match` for a column of calls' arguments, an argument at a time: the key
    sets with C-level passes, then each expected value against the column (a column of
    strings without the expected text is ruled out in one search)."""
    n = len(column)
    if expected is None or mode == "ignore":
        return [True] * n
    if (
        per_arg
        or mode == "superset"
        or any(v.__class__ is OptionalArg for v in expected.values())
        or not (expected.__class__ is dict or isinstance(expected, Mapping))
        or list(map(type, column)).count(dict) != n
    ):
        return [args_match(expected, a, mode, per_arg, strict) for a in column]
    want = dict(expected)
    keys = want.keys()
    size = len(want)
    # the key sets compared only where the sizes allow (a size is one C call a dict)
    if mode == "exact":
        sized = compress(range(n), map(size.__eq__, map(len, column)))
        alive = [j for j in sized if keys == column[j].keys()]
    else:  # subset
        sized = compress(range(n), map(size.__le__, map(len, column)))
        alive = [j for j in sized if keys <= column[j].keys()]
    for key, value in want.items():
        if not alive:
            break
        values = [column[j][key] for j in alive]
        if value.__class__ is str:
            if strict:
                misses = bool(value) and all_strings(values) and value not in "\n".join(values)
            else:
                misses = lenient_str_misses(value, values)
            if misses:
                return [False] * n
        alive = [j for j, v in zip(alive, values, strict=True) if compare_values(value, v, strict)]
    out = [False] * n
    for j in alive:
        out[j] = True
    return out


class Matching:
    """A maximum matching between trace calls (given by their masks: bit *g* set when the
    call matches expected call *g*) and expected calls, grown one call at a time (Kuhn)."""

    __slots__ = ("_full", "_rejected", "basis", "owner")

    def __init__(self, gold: int) -> None:
        self.owner: list[int] = [-1] * gold
        """For each expected call, the position in :attr:`basis` of the call paired with it."""
        self.basis: list[tuple[int, int, str]] = []
        """The calls kept: ``(index, mask, tool)``, in order."""
        self._full = (1 << gold) - 1
        self._rejected: set[int] = set()

    def add(self, index: int, mask: int, tool: str) -> bool:
        """Offer a call; True when it enlarged the matching (it is then kept)."""
        if not mask or mask in self._rejected:
            return False
        owner = self.owner
        if len(self.basis) == len(owner):
            return False
        me = len(self.basis)
        self.basis.append((index, mask, tool))
        if self._augment(me):
            return True
        self.basis.pop()
        self._rejected.add(mask)  # the span only grows: the same mask never gets in
        return False

    def _bits(self, who: int) -> Iterator[int]:
        mask = self.basis[who][1]
        g = 0
        while mask:
            if mask & 1:
                yield g
            mask >>= 1
            g += 1

    def _augment(self, start: int) -> bool:
        """One augmenting path from the call at ``start`` (iterative depth-first search)."""
        owner = self.owner
        seen: set[int] = set()
        stack: list[tuple[int, Iterator[int]]] = [(start, self._bits(start))]
        path: list[int] = []  # the expected call taken after each call on the stack
        while stack:
            for g in stack[-1][1]:
                if g in seen:
                    continue
                seen.add(g)
                path.append(g)
                if owner[g] < 0:
                    for (who, _), taken in zip(stack, path, strict=True):
                        owner[taken] = who
                    return True
                stack.append((owner[g], self._bits(owner[g])))
                break
            else:
                stack.pop()
                if path:
                    path.pop()
        return False

    def unmatched_gold(self) -> list[int]:
        return [g for g, who in enumerate(self.owner) if who < 0]


@dataclass(frozen=True)
class MatchState:
    """What the match modes need of a stretch of the trace (see the module docstring); all
    indices are relative to the stretch's first call."""

    gold: int
    calls: int = 0
    head: tuple[int, ...] = ()
    """The masks of the first ``gold`` calls."""
    basis: tuple[tuple[int, int, str], ...] = ()
    """The calls that enlarged the matching, ``(index, mask, tool)``, in order."""
    first_rejected: tuple[int, str] | None = None
    """The first call that could not be paired with an expected call of its own."""

    def merge(self, later: MatchState) -> MatchState:
        """This stretch followed by ``later`` (associative, exact)."""
        shift = self.calls
        matching = Matching(self.gold)
        for index, mask, tool in self.basis:
            matching.add(index, mask, tool)
        first = self.first_rejected
        for index, mask, tool in later.basis:
            if not matching.add(index + shift, mask, tool) and first is None:
                first = (index + shift, tool)
        if first is None and later.first_rejected is not None:
            index, tool = later.first_rejected
            first = (index + shift, tool)
        elif first is not None and later.first_rejected is not None:
            index = later.first_rejected[0] + shift
            if index < first[0]:
                first = (index, later.first_rejected[1])
        head = self.head
        if len(head) < self.gold:
            head = head + later.head[: self.gold - len(head)]
        return MatchState(self.gold, shift + later.calls, head, tuple(matching.basis), first)

    @classmethod
    def of(cls, gold: int, masks: Sequence[int], tools: Sequence[str]) -> MatchState:
        """The state of a stretch of calls given their masks."""
        matching = Matching(gold)
        first: tuple[int, str] | None = None
        add = matching.add
        n = len(masks)
        for i in compress(range(n), masks):  # the calls that match some expected call
            if not add(i, masks[i], tools[i]):
                first = (i, tools[i])
                break
        if first is not None:  # past the first rejected call, keep offering the rest
            after = first[0] + 1
            for i in compress(range(after, n), masks[after:]):
                add(i, masks[i], tools[i])
        if 0 in masks:  # a call that matches no expected call is rejected too
            zero = masks.index(0)
            if first is None or zero < first[0]:
                first = (zero, tools[zero])
        return cls(gold, len(masks), tuple(masks[:gold]), tuple(matching.basis), first)


def verdicts(
    state: MatchState, modes: Sequence[MatchMode], gold_tools: Sequence[str]
) -> dict[str, tuple[bool, str]]:
    """Each mode's ``(passed, why)``; ``why`` says what broke it (empty when it passed)."""
    gold = state.gold
    matching = Matching(gold)
    for index, mask, tool in state.basis:
        matching.add(index, mask, tool)
    missing = matching.unmatched_gold()
    size = f"the trace has {state.calls} call{'s' * (state.calls != 1)}, {gold} expected"

    def first_missing() -> str:
        g = missing[0]
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"expected call {g + 1} {gold_tools[g]} has no matching call{more}"

    out: dict[str, tuple[bool, str]] = {}
    for mode in modes:
        if mode == "strict":
            if state.calls != gold:
                out[mode] = (False, size)
                continue
            bad = [i for i, mask in enumerate(state.head) if not mask >> i & 1]
            if bad:
                i = bad[0]
                out[mode] = (False, f"call {i + 1} does not match expected call {i + 1} "
                                    f"{gold_tools[i]}")  # fmt: skip
            else:
                out[mode] = (True, "")
        elif mode == "unordered":
            if state.calls != gold:
                out[mode] = (False, size)
            elif missing:
                out[mode] = (False, first_missing())
            else:
                out[mode] = (True, "")
        elif mode == "subset":
            if state.first_rejected is not None:
                index, tool = state.first_rejected
                out[mode] = (False, f"call {index + 1} {tool} matches no expected call left")
            else:
                out[mode] = (True, "")
        else:
            out[mode] = (False, first_missing()) if missing else (True, "")
    return out


def score_view(
    modes: ArgumentModes, gold: Sequence[ToolCall]
) -> tuple[list[ToolCall], Callable[[str, list[Any]], list[Any]]]:
    """What the graded argument F1 compares when a user opted argument modes into the score
    (``"score": true``): the gold calls without what is ignored (a tool whose mode is
    ``ignore`` has its arguments unchecked, like a gold call without ``args``; an argument
    whose mode is ``ignore`` is left out), and a view of a tool's calls' arguments without
    what does not cost: the ignored arguments, and under ``subset`` every argument that no
    expected call of the tool has (extra actual arguments do not lower the precision)."""
    out: list[ToolCall] = []
    keys: dict[str, set[str]] = {}
    for call in gold:
        mode, per_arg = call_modes(modes, call.tool)
        args = call.args
        if mode == "ignore":
            args = None
        elif isinstance(args, Mapping) and per_arg:
            args = {k: v for k, v in args.items() if per_arg.get(k) != "ignore"}
        if isinstance(args, Mapping):
            keys.setdefault(call.tool, set()).update(args)
        out.append(replace(call, args=args))
    plans: dict[str, tuple[frozenset[str] | None, frozenset[str]]] = {}

    def view(tool: str, column: list[Any]) -> list[Any]:
        plan = plans.get(tool)
        if plan is None:
            mode, per_arg = call_modes(modes, tool)
            drop = frozenset(k for k, m in per_arg.items() if m == "ignore")
            keep = frozenset(keys.get(tool, set()) - drop) if mode == "subset" else None
            plan = plans[tool] = (keep, drop)
        keep, drop = plan
        if keep is not None:
            return [
                {k: v for k, v in a.items() if k in keep} if isinstance(a, dict) else a
                for a in column
            ]
        if drop:
            return [
                {k: v for k, v in a.items() if k not in drop} if isinstance(a, dict) else a
                for a in column
            ]
        return column

    return out, view


def call_modes(modes: ArgumentModes | None, tool: str) -> tuple[ArgMode, Mapping[str, ArgMode]]:
    """The tool's argument mode and per-argument modes (``exact`` and none by default)."""
    if modes is None:
        return "exact", _NO_MODES
    return modes.tool_mode(tool), modes.arg_modes(tool)
