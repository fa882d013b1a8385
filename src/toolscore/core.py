"""Toolscore 1.10's ``toolscore.core`` module path: the evaluation entry points.

A thin module for code written against Toolscore's documented paths; the implementations live
in :mod:`toolscore.api` and :mod:`toolscore.gold`.
"""

from __future__ import annotations

from .api import evaluate, evaluate_trace
from .gold import load_gold as load_gold_standard

__all__ = ["evaluate", "evaluate_trace", "load_gold_standard"]
