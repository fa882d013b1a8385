"""Errors toolscore raises.

::

    ToolscoreError
    ├── InputError            the input cannot be read as asked (CLI exit 2)
    │   ├── MalformedTrace    bad JSON, invalid UTF-8, a call of the wrong shape
    │   ├── TruncatedTrace    the input ended inside a JSON value
    │   ├── FormatNotDetected no known format fits, or a non-empty input yielded no call
    │   ├── GoldFileError     the gold file is missing or of the wrong shape
    │   └── RuleFileError     a forbidden-rule file is malformed
    └── UsageError            a bad option or argument (unknown format, bad weight) (exit 2)

Every :class:`InputError` keeps the fields it was built from (``path``, ``line``, ``offset``)
for the JSON record, and its message names the file and the line or byte offset.
"""

from __future__ import annotations

__all__ = [
    "FormatNotDetected",
    "GoldFileError",
    "InputError",
    "MalformedTrace",
    "RuleFileError",
    "ToolscoreError",
    "TruncatedTrace",
    "UsageError",
]


class ToolscoreError(Exception):
    """Base class of every error toolscore raises on purpose."""


class UsageError(ToolscoreError, ValueError):
    """Raised when an option or argument is invalid (unknown format, bad weight)."""


class InputError(ToolscoreError, ValueError):
    """Raised when an input cannot be read; says where.

    Args:
        path: the file (``<stdin>``, ``<stream>`` for non-file input).
        problem: what is wrong, in a few words.
        line: 1-based line, for line-framed input.
        offset: 0-based byte offset, for JSON documents.
    """

    json_path: tuple[str | int, ...] | None = None
    """For gold and rule files: the JSON path of the value the error is about (``(3, "args")``
    for the ``args`` of item 3), when known; :func:`toolscore.jsonfile.with_position` turns
    it into a line and byte offset."""

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        line: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.path = path
        self.problem = problem
        self.line = line
        self.offset = offset
        super().__init__(self._text())

    def _text(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        elif self.offset is not None:
            where += f": byte {self.offset}"
        # import cycle: redact -> calls -> failed -> errors
        from .redact import redact_secrets

        # the message may quote the input: it is printed, so never with a credential in it
        return redact_secrets(f"{where}: {self.problem}")

    def to_json(self) -> dict[str, object]:
        return {
            "type": type(self).__name__,
            "path": self.path,
            "line": self.line,
            "offset": self.offset,
            "message": str(self),
        }


class MalformedTrace(InputError):
    """Raised when a trace holds bytes that are not valid JSON (or UTF-8) where a value was due."""


class TruncatedTrace(InputError):
    """Raised when a trace ends inside a JSON value; the calls before it are still evaluated."""


class FormatNotDetected(InputError):
    """Raised when no reader fits the input, or a non-empty input yielded no tool call."""


class GoldFileError(InputError):
    """Raised when a gold file is missing, is not JSON, or is not a list of calls."""


class RuleFileError(InputError):
    """Raised when a forbidden-rule file or rule list is malformed; names the rule's index."""
