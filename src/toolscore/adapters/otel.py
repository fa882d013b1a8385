"""Toolscore 1.10's ``toolscore.adapters.otel``: :class:`OTelAdapter`, read by
:mod:`toolscore.sources.otel`."""

from __future__ import annotations

from .base import BaseAdapter, ToolCall

__all__ = ["OTelAdapter", "ToolCall"]


class OTelAdapter(BaseAdapter):
    """OpenTelemetry traces (see :mod:`toolscore.sources.otel` for what is read)."""

    format = "otel"
