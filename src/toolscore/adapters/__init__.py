"""Toolscore 1.10's ``toolscore.adapters`` package path (the call record).

Trace formats are read by :mod:`toolscore.sources`; only the record is re-exported here.
"""

from __future__ import annotations

from ..calls import ToolCall

__all__ = ["ToolCall"]
