"""Toolscore 1.10's ``toolscore.reports.markdown_report``: :func:`generate_markdown_report`
writes the Markdown report (redacted)."""

from __future__ import annotations

import os
from pathlib import Path

from . import ReportResult
from .markdown import write_markdown

__all__ = ["generate_markdown_report"]


def generate_markdown_report(
    result: ReportResult, output_path: str | os.PathLike[str] = "toolscore.md"
) -> Path:
    """Write the report of ``result`` to ``output_path`` and return that path."""
    write_markdown(result, output_path)
    return Path(output_path)
