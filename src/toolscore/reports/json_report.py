"""Toolscore 1.10's ``toolscore.reports.json_report``: :func:`generate_json_report` writes the
JSON record (streamed; its layout is this package's, see the README)."""

from __future__ import annotations

import os
from pathlib import Path

from . import ReportResult
from .json import write_json_report

__all__ = ["generate_json_report"]


def generate_json_report(
    result: ReportResult, output_path: str | os.PathLike[str] = "toolscore.json"
) -> Path:
    """Write the report of ``result`` to ``output_path`` and return that path."""
    write_json_report(result, output_path)
    return Path(output_path)
