"""Forbidden-call rules: validation, the JSON operator form, and matching (Toolscore §8).

A rule is ``{"tool": name, "args": {key: value} | None, "reason": text | None}``. A call
violates it when the tool is the same and every rule argument is present in ``call.args`` and
compares equal with :func:`~toolscore.matchers.compare_values` (lenient; values may be
matchers). A rule without ``args`` (or with ``{}``) forbids every call to the tool. Only the
first matching rule of a call is recorded.

In JSON, an argument value written with ``$`` operators (``{"$regex": pattern}``,
``{"$contains": item}``, ``{"$one_of": [values]}`` and the rest of
:data:`toolscore.operators.OPERATORS`, at any depth) becomes a matcher, the same one a gold
file builds; anything else is compared as a literal. Deliberate differences from Toolscore:
an object whose key starts with ``$`` but is no known operator (``{"$regx": "rm"}``) is an
error rather than a literal that silently never matches; several operators in one object
must all match (Toolscore compared a multi-key object as a literal); every problem is a
:class:`~toolscore.errors.RuleFileError` naming the rule's 0-based index.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from .calls import ToolCall
from .errors import RuleFileError
from .jsonfile import read_json, with_position
from .matchers import (
    UNDECIDED_RAISES,
    Contains,
    OneOf,
    OptionalArg,
    Regex,
    Search,
    all_strings,
    compare_values,
    lenient_str_misses,
)
from .operators import OPERATORS, OperatorError, args_from_json
from .patterns import PatternTimeout

__all__ = [
    "OPERATORS",
    "CompiledRule",
    "CompiledRules",
    "Rule",
    "check_forbidden_calls",
    "compile_rule",
    "load_forbidden_rules",
    "match_rule",
    "rules_from_json",
    "rules_from_python",
]

Rule = dict[str, Any]
"""A validated rule: ``{"tool": str, "args": dict | None, "reason": Any}``."""

_DEFAULT = "<rules>"


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fail(path: str, problem: str, where: tuple[str | int, ...]) -> RuleFileError:
    error = RuleFileError(path, problem)
    error.json_path = where
    return error


def _validate(i: int, rule: object, path: str) -> tuple[str, Mapping[str, Any] | None, Any]:
    if not isinstance(rule, Mapping):
        raise _fail(
            path,
            f"forbidden rule {i} must be an object like "
            f'{{"tool": "name", "args": {{...}}}}, got {_short(rule)}',
            (i,),
        )
    tool = rule.get("tool")
    if not isinstance(tool, str) or not tool:
        raise _fail(
            path,
            f"forbidden rule {i} needs a non-empty 'tool' string: {_short(dict(rule))}",
            (i, "tool") if "tool" in rule else (i,),
        )
    args = rule.get("args")
    if args is not None and not isinstance(args, Mapping):
        raise _fail(
            path,
            f"forbidden rule {i} 'args' must be an object (argument name: value), "
            f"got {_short(args)}",
            (i, "args"),
        )
    return tool, args, rule.get("reason")


def rules_from_python(rules: Iterable[Any], path: str = _DEFAULT) -> list[Rule]:
    """Validate rules in Python form (plain values or matchers); values are kept as given.

    Args:
        rules: ``[{"tool", "args"?, "reason"?}]``.
        path: the name used in error messages.

    Returns:
        New rule dicts with exactly the keys ``tool``, ``args`` and ``reason``.

    Raises:
        RuleFileError: not a list of rule dicts, or a rule with a bad ``tool`` or ``args``.
    """
    if isinstance(rules, (str, bytes, Mapping)) or not isinstance(rules, Iterable):
        raise RuleFileError(path, "forbidden must be a list of rule dicts")
    out: list[Rule] = []
    for i, rule in enumerate(rules):
        tool, args, reason = _validate(i, rule, path)
        out.append({"tool": tool, "args": None if args is None else dict(args), "reason": reason})
    return out


def _convert_args(i: int, args: Mapping[str, Any], path: str) -> Any:
    try:
        return args_from_json(dict(args))
    except OperatorError as exc:
        where = exc.json_path
        key = f" argument {where[0]!r}" if where else ""
        raise _fail(path, f"forbidden rule {i}{key}: {exc.problem}", (i, "args", *where)) from exc


def rules_from_json(data: Any, path: str = _DEFAULT) -> list[Rule]:
    """Convert already-parsed JSON rules, turning ``$`` operators into matchers (at any
    depth of an argument).

    Args:
        data: the parsed JSON (a list of rule objects).
        path: the name used in error messages (the file, when there is one).

    Raises:
        RuleFileError: see the module docstring.
    """
    if not isinstance(data, list):
        raise _fail(
            path,
            f"forbidden rules must be a JSON list of rule objects, got {type(data).__name__}",
            (),
        )
    out: list[Rule] = []
    for i, rule in enumerate(data):
        tool, args, reason = _validate(i, rule, path)
        converted = None if args is None else _convert_args(i, args, path)
        out.append({"tool": tool, "args": converted, "reason": reason})
    return out


def load_forbidden_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """Read a JSON rule file (read whole: rule files are small) and convert it.

    Raises:
        RuleFileError: the file cannot be read, is not UTF-8 JSON, nests deeper than
            :data:`~toolscore.limits.MAX_DEPTH`, or holds a bad rule; the message names the
            file, the line (and for a bad rule its JSON path, ``$[3].args``).
    """
    name = os.fspath(path)
    data, text = read_json(name, "rule file", RuleFileError)
    try:
        return rules_from_json(data, name)
    except RuleFileError as exc:
        raise with_position(exc, text, exc.json_path) from exc


_MISSING = object()
ValueTest = Callable[[Any], bool]
"""One rule argument's test of one value."""
ColumnShortcut = Callable[[list[Any]], bool]
"""True when no value of a column can pass a rule argument's test (one C-level scan); False
means: test them one by one."""


