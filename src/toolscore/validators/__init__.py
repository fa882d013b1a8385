"""Toolscore 1.10's ``toolscore.validators``: the side-effect validators a gold call's
``side_effects`` name (``http_ok``, ``file_exists``, ``sql_rows``).

Each validator is ``validate(call, expected) -> bool`` over the trace call paired with the gold
call; :func:`default_validators` is the table ``evaluate_trace`` uses (see
:mod:`toolscore.side_effects`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..calls import ToolCall
from .database import SQLValidator
from .filesystem import FileSystemValidator
from .http import HTTPValidator

__all__ = [
    "FileSystemValidator",
    "HTTPValidator",
    "SQLValidator",
    "Validator",
    "default_validators",
]

Validator = Callable[[ToolCall, Any], Any]
"""A side-effect check: the trace call and the gold's expected value in, truthy for a pass."""


def default_validators() -> dict[str, Validator]:
    """``http_ok``, ``file_exists`` and ``sql_rows``, as Toolscore 1.10's ``evaluate_trace``."""
    return {
        "http_ok": HTTPValidator().validate,
        "file_exists": FileSystemValidator().validate,
        "sql_rows": SQLValidator().validate,
    }
