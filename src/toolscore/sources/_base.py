"""The two seams of ``sources/``: a *dialect* turns JSON items into calls, a *decoder* turns
bytes into batches.

A dialect knows one trace format's shapes (a custom call dict, an OpenAI message, an OTel span)
and nothing of bytes or files; it is also what the in-memory helpers (``from_openai`` ...) use,
so the streamed reader and the helper always agree. A decoder frames bytes (JSON Lines, or a
JSON document through ijson at a prefix) and feeds each item to a dialect. Neither does I/O:
the drivers in ``_drive.py`` move bytes in and batches out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from ..calls import Batch, Location, ToolCall
from ..columns import Columns
from ..limits import MAX_DEPTH

__all__ = ["Decoder", "Dialect", "MessagesDialect"]


class Dialect(ABC):
    """Decodes the JSON items of one trace format into :class:`ToolCall` objects.

    Subclasses set ``name`` and implement :meth:`item`. A dialect whose results arrive after
    their call (OpenAI ``tool`` messages, Anthropic ``tool_result`` blocks, MCP responses) emits
    the call into ``out.calls`` with ``complete=False``, keeps it in ``self.pending`` by id, and
    when the result arrives fills it in, sets ``complete=True`` and appends it to ``out.done``.
    Calls that carry their own result go into both lists at once.
    """

    name: ClassVar[str]
    reads_blocks: ClassVar[bool] = False
    """True when :meth:`block` can decode whole chunks (the custom format)."""
    block_levels: int = MAX_DEPTH
    """The nesting :meth:`block` allows in the array it decodes: fewer levels than
    :data:`~toolscore.limits.MAX_DEPTH` when that array sits inside the document."""
    max_pending: ClassVar[int] = 10_000
    """Calls waiting for a result at most; past it the oldest completes without one, so a
    trace whose results never come cannot make memory grow with its length."""

    def __init__(self, source: str = "<memory>") -> None:
        self.source = source
        self.next_index = 0
        self.pending: dict[Any, ToolCall] = {}
        self.one_item_per_line = False
        """Set by the JSON Lines decoder: each item is a line of its own, so a dialect whose
        every item is a call (the custom format) reports an item that is not one as an input
        problem on its line, where an array item is skipped as Toolscore 1.10 skips it."""

    def new_call(self, call: ToolCall, out: Batch, *, complete: bool = True) -> ToolCall:
        """Number ``call``, and append it to ``out.calls`` (and ``out.done`` if complete)."""
        call.index = self.next_index
        self.next_index += 1
        call.complete = complete
        out.calls.append(call)
        if complete:
            out.done.append(call)
        elif len(self.pending) >= self.max_pending:
            oldest = next(iter(self.pending))
            self.complete(self.pending.pop(oldest), out)
        return call

    def complete(self, call: ToolCall, out: Batch) -> None:
        """Mark a pending call complete and hand it on."""
        if not call.complete:
            call.complete = True
            out.done.append(call)

    @abstractmethod
    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        """Decode one JSON item, appending what it yields to ``out``.

        Raises:
            MalformedTrace: the item is not of this format's shape (with ``location``).
        """

    def block(self, text: bytes, count: int | None, first_line: int | None) -> Columns | None:
        """Decode ``text``, a JSON array of ``count`` items (any number when None), in one go,
        numbering the calls
        from :attr:`next_index`; None when the items must be read one by one with
        :meth:`item` (the default).

        Args:
            text: the JSON array.
            count: its number of items, when known.
            first_line: the line of the first item when there is one item per line.
        """
        return None

    def block_lines(
        self, pieces: Sequence[bytes | memoryview], count: int, first_line: int
    ) -> Columns | None:
        """Like :meth:`block`, for ``count`` JSON lines given as ``pieces`` of whole lines."""
        return None

    replied = False
    """The input is a trace that made no call by its own words: a conversation whose
    assistant answered in text (or an empty array of calls), so zero calls is its content,
    not a sign of a format misread."""

    def close(self, out: Batch) -> None:
        """End of stream: calls still waiting for a result are complete without one."""
        for call in self.pending.values():
            self.complete(call, out)
        self.pending.clear()


class MessagesDialect(Dialect):
    """A dialect of chat messages (OpenAI, Anthropic): an item is a message, a list of them,
    or a container; ``{"messages": [...]}`` is unwrapped here, the rest in :meth:`_other`."""

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        """Decode a message, a list of messages, ``{"messages": [...]}`` or another container."""
        if isinstance(obj, list):
            for element in obj:
                if isinstance(element, dict):
                    self._dict(element, location, out)
        elif isinstance(obj, dict):
            self._dict(obj, location, out)

    def _dict(self, obj: dict[str, Any], location: Location | None, out: Batch) -> None:
        messages = obj.get("messages")
        if isinstance(messages, list):
            for message in messages:
                if isinstance(message, dict):
                    self._message(message, location, out)
                    self._note_reply(message)
            return
        self._other(obj, location, out)
        self._note_reply(obj)

    def _note_reply(self, message: dict[str, Any]) -> None:
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            self.replied = True

    @abstractmethod
    def _message(self, msg: dict[str, Any], location: Location | None, out: Batch) -> None:
        """Decode one message."""

    @abstractmethod
    def _other(self, obj: dict[str, Any], location: Location | None, out: Batch) -> None:
        """Decode a dict that is not a ``{"messages": [...]}`` container."""


class Decoder(Protocol):
    """Bytes in, batches out; no I/O. One per input stream.

    ``feed`` never raises for bad input: a fatal error is returned as ``Batch.error`` together
    with the calls read before it, and the caller stops feeding. A non-fatal one (a malformed
    JSON line) is a ``Batch.findings`` entry and decoding goes on.
    """

    name: str
    """``"<layout>/<dialect>"``, e.g. ``"jsonl/custom"`` or ``"json/openai"``."""

    def feed(self, chunk: bytes) -> Batch: ...

    def close(self) -> Batch:
        """End of input: flush the partial last line, finish the JSON document (a truncated one
        is ``Batch.error``), and complete every pending call."""
        ...