def _value_test(expected: Any) -> tuple[ValueTest, bool]:
    """``compare_values(expected, value)`` as one callable, and whether it may raise
    :class:`~toolscore.patterns.PatternTimeout` (anything but a plain JSON scalar: a
    ``$regex`` or a ``Regex`` asked directly, a matcher or a container that may hold one,
    whose undecided match :func:`~toolscore.matchers.compare_values` lets through under
    :data:`~toolscore.matchers.UNDECIDED_RAISES`)."""
    if expected.__class__ is Search:
        search = expected.engine.search

        def searched(value: Any) -> bool:
            if value.__class__ is str:
                return search(value)
            return expected.matches(value)

        return searched, True
    if expected.__class__ is Regex:
        fullmatch = expected.engine.fullmatch
        return (lambda value: value.__class__ is str and fullmatch(value)), True
    scalar = expected is None or expected.__class__ in (str, int, float, bool)
    return functools.partial(compare_values, expected), not scalar


def _shortcut(expected: Any) -> ColumnShortcut | None:
    """A column-wide "none can match" test for the built-in matchers and strings (exact types
    only: a subclass may answer differently from what the shortcut assumes), or None.

    A column of strings is searched as one newline-joined text. For a pattern that is exact
    because :meth:`~toolscore.patterns.UserPattern.search_joined` searches it with ``^`` and
    ``$`` at every line and only for patterns whose other zero-width parts treat a newline
    like a string's edge (no ``\\A``, ``\\Z``; ``\\b`` on ASCII text); a full match
    (``Regex``) of one string is a match in the joined text too.
    """
    if expected.__class__ is Search or expected.__class__ is Regex:
        joined = expected.engine.search_joined
        return lambda values: all_strings(values) and joined(values) is False
    if expected.__class__ is str:
        return functools.partial(lenient_str_misses, expected)
    if expected.__class__ is Contains and expected.item.__class__ is str:
        needle = expected.item  # str in str: a substring
        return lambda values: all_strings(values) and needle not in "\n".join(values)
    if expected.__class__ is OneOf and all(v.__class__ is str for v in expected.values):
        choices = frozenset(expected.values)
        return lambda values: all_strings(values) and choices.isdisjoint(values)
    return None


