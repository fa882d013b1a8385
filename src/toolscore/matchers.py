"""Argument matchers and the comparison Toolscore uses for expected and forbidden arguments.

A matcher stands in for an expected value: ``{"q": Regex(r"weather.*")}``. ``compare_values``
is the one comparison used by argument F1, the pairing and forbidden rules. The ``$``
operators of gold and rule files (:mod:`toolscore.operators`) build these same objects, so a
matcher decides alike whichever way it was written.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from typing import Any

from .patterns import PatternTimeout, UserPattern

__all__ = [
    "ANY",
    "AllOf",
    "Approx",
    "AtLeast",
    "AtMost",
    "Contains",
    "Fields",
    "IsType",
    "Loose",
    "Matcher",
    "OneOf",
    "OptionalArg",
    "Regex",
    "Search",
    "compare_values",
    "optional_misses",
]


class Matcher:
    """Base class: ``matches(value)``; ``==`` calls it so matchers work inside containers.

    A plain class, not an ``abc.ABC``: an ``isinstance`` check against it runs for every
    compared argument, and ABC checks cost several times more.
    """

    def matches(self, value: object) -> bool:
        """True when ``value`` satisfies the matcher."""
        raise NotImplementedError(f"{type(self).__name__} does not implement matches()")

    def __eq__(self, other: object) -> bool:
        return compare_values(self, other)

    def __ne__(self, other: object) -> bool:
        return not compare_values(self, other)

    __hash__ = object.__hash__


class _AnyMatcher(Matcher):
    def matches(self, value: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ANY"


ANY: Matcher = _AnyMatcher()
"""Matches any value, ``None`` included (but a missing key is still a miss)."""


def _flags_repr(flags: int) -> str:
    return repr(re.RegexFlag(flags)) if flags else ""


class Regex(Matcher):
    """The whole string must match ``pattern`` (``re.fullmatch``); ``.`` stops at newlines
    unless ``re.DOTALL`` is given. Non-strings never match.

    The pattern has Python's meaning and runs in linear time on RE2
    (:class:`~toolscore.patterns.UserPattern`).

    Raises:
        toolscore.patterns.PatternError: (a ``re.error``) an invalid pattern, or one that
            needs backtracking (backreferences, lookarounds, possessive quantifiers...).
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self.engine = UserPattern(pattern, flags)

    def matches(self, value: object) -> bool:
        """Raises :class:`~toolscore.patterns.PatternTimeout` when the match runs on Python's
        ``re`` and takes too long (see :mod:`toolscore.patterns`)."""
        return isinstance(value, str) and self.engine.fullmatch(value)

    def __repr__(self) -> str:
        if self.flags:
            return f"Regex({self.pattern!r}, flags={_flags_repr(self.flags)})"
        return f"Regex({self.pattern!r})"


def _search_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


class Search(Matcher):
    """The JSON rules' ``{"$regex": pattern}``: the pattern found anywhere (``re.search``).

    A list or tuple is matched as its items joined with spaces, other non-strings through
    ``str()``; ``None`` never matches. Runs on RE2 as :class:`Regex` does.

    Raises:
        toolscore.patterns.PatternError: as for :class:`Regex`.
    """

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str):
            raise ValueError(f"$regex needs a pattern string, got {pattern!r}")
        self.pattern = pattern
        self.engine = UserPattern(pattern)
        self.compiled = self.engine.python

    def matches(self, value: object) -> bool:
        """Raises :class:`~toolscore.patterns.PatternTimeout` as :meth:`Regex.matches`."""
        text = _search_text(value)
        return text is not None and self.engine.search(text)

    def __repr__(self) -> str:
        return f"$regex({self.pattern!r})"


