"""Letter grades, the console's verdict word, and the ``--fail-under`` gate.

Toolscore grades a score by fixed bands (:data:`GRADE_BANDS`, best first): a score at or above
a band's threshold earns its letter, anything below the last band (NaN included) is an ``F``.
The gate helpers let a CI job fail on either a number or a letter: ``--fail-under 0.8`` or
``--fail-under B``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "GRADE_BANDS",
    "GRADE_ORDER",
    "FixSuggestion",
    "grade_at_least",
    "letter_grade",
    "parse_fail_under",
    "passes",
    "verdict_word",
]

GRADE_BANDS: tuple[tuple[float, str], ...] = ((0.9, "A"), (0.8, "B"), (0.7, "C"), (0.6, "D"))
"""``(threshold, letter)`` pairs, highest first; below the last one is ``F``."""

GRADE_ORDER: tuple[str, ...] = ("A", "B", "C", "D", "F")
"""Grades from best to worst."""


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
    """Whether ``score`` clears a parsed ``--fail-under`` threshold.

    A number compares the score directly (``score >= threshold``); a letter compares the
    score's grade. NaN never passes a numeric threshold and grades as ``F``.
    """
    if isinstance(threshold, str):
        return grade_at_least(letter_grade(score), threshold)
    return score >= threshold


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
