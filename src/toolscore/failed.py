"""What counts as a failed call: the one place that decides it, and says by which rule.

A call failed when the first of these rules that holds says so (the default rules, in order):

================  ==========================================================================
rule              the call failed when
================  ==========================================================================
``is_error``      its ``is_error`` flag is ``true`` (MCP, Anthropic ``tool_result``, ...)
``error``         it has a truthy ``error`` field (Toolscore's in-memory form, OpenAI, OTel)
``result.error``  its result is an object (or a string holding a JSON object) whose
                  ``error`` is truthy (not ``""``, ``null``, ``false``, ``{}``)
``result.success``  its result object has ``"success": false``
``result.status``   its result object has an HTTP-style ``status``/``status_code``/
                    ``statusCode`` number ``>= 400``
``result.prefix`` its result is a string starting with ``Error:`` (tau-bench's convention)
``result.traceback``  its result is a string holding a Python traceback
================  ==========================================================================

A rule file's ``"failures"`` section (or ``rules={"failures": ...}`` in Python) removes
defaults by name and adds rules of its own, each a matcher (``$`` operators, or a Python
matcher) on the result or on one field of a result object::

    "failures": {"remove": ["result.traceback"],
                 "add": [{"id": "timeout", "match": {"$regex": "timed out"}},
                         {"id": "server", "field": "code", "match": {"$gte": 500}}]}

The failed-call finding names the rule when it is not Toolscore's own (``is_error``,
``error``): ``call 3 fetch failed (result.prefix)``. A rule of your own whose pattern cannot
be decided in time (Python's ``re``, past its budget) counts the call as failed and says so:
``call 3 fetch failed (timeout; undecided: ...)``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import orjson
import re2

from .errors import RuleFileError
from .matchers import UNDECIDED_RAISES, compare_values
from .operators import OperatorError, from_json
from .patterns import PatternTimeout

__all__ = [
    "DEFAULT_FAILURES",
    "FAILURE_FIELDS",
    "RESULT_RULES",
    "FailureRules",
    "failure_of",
    "failure_rules",
    "failures_of",
    "keep_failure_fields",
    "raw_candidates",
]

FAILURE_FIELDS = ("error", "is_error")
"""A call's own fields that the rules ``error`` and ``is_error`` read."""


def keep_failure_fields(source: Mapping[str, Any], into: dict[str, Any]) -> None:
    """Copy :data:`FAILURE_FIELDS` from ``source`` into ``into`` as given (a missing or null
    one is left out): how every reader of calls keeps them, so the rules read them alike
    whichever door a call came through."""
    for key in FAILURE_FIELDS:
        value = source.get(key)
        if value is not None:
            into[key] = value


RESULT_RULES = (
    "result.error",
    "result.success",
    "result.status",
    "result.prefix",
    "result.traceback",
)
"""The default rules that read the result."""
DEFAULT_RULES = ("is_error", "error", *RESULT_RULES)
_TRACEBACK = "Traceback (most recent call last):"
_STATUS_KEYS = ("status", "status_code", "statusCode")
_OBJECT_HINTS = ('"error"', '"success"', '"status')
"""What a string must hold to be parsed as a result object (most are not)."""


@dataclass(frozen=True)
class FailureRules:
    """Which rules decide that a call failed (see the module docstring)."""

    enabled: frozenset[str] = frozenset(DEFAULT_RULES)
    """The default rules in use."""
    added: tuple[tuple[str, str | None, Any], ...] = ()
    """The user's rules: ``(id, field or None, matcher)``."""

    @property
    def reads_results(self) -> bool:
        """Whether any rule in use reads the result."""
        return bool(self.added) or not self.enabled.isdisjoint(RESULT_RULES)

    def of(self, is_error: Any, error: Any, result: Any) -> str | None:
        """The rule that makes a call with these fields a failure, or None (it succeeded).

        Args:
            is_error: the call's ``is_error`` flag as recorded (only ``True`` counts).
            error: its ``error`` field (a truthy one counts, ``False`` never).
            result: its result, decoded.
        """
        on = self.enabled
        if is_error is True and "is_error" in on:
            return "is_error"
        if error and "error" in on:
            return "error"
        if result is None:
            return None
        if not on.isdisjoint(RESULT_RULES):
            found = _result_rule(result, on)
            if found is not None:
                return found
        for rule_id, field, matcher in self.added:
            value = result
            if field is not None:
                value = _as_object(result)
                if value is None or field not in value:
                    continue
                value = value[field]
            token = UNDECIDED_RAISES.set(True)  # undecided: a failure, never a silent success
            try:
                if compare_values(matcher, value):
                    return rule_id
            except PatternTimeout:
                return f"{rule_id}; {UNDECIDED}"
            finally:
                UNDECIDED_RAISES.reset(token)
        return None


UNDECIDED = "undecided: its pattern took too long to match, counted as a failure"
"""Added to a rule's id when its match could not be decided (the call counts as failed)."""

DEFAULT_FAILURES = FailureRules()
"""The documented defaults."""