class Approx(Matcher):
    """A number within ``max(rel * |value|, abs)`` of ``value``; bools never match."""

    def __init__(self, value: float, rel: float = 1e-6, abs: float = 0.0) -> None:
        self.value = value
        self.rel = rel
        self.abs = abs

    def matches(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return builtin_abs(value - self.value) <= max(self.rel * builtin_abs(self.value), self.abs)

    def __repr__(self) -> str:
        parts = [repr(self.value)]
        if self.rel != 1e-6:
            parts.append(f"rel={self.rel!r}")
        if self.abs != 0.0:
            parts.append(f"abs={self.abs!r}")
        return f"Approx({', '.join(parts)})"


builtin_abs = abs


class Contains(Matcher):
    """``item in value`` for a str, list, tuple, set, frozenset or dict (dict: its keys)."""

    def __init__(self, item: object) -> None:
        self.item = item

    def matches(self, value: object) -> bool:
        if not isinstance(value, (str, list, tuple, set, frozenset, dict)):
            return False
        try:
            return self.item in value
        except TypeError:
            return False

    def __repr__(self) -> str:
        return f"Contains({self.item!r})"


class OneOf(Matcher):
    """Equal to any of ``values`` (a value may itself be a matcher)."""

    def __init__(self, *values: object) -> None:
        self.values = values

    def matches(self, value: object) -> bool:
        return any(candidate == value for candidate in self.values)

    def __repr__(self) -> str:
        return f"OneOf({', '.join(repr(v) for v in self.values)})"


class IsType(Matcher):
    """``isinstance(value, types)``; a bool is rejected unless ``bool`` is among the types."""

    def __init__(self, *types: type) -> None:
        self.types = types

    def matches(self, value: object) -> bool:
        if isinstance(value, bool) and bool not in self.types:
            return False
        return isinstance(value, self.types)

    def __repr__(self) -> str:
        return f"IsType({', '.join(t.__name__ for t in self.types)})"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class AtLeast(Matcher):
    """A number ``>= bound`` (``$gte``); bools and non-numbers never match."""

    def __init__(self, bound: float) -> None:
        self.bound = bound

    def matches(self, value: object) -> bool:
        return _is_number(value) and value >= self.bound  # type: ignore[operator]

    def __repr__(self) -> str:
        return f"AtLeast({self.bound!r})"


class AtMost(Matcher):
    """A number ``<= bound`` (``$lte``); bools and non-numbers never match."""

    def __init__(self, bound: float) -> None:
        self.bound = bound

    def matches(self, value: object) -> bool:
        return _is_number(value) and value <= self.bound  # type: ignore[operator]

    def __repr__(self) -> str:
        return f"AtMost({self.bound!r})"


def loose_text(text: str) -> str:
    """``text`` as :class:`Loose` compares it: case-folded, letters and digits only."""
    return "".join(filter(str.isalnum, text.casefold()))


class Loose(Matcher):
    """A string equal to ``text`` once both ignore case, whitespace and punctuation (only
    letters and digits are compared, case-folded: ``"New-York "`` matches ``"new york"``).
    Non-strings never match. Linear in the string's length."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise ValueError(f"$loose needs a string, got {text!r}")
        self.text = text
        self._key = loose_text(text)

    def matches(self, value: object) -> bool:
        return isinstance(value, str) and loose_text(value) == self._key

    def __repr__(self) -> str:
        return f"Loose({self.text!r})"


class AllOf(Matcher):
    """Every one of ``matchers`` matches (several operators in one JSON object:
    ``{"$gte": 1, "$lte": 5}``)."""

    def __init__(self, *matchers: object) -> None:
        self.matchers = matchers

    def matches(self, value: object) -> bool:
        return all(m == value for m in self.matchers)

    def __repr__(self) -> str:
        return f"AllOf({', '.join(repr(m) for m in self.matchers)})"


class OptionalArg(Matcher):
    """An argument (or a key of a dict argument) that may be left out: absent is fine;
    given, it must match ``value`` (a plain value or a matcher). JSON: ``{"$optional": v}``.

    An absent optional argument counts as a matched one in argument precision and recall.
    """

    def __init__(self, value: object = ANY) -> None:
        self.value = value

    def matches(self, value: object) -> bool:
        return compare_values(self.value, value)

    def matches_strictly(self, value: object) -> bool:
        return compare_values(self.value, value, strict=True)

    def __repr__(self) -> str:
        return f"OptionalArg({self.value!r})"


class Fields(Matcher):
    """A dict with the keys of ``spec`` and no other, each value matching (``==``, so a
    matcher inside is honoured), where a key whose value is an :class:`OptionalArg` may be
    absent. Gold loading wraps every nested dict that has optional keys in one, so they
    work at any depth; a plain dict needs none."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    def _match(self, value: object, strict: bool) -> bool:
        if not isinstance(value, dict):
            return False
        spec = self.spec
        if any(k not in spec for k in value):
            return False
        for key, want in spec.items():
            if key not in value:
                if want.__class__ is not OptionalArg:
                    return False
            elif strict:
                if not _strict_equal(want, value[key]):
                    return False
            elif not want == value[key]:
                return False
        return True

    def matches(self, value: object) -> bool:
        return self._match(value, False)

    def matches_strictly(self, value: object) -> bool:
        return self._match(value, True)

    def __repr__(self) -> str:
        return f"Fields({self.spec!r})"


def optional_misses(expected: Any, actual: Any) -> int:
    """How many optional arguments of ``expected`` (a gold call's args) ``actual`` leaves
    out: each counts as a matched argument (0 for args without :class:`OptionalArg`)."""
    if not isinstance(expected, dict):
        return 0
    got = actual if isinstance(actual, dict) else {}
    return sum(1 for k, v in expected.items() if v.__class__ is OptionalArg and k not in got)


def _strict_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Matcher):
        if isinstance(expected, (Fields, OptionalArg)):
            return expected.matches_strictly(actual)
        return expected.matches(actual)
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, dict):
        return expected.keys() == actual.keys() and all(
            _strict_equal(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return len(expected) == len(actual) and all(
            _strict_equal(e, a) for e, a in zip(expected, actual, strict=True)
        )
    return bool(expected == actual)


def all_strings(values: list[Any]) -> bool:
    """Whether every item of ``values`` is exactly a ``str`` (one C-level pass)."""
    return list(map(type, values)).count(str) == len(values)


def lenient_str_misses(expected: str, values: list[Any]) -> bool:
    """True when ``values`` are all strings and none can equal ``expected`` by
    :func:`compare_values`' lenient rule (equal, or equal once stripped): a match holds the
    stripped text, and it is in none of them (one search of their newline-joined text).
    False means: compare them one by one."""
    stripped = expected.strip()
    return bool(stripped) and all_strings(values) and stripped not in "\n".join(values)


UNDECIDED_RAISES: ContextVar[bool] = ContextVar("toolscore_undecided_raises", default=False)
"""True where an undecided comparison must not count as no match (a forbidden rule's: a call
it cannot tell apart is a finding, never a silent pass): :func:`compare_values` then lets
:class:`~toolscore.patterns.PatternTimeout` through, at any depth, for the caller to count."""


def compare_values(expected: Any, actual: Any, strict: bool = False) -> bool:
    """Toolscore's value comparison.

    Lenient (default): ``==``; else both numbers (bools included) compared as floats; else
    both strings compared after ``strip()``. Only the top level is lenient. Strict: identical
    types, recursively. Matchers are honoured at any depth in both modes; a pattern match
    that times out (:class:`~toolscore.patterns.PatternTimeout`) is no match (an expected
    argument not matched), or raises it where :data:`UNDECIDED_RAISES` is set.
    """
    if expected.__class__ is str and actual.__class__ is str:  # the common case, first
        return expected == actual or (not strict and expected.strip() == actual.strip())
    try:
        if isinstance(expected, Matcher):
            return expected.matches(actual)
        if strict:
            return _strict_equal(expected, actual)
        if expected == actual:
            return True
    except PatternTimeout:  # a pattern too slow to tell: no match, or the caller's to count
        if UNDECIDED_RAISES.get():
            raise
        return False
    except Exception:
        if isinstance(expected, Matcher) or strict:
            raise
        return False
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        try:
            return float(expected) == float(actual)
        except OverflowError:
            return False
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip() == actual.strip()
    return False
