"""Forbidden-call rules: validation, the JSON operator form, and matching (Toolscore §8).

A rule is ``{"tool": name, "args": {key: value} | None, "reason": text | None}``. A call
violates it when the tool is the same and every rule argument is present in ``call.args`` and
compares equal with :func:`~toolscore.matchers.compare_values` (lenient; values may be
matchers). A rule without ``args`` (or with ``{}``) forbids every call to the tool. Only the
first matching rule of a call is recorded.

In JSON, a top-level argument value that is a one-key dict ``{"$regex": pattern}``,
``{"$contains": item}`` or ``{"$one_of": [values]}`` becomes a matcher; anything else is
compared as a literal. Deliberate difference from Toolscore: a one-key dict whose key starts
with ``$`` but is no known operator (``{"$regx": "rm"}``) is an error rather than a literal
that silently never matches, and every problem is a :class:`~toolscore.errors.RuleFileError`
naming the rule's 0-based index. Multi-key dicts stay literal, as in Toolscore.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from .calls import ToolCall
from .errors import RuleFileError
from .matchers import (
    Contains,
    Matcher,
    OneOf,
    Search,
    all_strings,
    compare_values,
    lenient_str_misses,
)

__all__ = [
    "OPERATORS",
    "Rule",
    "check_forbidden_calls",
    "compile_rule",
    "compile_rule_columns",
    "load_forbidden_rules",
    "match_rule",
    "rules_from_json",
    "rules_from_python",
]

Rule = dict[str, Any]
"""A validated rule: ``{"tool": str, "args": dict | None, "reason": Any}``."""

OPERATORS = ("$regex", "$contains", "$one_of")
_DEFAULT = "<rules>"


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _validate(i: int, rule: object, path: str) -> tuple[str, Mapping[str, Any] | None, Any]:
    if not isinstance(rule, Mapping):
        raise RuleFileError(path, f"forbidden rule {i} must be an object, got {_short(rule)}")
    tool = rule.get("tool")
    if not isinstance(tool, str) or not tool:
        raise RuleFileError(
            path, f"forbidden rule {i} needs a non-empty 'tool' string: {_short(dict(rule))}"
        )
    args = rule.get("args")
    if args is not None and not isinstance(args, Mapping):
        raise RuleFileError(
            path, f"forbidden rule {i} 'args' must be an object, got {_short(args)}"
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


def _operator(i: int, key: str, op: str, operand: Any, path: str) -> Matcher:
    where = f"forbidden rule {i} argument {key!r}"
    if op == "$regex":
        if not isinstance(operand, str):
            raise RuleFileError(path, f"{where}: $regex needs a pattern string, got {operand!r}")
        try:
            return Search(operand)
        except re.error as exc:
            raise RuleFileError(
                path, f"{where}: invalid $regex pattern {operand!r}: {exc}"
            ) from exc
    if op == "$contains":
        return Contains(operand)
    if not isinstance(operand, list):
        raise RuleFileError(path, f"{where}: $one_of needs a list, got {operand!r}")
    return OneOf(*operand)


def _convert_args(i: int, args: Mapping[str, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.items():
        if isinstance(value, dict) and len(value) == 1:
            ((op, operand),) = value.items()
            if op in OPERATORS:
                value = _operator(i, key, op, operand, path)
            elif isinstance(op, str) and op.startswith("$"):
                raise RuleFileError(
                    path,
                    f"forbidden rule {i} argument {key!r}: unknown operator {op!r} "
                    f"(known: {', '.join(OPERATORS)})",
                )
        out[key] = value
    return out


def rules_from_json(data: Any, path: str = _DEFAULT) -> list[Rule]:
    """Convert already-parsed JSON rules, turning ``$regex``/``$contains``/``$one_of`` into
    matchers (top-level argument values only).

    Args:
        data: the parsed JSON (a list of rule objects).
        path: the name used in error messages (the file, when there is one).

    Raises:
        RuleFileError: see the module docstring.
    """
    if not isinstance(data, list):
        raise RuleFileError(
            path, f"forbidden rules must be a JSON list of rule objects, got {type(data).__name__}"
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
        RuleFileError: the file cannot be read, is not UTF-8 JSON, or holds a bad rule; the
            message names the file and, for bad JSON, the line and column.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise RuleFileError(name, f"cannot read the rule file: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RuleFileError(name, f"not UTF-8 text ({exc.reason})", offset=exc.start) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RuleFileError(
            name, f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno
        ) from exc
    return rules_from_json(data, name)


def match_rule(args: Any, rule_args: Mapping[str, Any] | None) -> bool:
    """True when a call's ``args`` satisfy a rule's ``args`` (``None``/``{}``: always).

    Arguments that are not a dict never satisfy a rule that lists arguments (Toolscore would
    crash on them).
    """
    if not rule_args:
        return True
    if not isinstance(args, Mapping):
        return False
    for key, expected in rule_args.items():
        if key not in args or not compare_values(expected, args[key]):
            return False
    return True


_MISSING = object()
RuleTest = Callable[[Any], bool]
"""A compiled rule's ``args`` test: True when a call's arguments satisfy it."""


def _always(args: Any) -> bool:
    return True


def _value_test(expected: Any) -> Callable[[Any], bool]:
    """``compare_values(expected, value)`` as one callable; a ``$regex`` searched directly
    (a subclass of :class:`Search` answers through its own ``matches``)."""
    if expected.__class__ is Search:
        search = expected.compiled.search

        def test(value: Any) -> bool:
            if value.__class__ is str:
                return search(value) is not None
            return expected.matches(value)

        return test
    return functools.partial(compare_values, expected)


def compile_rule(rule_args: Mapping[str, Any] | None) -> RuleTest:
    """:func:`match_rule` for one rule's ``args``, compiled: the per-call path of the policy
    check, with the same answers."""
    if not rule_args:
        return _always
    tests = [(key, _value_test(expected)) for key, expected in rule_args.items()]

    def test(args: Any) -> bool:
        if args.__class__ is not dict and not isinstance(args, Mapping):
            return False
        for key, value_test in tests:
            value = args.get(key, _MISSING)
            if value is _MISSING or not value_test(value):
                return False
        return True

    return test


ColumnTest = Callable[[list[Any]], list[int]]
"""A compiled rule's ``args`` test over a column of calls' arguments: the positions whose
arguments satisfy it, in order."""
ValueColumnTest = Callable[[list[Any]], list[int]]
"""One rule argument's test over a column of values (``_MISSING`` where a call lacks the
key): the positions that satisfy it, in order."""

if sys.version_info >= (3, 11):
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
else:  # pragma: no cover - Python 3.10
    import sre_constants as _sre
    import sre_parse as _sre_parse

_SAFE_AT = frozenset(
    getattr(_sre, name)
    for name in (
        "AT_BEGINNING", "AT_BEGINNING_LINE", "AT_END", "AT_END_LINE", "AT_BOUNDARY",
        "AT_NON_BOUNDARY", "AT_LOC_BOUNDARY", "AT_LOC_NON_BOUNDARY", "AT_UNI_BOUNDARY",
        "AT_UNI_NON_BOUNDARY",
    )
)  # fmt: skip
_LEAVES = frozenset(
    getattr(_sre, name)
    for name in ("LITERAL", "NOT_LITERAL", "IN", "ANY", "RANGE", "CATEGORY", "NEGATE")
    if hasattr(_sre, name)
)
_REPEATS = frozenset(
    getattr(_sre, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_sre, name)
)
_ATOMIC = getattr(_sre, "ATOMIC_GROUP", None)


def _joinable(pattern: Any) -> bool:
    """Whether a parsed pattern that matches somewhere in a string also matches somewhere
    in that string joined to others by newlines, when compiled with MULTILINE.

    The only parts of a pattern that look past what they consume are the zero-width ones. A
    newline next to a string behaves like its edge for ``\\b``, ``\\B``, and for ``^`` and
    ``$`` under MULTILINE (which only adds places where they match). ``\\A``, ``\\Z``,
    lookarounds and group references are not trusted: a pattern with one is tested string
    by string.
    """
    for op, av in pattern:
        if op in _LEAVES:
            continue
        if op is _sre.AT:
            if av not in _SAFE_AT:
                return False
        elif op is _sre.SUBPATTERN:
            if not _joinable(av[-1]):
                return False
        elif op is _sre.BRANCH:
            if not all(_joinable(branch) for branch in av[1]):
                return False
        elif op in _REPEATS:
            if not _joinable(av[2]):
                return False
        elif _ATOMIC is not None and op is _ATOMIC:
            if not _joinable(av):
                return False
        else:  # ASSERT, ASSERT_NOT, GROUPREF, GROUPREF_EXISTS, anything new
            return False
    return True


def _newline_prefilter(compiled: re.Pattern[str]) -> re.Pattern[str] | None:
    """``compiled`` for a search over newline-joined strings (see :func:`_joinable`), or
    None when the pattern cannot be trusted there."""
    try:
        parsed = _sre_parse.parse(compiled.pattern, compiled.flags)
        if not _joinable(parsed):
            return None
        return re.compile(compiled.pattern, compiled.flags | re.MULTILINE)
    except Exception:  # a parser that changed shape: test string by string
        return None


def _one_by_one(expected: Any) -> ValueColumnTest:
    value_test = _value_test(expected)

    def hits(values: list[Any]) -> list[int]:
        return [i for i, v in enumerate(values) if v is not _MISSING and value_test(v)]

    return hits


def _value_column_test(expected: Any) -> ValueColumnTest:
    """:func:`_value_test` over a column of values; a column of strings is first searched
    as one newline-joined text, so that a batch without a match costs one C-level scan."""
    one_by_one = _one_by_one(expected)
    # exact types only: a subclass may answer differently from what the shortcut assumes
    if expected.__class__ is Search:
        prefilter = _newline_prefilter(expected.compiled)
        if prefilter is None:
            return one_by_one
        search = prefilter.search

        def searched(values: list[Any]) -> list[int]:
            if all_strings(values) and search("\n".join(values)) is None:
                return []
            return one_by_one(values)

        return searched
    if expected.__class__ is str:
        text = expected

        def equal(values: list[Any]) -> list[int]:
            if lenient_str_misses(text, values):
                return []
            return one_by_one(values)

        return equal
    if expected.__class__ is Contains and expected.item.__class__ is str:
        needle = expected.item  # str in str: a substring

        def contained(values: list[Any]) -> list[int]:
            if all_strings(values) and needle not in "\n".join(values):
                return []
            return one_by_one(values)

        return contained
    if expected.__class__ is OneOf and all(v.__class__ is str for v in expected.values):
        choices = frozenset(expected.values)

        def chosen(values: list[Any]) -> list[int]:
            if all_strings(values) and choices.isdisjoint(values):
                return []
            return one_by_one(values)

        return chosen
    return one_by_one


def compile_rule_columns(rule_args: Mapping[str, Any] | None) -> ColumnTest:
    """:func:`compile_rule` over a column of calls' arguments (the policy check's path for a
    batch): the positions whose arguments satisfy the rule, with the same answers."""
    if not rule_args:
        return lambda args: list(range(len(args)))
    per_call = compile_rule(rule_args)
    tests = [(key, _value_column_test(expected)) for key, expected in rule_args.items()]

    def test(args: list[Any]) -> list[int]:
        if list(map(type, args)).count(dict) != len(args):
            return [i for i, a in enumerate(args) if per_call(a)]
        positions: list[int] | None = None  # None: every one
        for key, value_test in tests:
            kept = value_test(list(map(dict.get, args, repeat(key), repeat(_MISSING))))
            if not kept:
                return []
            if len(kept) != len(args):
                positions = kept if positions is None else [positions[j] for j in kept]
                args = [args[j] for j in kept]
        return list(range(len(args))) if positions is None else positions

    return test


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
    from .checks.policy import PolicyCheck

    check = PolicyCheck(rules)
    for i, call in enumerate(calls):
        check.check_call(call, i)
    return check.report()
