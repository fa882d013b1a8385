"""Toolscore 1.10's ``toolscore.adapters.custom``: :class:`CustomAdapter`, read by
:mod:`toolscore.sources.custom`."""

from __future__ import annotations

from .base import BaseAdapter, ToolCall

__all__ = ["CustomAdapter", "ToolCall"]


class CustomAdapter(BaseAdapter):
    """custom traces (see :mod:`toolscore.sources.custom` for what is read)."""

    format = "custom"
