"""The verdict: grades, violations of every kind, and what counts as a pass.

Toolscore grades a score by fixed bands (:data:`GRADE_BANDS`, best first): a score at or above
a band's threshold earns its letter, anything below the last band (NaN included) is an ``F``.
The gate helpers let a CI job fail on either a number or a letter: ``--fail-under 0.8`` or
``--fail-under B``.

:func:`judge` is the one place a result becomes a verdict: its score and grade (none without
gold), its violations counted by kind (forbidden calls, credentials, broken hard rules,
personal data) and whether it passes a :class:`PassCriterion`. Every door (``evaluate*``,
``toolscore eval`` on one trace or a dataset, ``watch``, the pytest plugin, the Action) asks
it, so ``violations`` and ``passed`` mean the same everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, cast

__all__ = [
    "DEFAULT_PASS",
    "GRADE_BANDS",
    "GRADE_ORDER",
    "MATCH_MODES",
    "SCORE_EPSILON",
    "VIOLATION_KINDS",
    "FixSuggestion",
    "PassCriterion",
    "Verdict",
    "Violations",
    "grade_at_least",
    "judge",
    "letter_grade",
    "parse_fail_under",
    "parse_pass",
    "passes",
    "verdict_word",
    "violations_of",
]

GRADE_BANDS: tuple[tuple[float, str], ...] = ((0.9, "A"), (0.8, "B"), (0.7, "C"), (0.6, "D"))
"""``(threshold, letter)`` pairs, highest first; below the last one is ``F``."""

GRADE_ORDER: tuple[str, ...] = ("A", "B", "C", "D", "F")
"""Grades from best to worst."""

SCORE_EPSILON = 1e-9
"""How far below a numeric minimum a score may fall and still reach it (Toolscore's
``min_score - 1e-9``): a perfect default score is 0.9999999999999999."""


def letter_grade(score: float) -> str:
    """The letter for ``score``: the first band whose threshold it reaches, else ``"F"``.

    Scores are not clamped: 1.5 is an A, a negative score or NaN an F.
    """
    for threshold, letter in GRADE_BANDS:
        if score >= threshold:
            return letter
    return "F"


def verdict_word(score: float) -> str:
    """The console's one-word verdict: ``PASS`` from 0.9, ``WARN`` from 0.7, else ``FAIL``."""
    if score >= 0.9:
        return "PASS"
    if score >= 0.7:
        return "WARN"
    return "FAIL"


def _grade_rank(grade: str) -> int:
    try:
        return GRADE_ORDER.index(grade.upper())
    except (ValueError, AttributeError):
        raise ValueError(
            f"unknown grade {grade!r}; expected one of {', '.join(GRADE_ORDER)}"
        ) from None


def grade_at_least(grade: str, min_grade: str) -> bool:
    """True when ``grade`` is ``min_grade`` or better (``"A"`` is at least ``"C"``).

    Raises:
        ValueError: either argument is not one of :data:`GRADE_ORDER` (case-insensitive).
    """
    return _grade_rank(grade) <= _grade_rank(min_grade)


def parse_fail_under(text: str) -> float | str:
    """Parse a ``--fail-under`` value: a score in ``[0, 1]`` or a grade letter.

    Args:
        text: ``"0.8"``, ``"1"``, ``"B"`` or ``"b"``.

    Returns:
        The score as a float, or the grade as an upper-case letter.

    Raises:
        ValueError: neither a finite number in ``[0, 1]`` nor one of ``A B C D F``.
    """
    value = text.strip()
    if value.upper() in GRADE_ORDER:
        return value.upper()
    try:
        number = float(value)
    except ValueError:
        raise ValueError(
            f"expected a score between 0 and 1 or a grade (A, B, C, D, F), got {text!r}"
        ) from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise ValueError(f"a --fail-under score must be between 0 and 1, got {text!r}")
    return number


def passes(score: float, threshold: float | str) -> bool:
    """Whether ``score`` clears a parsed ``--fail-under`` threshold: the one test of a
    minimum score, for every gate and pass rule.

    A number compares the score directly, reached within :data:`SCORE_EPSILON`
    (``score >= threshold - 1e-9``: a perfect default score, 0.9999999999999999, clears
    1.0); a letter compares the score's grade. NaN never passes a numeric threshold and
    grades as ``F``.
    """
    if isinstance(threshold, str):
        return grade_at_least(letter_grade(score), threshold)
    return score >= threshold - SCORE_EPSILON


