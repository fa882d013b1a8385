"""Toolscore 1.10's ``toolscore.adapters.openai``: :class:`OpenAIAdapter`, read by
:mod:`toolscore.sources.openai`."""

from __future__ import annotations

from .base import BaseAdapter, ToolCall

__all__ = ["OpenAIAdapter", "ToolCall"]


class OpenAIAdapter(BaseAdapter):
    """OpenAI traces (see :mod:`toolscore.sources.openai` for what is read)."""

    format = "openai"