def _as_object(result: Any) -> Mapping[str, Any] | None:
    if isinstance(result, Mapping):
        return result
    if isinstance(result, str) and result[:1] == "{" and any(h in result for h in _OBJECT_HINTS):
        try:
            parsed = orjson.loads(result)
        except orjson.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def _result_rule(result: Any, on: frozenset[str]) -> str | None:
    if isinstance(result, str):
        if "result.prefix" in on and result.startswith("Error:"):
            return "result.prefix"
        if "result.traceback" in on and _TRACEBACK in result:
            return "result.traceback"
    obj = _as_object(result)
    if obj is None:
        return None
    if "result.error" in on:
        err = obj.get("error")
        if err and err is not False:
            return "result.error"
    if "result.success" in on and obj.get("success") is False:
        return "result.success"
    if "result.status" in on:
        for key in _STATUS_KEYS:
            status = obj.get(key)
            if isinstance(status, int) and not isinstance(status, bool) and status >= 400:
                return "result.status"
    return None


_KEY_HINTS = re2.compile(
    rb'"(?:Error:'
    rb'|error\\?"\s*:\s*(?:"[^"]|\\"[^\\]|t|[1-9-]|0\.|\{\s*[^\s}]|\[\s*[^\s\]])'
    rb'|success\\?"\s*:\s*false'
    rb'|(?:status|status_code|statusCode)\\?"\s*:\s*(?:[4-9]\d\d|\d{4}))'
)
_TRACEBACK_HINT = re2.compile(re2.escape(_TRACEBACK[:-1].encode()))
_HINTS = (_KEY_HINTS, _TRACEBACK_HINT)
"""Where a default result rule may hold, in raw JSON results (a result object, or one held
in a JSON string, its quotes escaped): a string starting ``Error:``, an ``error`` key whose
value is not ``null``, ``false``, ``""``, ``0``, ``{}`` or ``[]``, ``success: false``, a
status of 400 or more, each opened by a quote; and a traceback. A superset of the rules (a
match inside a nested object, a string that merely holds the text), each candidate decided
after. Two RE2 patterns, each with a single first byte that RE2 can skip ahead to: one
pattern of both, with five first bytes, took 173 ms for 100 MB, these two 52 and 14 ms."""


def raw_candidates(raws: Sequence[Any], rules: FailureRules) -> list[int]:
    """The positions of the raw JSON results (bytes-like) that a result rule in use may call
    failed: a search of them all, joined, for each of :data:`_HINTS` (usually finding none),
    then the results the hits fall in. Every result is a candidate when the
    user added rules of their own."""
    if rules.added:
        return list(range(len(raws)))
    if rules.enabled.isdisjoint(RESULT_RULES):
        return []
    # joined as they are: a needle across two results only adds a candidate, never hides one
    joined = b"".join(raws)
    ends: list[int] = []  # each result's end, once a hit needs them
    out: set[int] = set()
    for pattern in _HINTS:
        hit = pattern.search(joined)
        while hit is not None:
            if not ends:
                ends = list(accumulate(map(len, raws)))
            k = bisect_right(ends, hit.start())
            out.add(k)
            hit = pattern.search(joined, ends[k])  # on from the next result
    return sorted(out)


def failures_of(rules: Any) -> FailureRules:
    """What counts as a failed call under a :class:`~toolscore.hardrules.spec.RuleSet` (or
    None): its ``failures`` section, else the defaults."""
    found = getattr(rules, "failures", None)
    return DEFAULT_FAILURES if found is None else found


def failure_of(call: Any, rules: FailureRules = DEFAULT_FAILURES) -> str | None:
    """The rule that makes a :class:`~toolscore.calls.ToolCall` a failure, or None."""
    md = call.metadata or {}
    return rules.of(md.get("is_error"), md.get("error"), call.result)


def failure_rules(value: Any, path: str = "<rules>") -> FailureRules:
    """The ``"failures"`` section of a rule file, or of ``rules=`` in Python (matchers as
    ``$`` operators or as matcher objects).

    Raises:
        RuleFileError: an unknown default named in ``remove``, or a bad ``add`` rule.
    """
    if not isinstance(value, Mapping) or any(k not in ("remove", "add") for k in value):
        raise RuleFileError(
            path, 'failures must be an object like {"remove": [rule names], "add": [rules]}'
        )
    remove = value.get("remove") or []
    if isinstance(remove, str) or not isinstance(remove, Sequence):
        raise RuleFileError(path, "failures 'remove' must be a list of rule names")
    for name in remove:
        if name not in DEFAULT_RULES:
            raise RuleFileError(
                path, f"failures: unknown rule {name!r} (known: {', '.join(DEFAULT_RULES)})"
            )
    added: list[tuple[str, str | None, Any]] = []
    for i, rule in enumerate(value.get("add") or []):
        where = f"failures 'add' rule {i}"
        if not isinstance(rule, Mapping) or any(k not in ("id", "field", "match") for k in rule):
            raise RuleFileError(path, f'{where} must be {{"id", "match", "field"?}}')
        rule_id, field = rule.get("id"), rule.get("field")
        if not isinstance(rule_id, str) or not rule_id or "match" not in rule:
            raise RuleFileError(path, f"{where} needs an 'id' string and a 'match'")
        if field is not None and not isinstance(field, str):
            raise RuleFileError(path, f"{where}: 'field' must be a string")
        try:
            matcher = from_json(rule["match"])
        except OperatorError as exc:
            raise RuleFileError(path, f"{where}: {exc.problem}") from None
        added.append((rule_id, field, matcher))
    enabled = frozenset(r for r in DEFAULT_RULES if r not in remove)
    return FailureRules(enabled, tuple(added))