@dataclass
class FixSuggestion:
    """One ranked item of a "Top issues to fix" list."""

    tool: str
    """The tool the issue concerns."""
    problem: str
    """What is wrong, in one line."""
    fix: str
    """What to do about it."""
    priority: int
    """Ordering key; lower is more urgent."""


@dataclass(frozen=True)
class Violations:
    """A verdict's violations, counted by kind (every one found, not only those kept)."""

    forbidden: int = 0
    """Calls that matched a forbidden rule."""
    credentials: int = 0
    """Credentials passed into tool calls."""
    rules: int = 0
    """Broken hard rules (allowlist, order, counts, budget, schemas, data flow, match modes)."""
    personal_data: int = 0
    """Personal data passed into tool calls (only when it was looked for)."""

    @property
    def total(self) -> int:
        """Every violation, of every kind."""
        return self.forbidden + self.credentials + self.rules + self.personal_data

    def to_json(self) -> dict[str, int]:
        """``{"forbidden", "credentials", "rules", "personal_data"}``."""
        return {
            "forbidden": self.forbidden,
            "credentials": self.credentials,
            "rules": self.rules,
            "personal_data": self.personal_data,
        }

    def describe(self) -> str:
        """``"2 forbidden call(s), 1 credential(s)"``: the kinds found, or ``"none"``."""
        words = (
            (self.forbidden, "forbidden call(s)"),
            (self.credentials, "credential(s)"),
            (self.rules, "broken rule(s)"),
            (self.personal_data, "personal data"),
        )
        found = [f"{count} {word}" for count, word in words if count]
        return ", ".join(found) or "none"


class Judged(Protocol):
    """What :class:`PassCriterion` reads: a :class:`Verdict`, or a dataset's trace record."""

    @property
    def score(self) -> float | None: ...
    @property
    def required_call_recall(self) -> float | None: ...
    @property
    def violations(self) -> Any: ...


VIOLATION_KINDS = ("forbidden", "credentials", "rules", "personal_data")
"""The kinds of violation a pass rule may name (``no-violations:forbidden+credentials``)."""
MATCH_MODES = ("strict", "unordered", "subset", "superset")
"""The trajectory match modes a pass rule may require (``match:superset``)."""


def _violation_count(value: Any, kinds: tuple[str, ...] | None) -> int:
    if not isinstance(value, Violations):
        return int(value)  # a record's total (its kinds are not kept)
    if kinds is None:
        return value.total
    return sum(int(getattr(value, kind)) for kind in kinds)


