"""The records every part of toolscore speaks: calls, findings and batches.

A source turns bytes into :class:`ToolCall` objects; the pipeline hands them to the checks in
:class:`Batch` objects; checks answer with :class:`Finding` objects. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .errors import InputError

__all__ = ["Batch", "ExpectedCall", "Finding", "Location", "Severity", "ToolCall"]

Severity = Literal["error", "warning", "info"]


@dataclass(slots=True)
class Location:
    """Where something sits in an input: a file plus a line (JSON Lines) or a byte offset."""

    source: str
    """The file name, ``<stdin>`` or ``<stream>``."""
    line: int | None = None
    """1-based line number, for line-framed input."""
    offset: int | None = None
    """0-based byte offset, for JSON documents."""

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.source}:{self.line}"
        if self.offset is not None:
            return f"{self.source}: byte {self.offset}"
        return self.source


@dataclass(slots=True)
class ToolCall:
    """One tool call an agent made (or, in a gold file, was expected to make)."""

    tool: str
    """The tool's name, compared exactly and case-sensitively."""
    args: Any = None
    """The arguments: usually a dict; ``None`` in a gold file means "don't check"."""
    result: Any = None
    """What the tool returned, where the trace records it."""
    timestamp: float | None = None
    duration: float | None = None
    """Seconds the call took, where the trace records it."""
    cost: float | None = None
    """USD, where the trace records it."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Format-specific extras; ``is_error``, ``error`` and ``id`` live here as in Toolscore."""
    index: int = -1
    """0-based position in the trace; set by the source that read it."""
    location: Location | None = None
    """Where the call was read, for messages; ``None`` for in-memory calls."""
    complete: bool = True
    """False while the call's result is still to come (OpenAI ``tool`` messages, MCP
    responses). The source sets it True and hands the call on again once the result arrives."""

    def __post_init__(self) -> None:
        if not self.tool:
            raise ValueError("Tool name cannot be empty")

    @property
    def is_error(self) -> bool:
        """True when the call failed: ``metadata["is_error"] is True`` or a truthy ``error``."""
        md = self.metadata
        if not md:
            return False
        if md.get("is_error") is True:
            return True
        err = md.get("error")
        return bool(err) and err is not False

    @property
    def error(self) -> str | None:
        """The recorded error message, or ``None`` (also when ``error`` is a bool)."""
        err = self.metadata.get("error") if self.metadata else None
        if err is None or isinstance(err, bool):
            return None
        return err if isinstance(err, str) else str(err)


# Gold calls use the same record; the alias documents intent at call sites.
ExpectedCall = ToolCall


@dataclass(slots=True, frozen=True)
class Finding:
    """Something a check noticed, reported the moment it is known.

    Findings never hold raw arguments: ``message`` and ``preview`` are safe to print.
    """

    check: str
    """The check that emitted it: ``errors``, ``secrets``, ``policy``, ``input``..."""
    kind: str
    """What it is within the check: ``failed_call``, ``retry_after_error``, a credential kind,
    ``forbidden_call``, ``malformed_line``..."""
    severity: Severity
    message: str
    """One human-readable line, already redacted."""
    call_index: int | None = None
    """0-based index of the call concerned, when there is one."""
    tool: str | None = None
    location: Location | None = None
    preview: str | None = None
    """A redacted preview of the offending value (credentials)."""

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON-safe dict (the findings stream's line)."""
        loc = self.location
        return {
            "check": self.check,
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "call_index": self.call_index,
            "tool": self.tool,
            "location": None
            if loc is None
            else {"source": loc.source, "line": loc.line, "offset": loc.offset},
            "preview": self.preview,
        }


@dataclass(slots=True)
class Batch:
    """What crosses a task boundary: the calls read from one chunk of input.

    ``calls`` are new calls, in index order, seen for the first time (their result may still be
    pending). ``done`` are calls whose result is now known, released by the pipeline in index
    order; for formats that carry the result on the call itself, every call is in both lists.
    """

    calls: list[ToolCall] = field(default_factory=list)
    done: list[ToolCall] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """Findings raised while reading (a malformed line), to forward with the batch."""
    error: InputError | None = None
    """A fatal input error met after the calls above were read (truncated or malformed JSON).
    The batch's calls still count; the source stops after this batch."""
