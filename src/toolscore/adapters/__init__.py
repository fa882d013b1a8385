"""Toolscore 1.10's ``toolscore.adapters`` package path: one adapter class per trace format.

Each class parses a decoded JSON value with this package's streamed reader of its format
(:mod:`toolscore.sources`); see :mod:`.base`.
"""

from __future__ import annotations

from .anthropic import AnthropicAdapter
from .base import BaseAdapter, ToolCall
from .custom import CustomAdapter
from .gemini import GeminiAdapter
from .langchain import LangChainAdapter
from .mcp import MCPAdapter
from .openai import OpenAIAdapter
from .otel import OTelAdapter

__all__ = [
    "AnthropicAdapter",
    "BaseAdapter",
    "CustomAdapter",
    "GeminiAdapter",
    "LangChainAdapter",
    "MCPAdapter",
    "OTelAdapter",
    "OpenAIAdapter",
    "ToolCall",
]
