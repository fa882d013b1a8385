"""Toolscore 1.10's ``toolscore.reports.csv_report``: :func:`generate_csv_report` writes the
CSV report (redacted; see :mod:`.csv`)."""

from __future__ import annotations

import os
from pathlib import Path

from . import ReportResult
from .csv import write_csv

__all__ = ["generate_csv_report"]


def generate_csv_report(
    result: ReportResult, output_path: str | os.PathLike[str] = "toolscore.csv"
) -> Path:
    """Write the report of ``result`` to ``output_path`` and return that path."""
    write_csv(result, output_path)
    return Path(output_path)
