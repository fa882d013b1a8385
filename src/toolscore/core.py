"""Toolscore 1.10's ``toolscore.core`` module path: the evaluation entry points.

A thin module for code written against Toolscore's documented paths; the implementations live
in :mod:`toolscore.api`, :mod:`toolscore.expect`, :mod:`toolscore.gold` and
:mod:`toolscore.result`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._migration import read_calls
from .api import evaluate, evaluate_trace
from .calls import ToolCall
from .expect import ToolScoreAssertionError, assert_tools, test_agent, test_agent_async
from .gold import load_gold as load_gold_standard
from .result import EvaluationResult
from .verdict import letter_grade

__all__ = [
    "EvaluationResult",
    "ToolCall",
    "ToolScoreAssertionError",
    "assert_tools",
    "evaluate",
    "evaluate_trace",
    "letter_grade",
    "load_gold_standard",
    "load_trace",
    "test_agent",
    "test_agent_async",
]


def load_trace(file_path: str | Path | os.PathLike[str], format: str = "auto") -> list[ToolCall]:
    """Every call of a trace file, in order (Toolscore 1.10's ``load_trace``).

    The file is read by the streamed readers, so JSON Lines traces load too; the list itself
    holds every call (use :func:`evaluate_trace` to score a large trace without it).

    Raises:
        InputError: (a ``ValueError``) the file is missing, malformed or of no known format.
        UsageError: (a ``ValueError``) an unknown ``format``.
    """
    return read_calls(file_path, format)
