"""Toolscore 1.10's ``toolscore.metrics.security`` module path: credential scan and redaction."""

from __future__ import annotations

from ..checks.secrets import find_secrets
from ..redact import PATTERNS, redact_secrets

__all__ = ["PATTERNS", "find_secrets", "redact_secrets"]
