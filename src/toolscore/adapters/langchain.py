"""Toolscore 1.10's ``toolscore.adapters.langchain``: :class:`LangChainAdapter`, read by
:mod:`toolscore.sources.langchain`."""

from __future__ import annotations

from .base import BaseAdapter, ToolCall

__all__ = ["LangChainAdapter", "ToolCall"]


class LangChainAdapter(BaseAdapter):
    """LangChain traces (see :mod:`toolscore.sources.langchain` for what is read)."""

    format = "langchain"
