"""Toolscore 1.10's ``toolscore.adapters.anthropic``: :class:`AnthropicAdapter`, read by
:mod:`toolscore.sources.anthropic`."""

from __future__ import annotations

from .base import BaseAdapter, ToolCall

__all__ = ["AnthropicAdapter", "ToolCall"]


class AnthropicAdapter(BaseAdapter):
    """Anthropic traces (see :mod:`toolscore.sources.anthropic` for what is read)."""

    format = "anthropic"
