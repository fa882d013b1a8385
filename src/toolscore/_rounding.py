"""How human-facing outputs show a score or a rate: rounded (the JSON report keeps every
digit). Console, Markdown, HTML, JUnit and the GitHub Action's outputs share these."""

from __future__ import annotations

__all__ = ["percent", "score_text"]


def score_text(value: float | None, missing: str = "-") -> str:
    """A score in [0, 1] to 3 decimals (``0.49999999999999994`` is ``0.500``)."""
    return missing if value is None else f"{value:.3f}"


def percent(value: float | None, missing: str = "-") -> str:
    """A rate as a percentage with one decimal (``0.4999`` is ``50.0%``)."""
    return missing if value is None else f"{value:.1%}"
