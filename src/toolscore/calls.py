"""The records every part of toolscore speaks: calls, findings and batches.

A source turns bytes into :class:`ToolCall` objects; the pipeline hands them to the checks in
:class:`Batch` objects; checks answer with :class:`Finding` objects. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .columns import Columns
    from .errors import InputError

__all__ = ["Batch", "ExpectedCall", "Finding", "Location", "Severity", "ToolCall"]

Severity = Literal["error", "warning", "info"]
FindingRow = tuple[
    str, str, Severity, str, int | None, str | None, str | None, int | None, int | None, str | None
]
"""A :class:`Finding` as plain values: check, kind, severity, message, call index, tool, the
location's source, line and offset, preview."""


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

    def row(self) -> FindingRow:
        """The finding as a tuple of plain values (:meth:`from_row` turns it back): what a
        part of a trace read in another process sends, pickled ten times faster than the
        object."""
        loc = self.location
        if loc is None:
            return (self.check, self.kind, self.severity, self.message, self.call_index,
                    self.tool, None, None, None, self.preview)  # fmt: skip
        return (self.check, self.kind, self.severity, self.message, self.call_index,
                self.tool, loc.source, loc.line, loc.offset, self.preview)  # fmt: skip

    @staticmethod
    def from_row(row: FindingRow, calls: int = 0, lines: int = 0) -> Finding:
        """The finding of :meth:`row`, moved ``calls`` calls and ``lines`` lines further on
        (see :meth:`shifted`)."""
        check, kind, severity, message, index, tool, source, line, offset, preview = row
        if index is not None and calls:
            new = index + calls
            old = f"call {index + 1} "
            if message.startswith(old):
                message = f"call {new + 1} {message[len(old) :]}"
            if kind == "retry_after_error":
                message = message.replace(
                    f" repeats failed call {index} ", f" repeats failed call {new} ", 1
                )
            index = new
        if source is None:
            return Finding(check, kind, severity, message, index, tool, None, preview)
        if line is not None and lines:
            old = f"{source}:{line}: "  # how the location prints (Location.__str__)
            line += lines
            if message.startswith(old):
                message = f"{source}:{line}: {message[len(old) :]}"
        return Finding(
            check, kind, severity, message, index, tool, Location(source, line, offset), preview
        )

    def shifted(self, calls: int, lines: int) -> Finding:
        """The same finding for a part of a trace read on its own: its call ``calls`` and its
        line ``lines`` further on (the message's numbers too).

        Every message that names a call starts with ``call N`` (1-based), a retry's also says
        ``repeats failed call N-1``, and a message about a line starts with its location.
        """
        return Finding.from_row(self.row(), calls, lines)

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


class Batch:
    """What crosses a task boundary: the calls read from one chunk of input.

    ``calls`` are new calls, in index order, seen for the first time (their result may still be
    pending). ``done`` are calls whose result is now known, released by the pipeline in index
    order; for formats that carry the result on the call itself, every call is in both lists.

    A batch of the custom format may instead hold a decoded ``block``
    (:class:`~toolscore.columns.Columns`): its calls are then both new and done, and they only
    become ``ToolCall`` objects when ``calls`` or ``done`` is read. The built-in checks read
    :meth:`columns` and :meth:`done_columns`, which never build them.
    """

    __slots__ = (
        "_calls",
        "_columns",
        "_done",
        "_done_columns",
        "block",
        "decoded",
        "error",
        "findings",
    )

    def __init__(
        self,
        calls: list[ToolCall] | None = None,
        done: list[ToolCall] | None = None,
        findings: list[Finding] | None = None,
        error: InputError | None = None,
        *,
        block: Columns | None = None,
    ) -> None:
        self._calls = calls
        self._done = done
        self.findings: list[Finding] = [] if findings is None else findings
        """Findings raised while reading (a malformed line), to forward with the batch."""
        self.error = error
        """A fatal input error met after the calls above were read (truncated or malformed
        JSON). The batch's calls still count; the source stops after this batch."""
        self.block = block
        self.decoded = False
        """The calls were decoded from a trace (their arguments are JSON values); set by the
        readers."""
        self._columns: Columns | None = None
        self._done_columns: Columns | None = None

    @property
    def calls(self) -> list[ToolCall]:
        if self._calls is None:
            self._materialize()
        assert self._calls is not None
        return self._calls

    @calls.setter
    def calls(self, value: list[ToolCall]) -> None:
        self._unblock()
        self._calls = value
        self._columns = None

    @property
    def done(self) -> list[ToolCall]:
        if self._done is None:
            self._materialize()
        assert self._done is not None
        return self._done

    @done.setter
    def done(self, value: list[ToolCall]) -> None:
        self._unblock()
        self._done = value
        self._done_columns = None

    def _materialize(self) -> None:
        """Build the ``calls`` and ``done`` lists (two lists: changing one leaves the other)."""
        if self.block is None:
            calls: list[ToolCall] = []
            done: list[ToolCall] = []
        else:
            calls = self._calls if self._calls is not None else self.block.calls()
            done = list(calls)
        if self._calls is None:
            self._calls = calls
        if self._done is None:
            self._done = done

    def _unblock(self) -> None:
        """A block batch that is changed becomes a batch of ``ToolCall`` lists."""
        if self.block is not None:
            self._materialize()
            self.block = None
            self._columns = self._done_columns = None

    @property
    def n_calls(self) -> int:
        """``len(calls)``, without building the calls of a block."""
        if self._calls is None:
            return self.block.n if self.block is not None else 0
        return len(self._calls)

    @property
    def n_done(self) -> int:
        """``len(done)``, without building the calls of a block."""
        if self._done is None:
            return self.block.n if self.block is not None else 0
        return len(self._done)

    @property
    def empty(self) -> bool:
        """No call, no finding and no error: nothing to hand on."""
        return not (self.n_calls or self.n_done or self.findings or self.error is not None)

    def columns(self) -> Columns:
        """The new calls as columns."""
        if self._columns is None:
            if self.block is not None:
                self._columns = self.block
            else:
                from .columns import ListColumns

                self._columns = ListColumns(self.calls, "json" if self.decoded else "any")
        return self._columns

    def done_columns(self) -> Columns:
        """The completed calls as columns (the same object as :meth:`columns` for a block)."""
        if self._done_columns is None:
            if self.block is not None:
                self._done_columns = self.block
            else:
                from .columns import ListColumns

                self._done_columns = ListColumns(self.done, "json" if self.decoded else "any")
        return self._done_columns

    def __repr__(self) -> str:
        return (
            f"Batch(calls={self.n_calls}, done={self.n_done}, findings={len(self.findings)}, "
            f"error={self.error!r})"
        )
