"""The ``http_ok`` side-effect validator: did the HTTP call behind a tool call succeed?

Toolscore 1.10's ``toolscore.validators.http``. It reads what the trace recorded and makes no
request: the status comes from the result (``status`` or ``status_code`` of a dict result, or
an int result), else from ``metadata["http_status"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..calls import ToolCall

__all__ = ["HTTPValidator"]

_OK = range(200, 207)


def _status(call: ToolCall) -> Any:
    result = call.result
    if isinstance(result, Mapping):
        for key in ("status", "status_code"):
            if key in result:
                return result[key]
    elif isinstance(result, int):
        return result
    return call.metadata.get("http_status") if call.metadata else None


class HTTPValidator:
    """Checks a call's recorded HTTP status against a gold call's ``http_ok`` value."""

    def validate(self, call: ToolCall, expected: Any) -> bool:
        """``expected`` ``True``: a status from 200 to 206; otherwise the status must equal
        ``int(expected)``. With no status recorded, a call whose args hold ``url`` or
        ``endpoint`` passes when its result is truthy.

        Raises:
            ValueError, TypeError: the status or ``expected`` is not a number
                (``"Validator error: ..."`` in the side-effect details).
        """
        status = _status(call)
        if status is None:
            args = call.args if isinstance(call.args, Mapping) else {}
            return ("url" in args or "endpoint" in args) and bool(call.result)
        code = int(status)
        if expected is True:
            return code in _OK
        return code == int(expected)
