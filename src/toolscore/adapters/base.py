"""Toolscore 1.10's ``toolscore.adapters.base`` module path: :class:`ToolCall`."""

from __future__ import annotations

from ..calls import ToolCall

__all__ = ["ToolCall"]
