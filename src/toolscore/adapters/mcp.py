"""Toolscore 1.10's ``toolscore.adapters.mcp``: :class:`MCPAdapter`, read by
:mod:`toolscore.sources.mcp`."""

from __future__ import annotations

from .base import BaseAdapter, ToolCall

__all__ = ["MCPAdapter", "ToolCall"]


class MCPAdapter(BaseAdapter):
    """MCP traces (see :mod:`toolscore.sources.mcp` for what is read)."""

    format = "mcp"