def _kept_bounded(
    test: ValueTest,
    values: list[Any],
    positions: list[int] | None,
    timeouts: list[int] | None,
    optional: bool,
) -> list[int]:
    """The positions of ``values`` that pass ``test``; a value whose match cannot be decided
    (:class:`~toolscore.patterns.PatternTimeout`) passes too, its position added to
    ``timeouts``: an undecided forbidden rule is a finding, never a silent pass."""
    kept: list[int] = []
    token = UNDECIDED_RAISES.set(True)
    try:
        for j, value in enumerate(values):
            if value is _MISSING:
                if optional:
                    kept.append(j)
                continue
            try:
                if test(value):
                    kept.append(j)
            except PatternTimeout:
                kept.append(j)
                if timeouts is not None:
                    timeouts.append(j if positions is None else positions[j])
    finally:
        UNDECIDED_RAISES.reset(token)
    return kept


class CompiledRule:
    """One rule's ``args``, compiled once: the one form in which a rule is matched.

    A call satisfies it when every rule argument is present in its ``args`` and compares
    equal with :func:`~toolscore.matchers.compare_values` (``None``/``{}``: every call;
    ``args`` that are not a mapping satisfy no rule that lists arguments, where Toolscore
    would crash). :meth:`select` answers for a column of calls' ``args`` (the policy check's
    batch), an argument at a time, each column first through its shortcut; :meth:`matches`
    is the same for one call.
    """

    __slots__ = ("_tests", "args")

    def __init__(self, rule_args: Mapping[str, Any] | None) -> None:
        self.args = rule_args
        self._tests = [
            (key, *_value_test(expected), _shortcut(expected), expected.__class__ is OptionalArg)
            for key, expected in (rule_args or {}).items()
        ]

    def select(self, column: list[Any], timeouts: list[int] | None = None) -> list[int]:
        """The positions in ``column`` (calls' ``args``) that satisfy the rule, in order.

        A call whose pattern match could not be decided in time
        (:class:`~toolscore.patterns.PatternTimeout`) satisfies it (never a silent pass);
        its position is added to ``timeouts`` when given.
        """
        if not self._tests:
            return list(range(len(column)))
        positions: list[int] | None = None  # None: every one so far
        rows = column
        if list(map(type, column)).count(dict) != len(column):
            positions = [i for i, a in enumerate(column) if isinstance(a, Mapping)]
            rows = [column[i] for i in positions]
        for key, test, bounded, shortcut, optional in self._tests:
            if not rows:
                return []
            if positions is None:
                values = list(map(dict.get, rows, repeat(key), repeat(_MISSING)))
            else:
                values = [a.get(key, _MISSING) for a in rows]
            if shortcut is not None and shortcut(values):
                return []
            if bounded:
                kept = _kept_bounded(test, values, positions, timeouts, optional)
            elif optional:  # absent is fine
                kept = [j for j, v in enumerate(values) if v is _MISSING or test(v)]
            else:
                kept = [j for j, v in enumerate(values) if v is not _MISSING and test(v)]
            if len(kept) != len(rows):
                positions = kept if positions is None else [positions[j] for j in kept]
                rows = [rows[j] for j in kept]
        return list(range(len(rows))) if positions is None else positions

    def matches(self, args: Any) -> bool:
        """Whether one call's ``args`` satisfy the rule."""
        return bool(self.select([args]))


def compile_rule(rule_args: Mapping[str, Any] | None) -> CompiledRule:
    """The compiled form of one rule's ``args`` (see :class:`CompiledRule`)."""
    return CompiledRule(rule_args)