@dataclass(frozen=True)
class PassCriterion:
    """What counts as a passing trace (for the verdict, pass rates, pass@k and pass^k).

    A trace passes when all of these hold (each can be turned off):

    * its score is at least ``min_score`` (a number in [0, 1], reached within
      :data:`SCORE_EPSILON`, or a grade letter: the trace's grade is at least that grade;
      ``None``: any score);
    * ``all_calls``: every required gold call was completed (``required_call_recall`` is 1 or
      there was nothing required);
    * ``no_violations``: no violation of the kinds ``violation_kinds`` (None: every kind:
      forbidden calls, credentials, broken hard rules, personal data);
    * ``match``: each of these trajectory match modes passed (under the rules' argument
      modes); the doors add them to the rules before the checks start (:meth:`rules`).

    A trace without a score (no gold, unreadable) neither passes nor fails: ``None``.
    Written as text (``--pass``), see :func:`parse_pass`.
    """

    min_score: float | str | None = "A"
    all_calls: bool = True
    no_violations: bool = True
    violation_kinds: tuple[str, ...] | None = None
    match: tuple[str, ...] = ()

    def passes(self, judged: Judged) -> bool | None:
        """The criterion applied to a verdict (or a record with the same fields)."""
        if judged.score is None:
            return None
        return next(self._broken(judged), None) is None

    def reasons(self, judged: Judged) -> list[str]:
        """Why ``judged`` fails the criterion, one phrase per broken condition."""
        if judged.score is None:
            return ["no score"]
        return list(self._broken(judged))

    def _broken(self, judged: Judged) -> Iterator[str]:
        """The broken conditions of a scored ``judged``, each phrased when asked for."""
        score = cast(float, judged.score)
        if self.min_score is not None and not passes(score, self.min_score):
            if isinstance(self.min_score, str):
                yield f"grade {letter_grade(score)} below {self.min_score}"
            else:
                yield f"score {score:.3f} below {self.min_score:g}"
        recall = judged.required_call_recall
        if self.all_calls and recall is not None and recall < 1.0 - 1e-12:
            yield f"required calls {recall:.0%} completed"
        if self.no_violations:
            total = _violation_count(judged.violations, self.violation_kinds)
            if total:
                yield f"{total} violation(s)"
        if self.match:
            matches = getattr(judged, "matches", None) or {}
            for mode in self.match:
                if not matches.get(mode):
                    yield f"match {mode} failed"

    def rules(self) -> Any:
        """The rules the criterion needs the checks to run (its match modes), or None."""
        if not self.match:
            return None
        from .hardrules.spec import ruleset  # the hard rules load only when a rule asks

        return ruleset({"match": list(self.match)})

    def describe(self) -> str:
        """One line for the reports."""
        parts = []
        if isinstance(self.min_score, str):
            parts.append(f"grade {self.min_score} or better")
        elif self.min_score is not None:
            parts.append(f"score >= {self.min_score:g}")
        if self.all_calls:
            parts.append("all required calls completed")
        if self.no_violations:
            kinds = self.violation_kinds
            parts.append("no violations" if kinds is None else f"no {'/'.join(kinds)} violations")
        parts += [f"match {mode}" for mode in self.match]
        return ", ".join(parts) or "anything"

    def to_json(self) -> dict[str, Any]:
        return {
            "min_score": self.min_score,
            "all_calls": self.all_calls,
            "no_violations": self.no_violations,
            "violation_kinds": None if self.violation_kinds is None else list(self.violation_kinds),
            "match": list(self.match),
            "description": self.describe(),
        }


DEFAULT_PASS = "grade>=A, required, no-violations"
"""The default pass rule, as text (what :class:`PassCriterion` holds by default)."""


def parse_pass(text: str) -> PassCriterion:
    """A pass rule written as text: terms joined by ``,`` (or ``and``), each one of

    * ``grade>=B`` or ``score>=0.8``: the score's minimum (without one: any score);
    * ``required``: every required gold call was completed;
    * ``no-violations`` (every kind) or ``no-violations:forbidden+credentials`` (the kinds
      named: ``forbidden``, ``credentials``, ``rules``, ``personal_data``);
    * ``match:superset`` (or ``strict``, ``unordered``, ``subset``; several joined by ``+``):
      the trajectory match modes that must pass, under the rules' argument modes;
    * ``default``: :data:`DEFAULT_PASS`.

    ``"match:superset, no-violations:forbidden+credentials"`` passes a trace that made every
    expected call with its arguments (other calls are free) and neither made a forbidden
    call nor passed a credential, whatever its score.

    Raises:
        ValueError: an unknown term or value (the message lists the known ones).
    """
    terms = [t.strip() for t in text.replace(" and ", ",").split(",") if t.strip()]
    if not terms:
        raise ValueError(f"--pass: an empty rule; write terms such as {DEFAULT_PASS!r}")
    if terms == ["default"]:
        return PassCriterion()
    min_score: float | str | None = None
    required = False
    no_violations = False
    kinds: tuple[str, ...] | None = None
    match: list[str] = []
    for term in terms:
        name, _, value = term.replace(" ", "").partition(":")
        lowered = name.lower()
        if lowered.startswith(("grade>=", "score>=")):
            min_score = parse_fail_under(lowered.split(">=", 1)[1])
            if lowered.startswith("grade>=") and not isinstance(min_score, str):
                raise ValueError(f"--pass: {term!r}: a grade is one of {', '.join(GRADE_ORDER)}")
        elif lowered == "required":
            required = True
        elif lowered == "no-violations":
            no_violations = True
            if value:
                named = tuple(value.split("+"))
                bad = [k for k in named if k not in VIOLATION_KINDS]
                if bad:
                    raise ValueError(
                        f"--pass: unknown violation kind {bad[0]!r}; "
                        f"known: {', '.join(VIOLATION_KINDS)}"
                    )
                kinds = named
        elif lowered == "match":
            modes = value.split("+") if value else []
            bad = [m for m in modes if m not in MATCH_MODES] or ([] if modes else [""])
            if bad:
                raise ValueError(
                    f"--pass: match needs a mode ({', '.join(MATCH_MODES)}), got {value!r}"
                )
            match += [m for m in modes if m not in match]
        else:
            raise ValueError(
                f"--pass: unknown term {term!r}; known: grade>=X, score>=N, required, "
                "no-violations[:kinds], match:mode, default"
            )
    return PassCriterion(min_score, required, no_violations, kinds, tuple(match))


