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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .calls import ToolCall
from .errors import RuleFileError
from .matchers import Contains, Matcher, OneOf, Search, compare_values

__all__ = [
    "OPERATORS",
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
    """``compare_values(expected, value)`` as one callable; a ``$regex`` searched directly."""
    if isinstance(expected, Search):
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
