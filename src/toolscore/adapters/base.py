"""Toolscore 1.10's ``toolscore.adapters.base`` module path: :class:`ToolCall` and the
adapter base class.

An adapter here parses a whole JSON value (``OpenAIAdapter().parse(data)``) with the streamed
reader of its format (:mod:`toolscore.sources`): the value is written out as JSON and read back
the way a trace file is, so a dict in memory and the same dict in a file give the same calls.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from .._migration import read_calls
from ..calls import ToolCall

__all__ = ["BaseAdapter", "ToolCall"]


class BaseAdapter:
    """Parses one trace format into :class:`ToolCall` objects; subclasses name the format."""

    format: ClassVar[str] = "auto"
    """The reader's name in ``toolscore.sources.FORMATS`` (``auto``: detect it)."""

    def parse(self, trace_data: dict[str, Any] | list[Any]) -> list[ToolCall]:
        """The calls of ``trace_data`` (a decoded JSON value), in trace order.

        Raises:
            ValueError: ``trace_data`` is None or not a dict or list, or it does not hold a
                trace of this format (an :class:`~toolscore.errors.InputError` naming the
                byte offset).
        """
        if trace_data is None:
            raise ValueError("Trace data cannot be None")
        if not isinstance(trace_data, (dict, list)):
            raise ValueError(f"Trace data must be dict or list, got {type(trace_data).__name__}")
        data = json.dumps(trace_data, default=str).encode()
        return read_calls(data, self.format)
