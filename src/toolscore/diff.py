"""Toolscore 1.10's ``toolscore.diff``: the ranked fix list and the assertion-failure text.

:func:`build_eval_fix_list` aligns the expected and actual tool names (the longest common
subsequence, :func:`toolscore.failures.align`) and turns each difference into a
:class:`~toolscore.verdict.FixSuggestion`, worded as the console's "Top issues to fix"
(:mod:`toolscore.reports._issues`): a missing call (priority 0), a wrong tool where one was
expected (1), a call with other arguments (2), an extra call (3); stable within a priority.
Arguments are compared as the score compares them (a string equal once stripped is no
difference), and values are redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .calls import ToolCall
from .expect import _failure_text
from .failures import align
from .reports._issues import Issue, arg_lines, extra, missing, redacted, wrong_args, wrong_tool
from .verdict import FixSuggestion

__all__ = ["FixSuggestion", "build_eval_fix_list", "render_failure"]


def _issue(expected: ToolCall | None, actual: ToolCall | None) -> Issue | None:
    if actual is None:
        return None if expected is None else missing(expected.tool)
    if expected is None:
        return extra(actual.tool)
    if expected.tool != actual.tool:
        return wrong_tool(None, expected.tool, actual.tool)
    if expected.args is None:
        return None
    lines = arg_lines(expected.args, actual.args if actual.args is not None else {})
    return wrong_args(None, actual.tool, lines) if lines else None


def build_eval_fix_list(gold: Sequence[ToolCall], trace: Sequence[ToolCall]) -> list[FixSuggestion]:
    """What to fix, most urgent first: one suggestion per difference between the calls."""
    found = [issue for e, a in align(gold, trace) if (issue := _issue(e, a)) is not None]
    found.sort(key=lambda issue: issue.priority)
    return [FixSuggestion(i.tool, i.problem, i.fix, i.priority) for i in map(redacted, found)]


def render_failure(result: Any, min_score: float, *, color: bool = False, width: int = 100) -> str:
    """The text an assertion raises when ``result`` scores below ``min_score``: expected
    against actual, call by call (see :mod:`toolscore.failures`), redacted.

    ``color`` and ``width`` are accepted for Toolscore 1.10's signature; the text is plain
    and each row is one line.
    """
    del color, width

    return _failure_text(result, min_score)
