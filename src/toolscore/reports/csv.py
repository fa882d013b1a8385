"""The CSV report: the summary counts, then every metric flattened to ``Category,Metric,Value``.

The layout is Toolscore 1.10's: nested sections become dotted categories, lists one cell of
``", "``-joined items, rates and accuracies percentages (``75.00%``), other floats four
decimals. Unlike 1.10, every cell is redacted (:func:`toolscore.redact.redact_secrets`): a
spreadsheet is a human-facing output, so credentials in ``trajectory_details`` or policy
violations do not reach it. Rows are written as the metrics are walked, never built in full.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator, Mapping
from typing import Any

from ..outputs import write_report
from ..redact import redact_secrets
from . import ReportResult

__all__ = ["csv_rows", "format_value", "write_csv"]

_HEADER = ("Category", "Metric", "Value")
LINE_END = "\r\n"
"""Rows end as the ``csv`` module ends them by default (Toolscore 1.10's files too)."""


def format_value(key: str, value: Any) -> str:
    """A metric's cell: a percentage for ``*_accuracy``, ``*_rate`` and ``*score*`` floats,
    four decimals for other floats, lists joined with ``", "``, anything else as ``str``."""
    if isinstance(value, float):
        if key.endswith(("_accuracy", "_rate")) or "score" in key:
            return f"{value * 100:.2f}%"
        return f"{value:.4f}"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def _flatten(metrics: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, str, str]]:
    for key, value in metrics.items():
        name = str(key)
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{prefix}.{name}" if prefix else name)
        else:
            yield prefix, name, format_value(name, value)


def csv_rows(result: ReportResult) -> Iterator[tuple[str, str, str]]:
    """The report's rows, redacted, header rows included."""
    yield _HEADER
    yield "Summary", "Gold Calls Count", str(len(result.gold_calls))
    yield "Summary", "Trace Calls Count", str(result.trace_calls_count)
    yield "", "", ""
    yield _HEADER
    for category, metric, value in _flatten(result.metrics, ""):
        yield redact_secrets(category), redact_secrets(metric), redact_secrets(value)


def _lines(result: ReportResult) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=LINE_END)
    for row in csv_rows(result):
        writer.writerow(row)
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()


def write_csv(result: ReportResult, path: str | os.PathLike[str]) -> None:
    """Write the CSV report of ``result`` to ``path`` (atomically, like the other reports)."""
    write_report(path, _lines(result))
