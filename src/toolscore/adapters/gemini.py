"""Toolscore 1.10's ``toolscore.adapters.gemini``: :class:`GeminiAdapter`, read by
:mod:`toolscore.sources.gemini`."""

from __future__ import annotations

from .base import BaseAdapter, ToolCall

__all__ = ["GeminiAdapter", "ToolCall"]


class GeminiAdapter(BaseAdapter):
    """Gemini traces (see :mod:`toolscore.sources.gemini` for what is read)."""

    format = "gemini"
