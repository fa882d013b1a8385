"""Toolscore 1.10's ``toolscore.reports.findings``: the behavior and safety lines of a result."""

from __future__ import annotations

from . import ReportResult

__all__ = ["behavior_findings"]


def behavior_findings(result: ReportResult) -> list[tuple[str, str]]:
    """``(severity, message)`` per finding: forbidden calls and credentials (``error``), then
    failed calls and retries (``warning``); see :meth:`EvaluationResult.behavior_findings`."""
    return result.behavior_findings()
