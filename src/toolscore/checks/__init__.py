"""The checks, and the protocol a check of your own follows (:mod:`toolscore.checks._base`)."""

from ._base import AsyncCheck, BaseCheck, Check, State, UserCheck, as_check

__all__ = ["AsyncCheck", "BaseCheck", "Check", "State", "UserCheck", "as_check"]