@dataclass(frozen=True)
class Verdict:
    """One evaluation's verdict, the same through every door (see :func:`judge`)."""

    score: float | None
    """The composite score; ``None`` without gold (checks only)."""
    grade: str | None
    """The score's letter; ``None`` without gold."""
    required_call_recall: float | None
    """Share of required calls completed; ``None`` when nothing was required or no gold."""
    violations: Violations
    """Violations by kind."""
    passed: bool | None
    """The :class:`PassCriterion`'s answer; ``None`` without a score."""
    criterion: PassCriterion
    """The criterion that decided :attr:`passed`."""
    matches: Mapping[str, bool] = field(default_factory=dict)
    """The trajectory match modes the rules asked for, each with whether it passed."""

    @property
    def has_gold(self) -> bool:
        """False for a checks-only evaluation."""
        return self.score is not None

    def to_json(self) -> dict[str, Any]:
        """The verdict as JSON-ready values (a non-finite score becomes ``None``)."""
        score = self.score
        return {
            "score": score if score is not None and math.isfinite(score) else None,
            "grade": self.grade,
            "required_call_recall": self.required_call_recall,
            "violations": self.violations.total,
            "violations_by_kind": self.violations.to_json(),
            "matches": dict(self.matches),
            "passed": self.passed,
        }


def _section(metrics: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = metrics.get(name)
    if type(value) is dict:  # (the usual cases, without an ABC check)
        return value
    if value is None:
        return _EMPTY
    return value if isinstance(value, Mapping) else _EMPTY


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _count(value: Any, default: int = 0) -> int:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return int(value)


def violations_of(metrics: Mapping[str, Any]) -> Violations:
    """The violations a result's metrics hold, by kind (their exact counts, not the kept
    records)."""
    policy = _section(metrics, "policy_metrics")
    security = _section(metrics, "security_metrics")
    rules = _section(metrics, "rule_metrics")
    return Violations(
        forbidden=_count(policy.get("violation_count"), len(policy.get("violations") or ())),
        credentials=_count(security.get("secret_count")),
        rules=_count(rules.get("violation_count")),
        personal_data=_count(security.get("pii_count")),
    )


class Evaluated(Protocol):
    """What :func:`judge` reads from an :class:`~toolscore.result.EvaluationResult`."""

    @property
    def score(self) -> float: ...
    @property
    def required_call_recall(self) -> float | None: ...
    @property
    def metrics(self) -> Mapping[str, Any]: ...


def judge(result: Evaluated, criterion: PassCriterion | None = None) -> Verdict:
    """The verdict of an evaluation result: the one function every door asks.

    Args:
        result: the reducer's result. One evaluated without gold (``has_gold`` false) has no
            score, grade or pass.
        criterion: what counts as a pass; by default the result's own (the pass rule it was
            evaluated under), else :class:`PassCriterion`'s default (grade A, every required
            call completed, no violation).
    """
    criterion = criterion or getattr(result, "criterion", None) or _DEFAULT_CRITERION
    metrics = result.metrics
    violations = violations_of(metrics)
    match = _section(_section(metrics, "rule_metrics"), "match")
    matches = {str(m): bool(v.get("passed")) for m, v in match.items() if isinstance(v, Mapping)}
    if not getattr(result, "has_gold", True):
        return Verdict(None, None, None, violations, None, criterion, matches)
    score = float(result.score)
    recall = result.required_call_recall
    passed = criterion.passes(_Judging(score, recall, violations, matches))
    return Verdict(score, letter_grade(score), recall, violations, passed, criterion, matches)


class _Judging(NamedTuple):
    """What :meth:`PassCriterion.passes` reads of a verdict being made."""

    score: float
    required_call_recall: float | None
    violations: Violations
    matches: Mapping[str, bool]


_DEFAULT_CRITERION = PassCriterion()
"""The default pass rule (one object: a criterion never changes)."""
