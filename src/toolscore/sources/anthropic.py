"""Anthropic Messages traces: ``tool_use`` content blocks, results in ``tool_result`` blocks.

Shapes: a list of messages (whatever role comes first), ``{"messages": [...]}``, a single
``Message`` object (``{"role": "assistant", "content": [...]}`` or ``"type": "message"``),
bare content blocks, and JSON Lines with one of these per line. Toolscore 1.10 reads the last
two as zero calls; here they work.

* A ``tool_use`` block is a call: ``args`` is its ``input`` when that is an object, else
  ``{}``; metadata ``format: "anthropic"``, ``id`` and the message's ``stop_reason``. A block
  without a string name is skipped with an ``input``/``bad_tool_name`` finding.
* A ``tool_result`` block (in a later user message) completes the call with its
  ``tool_use_id``: the result is its ``content`` (a string, or the text of its ``text``
  blocks joined with newlines). ``is_error: true`` marks the call failed, with that text as
  its ``error`` (Toolscore ignores ``is_error``).
* Blocks are read in every message, whatever its role.
* A call whose result never arrives is complete (without a result) at the end of the input.
"""

from __future__ import annotations

from typing import Any

from ..calls import Batch, Location, ToolCall
from ._base import MessagesDialect
from ._util import content_text, located_finding
from .detect import Shape, line_messages

__all__ = ["DIALECT", "AnthropicDialect", "is_anthropic_messages", "sniff"]

_TOOL_BLOCKS = frozenset({"tool_use", "tool_result"})


class AnthropicDialect(MessagesDialect):
    """Reads Anthropic messages; pairs ``tool_result`` blocks with their ``tool_use`` by id."""

    name = "anthropic"

    def _other(self, obj: dict[str, Any], location: Location | None, out: Batch) -> None:
        if obj.get("type") in _TOOL_BLOCKS:
            self._block(obj, None, location, out)
            return
        self._message(obj, location, out)

    def _message(self, msg: dict[str, Any], location: Location | None, out: Batch) -> None:
        content = msg.get("content")
        if not isinstance(content, list):
            return
        stop_reason = msg.get("stop_reason")
        for block in content:
            if isinstance(block, dict):
                self._block(block, stop_reason, location, out)

    def _block(
        self, block: dict[str, Any], stop_reason: Any, location: Location | None, out: Batch
    ) -> None:
        kind = block.get("type")
        if kind == "tool_use":
            self._use(block, stop_reason, location, out)
        elif kind == "tool_result":
            self._result(block, out)

    def _use(
        self, block: dict[str, Any], stop_reason: Any, location: Location | None, out: Batch
    ) -> None:
        name = block.get("name")
        if not name or not isinstance(name, str):
            problem = "has no name" if not name else f"is named by a JSON {type(name).__name__}"
            out.findings.append(
                located_finding("bad_tool_name", f"tool_use block skipped: it {problem}", location)
            )
            return
        args = block.get("input")
        call_id = block.get("id")
        call = ToolCall(
            tool=name,
            args=args if isinstance(args, dict) else {},
            metadata={"format": "anthropic", "id": call_id, "stop_reason": stop_reason},
            location=location,
        )
        if not isinstance(call_id, str) or not call_id:
            self.new_call(call, out)
            return
        earlier = self.pending.pop(call_id, None)
        if earlier is not None:  # the same id again: the first one gets no result
            self.complete(earlier, out)
        self.pending[call_id] = call
        self.new_call(call, out, complete=False)

    def _result(self, block: dict[str, Any], out: Batch) -> None:
        key = block.get("tool_use_id")
        if not isinstance(key, str):
            return
        call = self.pending.pop(key, None)
        if call is None:
            return
        text = content_text(block.get("content"))
        call.result = text
        if block.get("is_error") is True:
            call.metadata["is_error"] = True
            if text:
                call.metadata["error"] = text if isinstance(text, str) else str(text)
        self.complete(call, out)


DIALECT = AnthropicDialect


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def is_anthropic_messages(messages: list[Any]) -> bool:
    """Sampled messages that read as Anthropic: a ``tool_use``/``tool_result`` block, or an
    assistant message whose content is a list of typed blocks while no message has OpenAI's
    ``tool_calls``/``function_call`` or the ``tool`` role."""
    dicts = [m for m in messages if isinstance(m, dict)]
    if any(
        isinstance(b, dict) and b.get("type") in _TOOL_BLOCKS for m in dicts for b in _blocks(m)
    ):
        return True
    if any("tool_calls" in m or "function_call" in m or m.get("role") == "tool" for m in dicts):
        return False
    return any(
        m.get("role") == "assistant"
        and _blocks(m)
        and all(isinstance(b, dict) and "type" in b for b in _blocks(m))
        for m in dicts
    )


def _is_message(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if value.get("type") in _TOOL_BLOCKS:
        return True
    return value.get("type") == "message" and isinstance(value.get("content"), list)


def sniff(shape: Shape) -> str | None:
    """Anthropic messages: lists (whatever the first role), ``{"messages": [...]}``, a single
    ``Message``, content blocks, one per line in JSON Lines."""
    if shape.layout == "jsonl":
        messages = line_messages(shape.lines)
        if any(_is_message(m) for m in messages) or is_anthropic_messages(messages):
            return ""
        return None
    if shape.top == "array":
        return "item" if is_anthropic_messages(shape.items("item")) else None
    if shape.top != "object":
        return None
    if isinstance(shape.sample.get("messages"), list):
        return "messages.item" if is_anthropic_messages(shape.items("messages.item")) else None
    sample = shape.sample
    return "" if _is_message(sample) or is_anthropic_messages([sample]) else None