def match_rule(args: Any, rule_args: Mapping[str, Any] | None) -> bool:
    """True when a call's ``args`` satisfy a rule's ``args`` (``None``/``{}``: always)."""
    return CompiledRule(rule_args).matches(args)


class CompiledRules:
    """Validated rules indexed by tool name: a call to a tool no rule names costs one dict
    lookup, and only the first matching rule (lowest index) of a call counts (Toolscore
    §8.2).

    Args:
        rules: validated rules (:func:`rules_from_python` or :func:`rules_from_json`).
    """

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self._by_tool: dict[str, list[tuple[int, CompiledRule]]] = {}
        for i, rule in enumerate(rules):
            self._by_tool.setdefault(rule["tool"], []).append((i, CompiledRule(rule["args"])))

    def first_match(self, tool: str, args: Any) -> int | None:
        """The index of the first rule one call matches, or None."""
        for rule_index, rule in self._by_tool.get(tool, ()):
            if rule.matches(args):
                return rule_index
        return None

    def match(
        self,
        tools: list[str],
        args: list[Any],
        groups: Mapping[str, list[int]] | None = None,
        column_of: Callable[[str], list[Any]] | None = None,
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """A batch's calls (its columns of tool names and ``args``), a tool at a time and a
        rule at a time: ``(position, rule index)`` for each call that matches a rule, its
        first, in call order; and those of them matched only because a pattern match could
        not be decided in time (counted as a match: never a silent pass), in call order.
        ``groups``: each tool's positions, when the caller has them
        (:meth:`~toolscore.columns.Columns.by_tool`); ``column_of``: with them, a tool's
        calls' ``args`` at those positions (:meth:`~toolscore.columns.Columns.args_of`)."""
        by_tool = self._by_tool
        if groups is None:
            mine: dict[str, list[int]] = {}
            for i, tool in enumerate(tools):
                if tool in by_tool:
                    mine.setdefault(tool, []).append(i)
            groups = mine
        matched: list[tuple[int, int]] = []
        undecided: list[tuple[int, int]] = []
        timeouts: list[int] = []
        for tool, positions in groups.items():
            ruled = by_tool.get(tool)
            if ruled is None:
                continue
            if column_of is None:
                column = [args[i] for i in positions]
            else:
                column = column_of(tool)
            for rule_index, rule in ruled:
                found = rule.select(column, timeouts)
                if timeouts:  # those the rule's other arguments did not rule out
                    chosen = set(found)
                    undecided.extend((positions[j], rule_index) for j in timeouts if j in chosen)
                    timeouts.clear()
                if not found:
                    continue
                matched.extend((positions[j], rule_index) for j in found)
                if len(found) == len(positions):
                    break
                taken = set(found)
                positions = [p for j, p in enumerate(positions) if j not in taken]
                column = [a for j, a in enumerate(column) if j not in taken]
        matched.sort()
        undecided.sort()
        return matched, undecided

    def violation(self, index: int, tool: str, args: Any, rule_index: int) -> dict[str, Any]:
        """Toolscore's violation record."""
        return {
            "index": index,
            "tool": tool,
            "args": args or {},
            "rule": rule_index,
            "reason": self.rules[rule_index]["reason"],
        }


def check_forbidden_calls(
    calls: Iterable[ToolCall], rules: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """Toolscore's ``check_forbidden_calls``: every call (indexed by position) against the rules.

    Returns:
        ``{"violation_count", "rule_count", "violations": [{"index", "tool", "args", "rule",
        "reason"}]}``.

    Raises:
        RuleFileError: a malformed rule.
    """
    compiled = CompiledRules(rules_from_python(rules))
    violations = []
    for i, call in enumerate(calls):
        rule_index = compiled.first_match(call.tool, call.args)
        if rule_index is not None:
            violations.append(compiled.violation(i, call.tool, call.args, rule_index))
    return {
        "violation_count": len(violations),
        "rule_count": len(compiled.rules),
        "violations": violations,
    }
