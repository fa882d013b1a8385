"""Toolscore 1.10's ``toolscore.reports.html_report``: :func:`generate_html_report` writes the
HTML report (redacted)."""

from __future__ import annotations

import os
from pathlib import Path

from . import ReportResult
from .html import write_html

__all__ = ["generate_html_report"]


def generate_html_report(
    result: ReportResult, output_path: str | os.PathLike[str] = "toolscore.html"
) -> Path:
    """Write the report of ``result`` to ``output_path`` and return that path."""
    write_html(result, output_path)
    return Path(output_path)
