"""OpenAI chat traces: ``tool_calls`` (and legacy ``function_call``) in assistant messages,
results in later ``tool`` (and legacy ``function``) messages.

Shapes: a list of messages, ``{"messages": [...]}``, a chat completion response
``{"choices": [{"message": ...}]}``, a single message, a bare ``tool_calls`` entry, and JSON
Lines with one of these per line.

* A ``tool_calls`` entry is a call when its ``type`` is ``"function"``, or when it has no
  ``type`` but has a ``function`` object (some SDKs and LangChain drop the type; Toolscore
  skips those). ``"tool_calls": null`` is no calls (Toolscore crashes on it). An entry without
  a function name is skipped with an ``input``/``bad_tool_name`` finding.
* Arguments: a JSON string is decoded (invalid JSON gives ``{"raw": s}``, as Toolscore);
  other values are kept as they are.
* Results: a ``tool`` message's ``content`` is the result of the call with its
  ``tool_call_id`` (a list of content parts becomes its text); a legacy ``function`` message
  answers the last waiting ``function_call`` of that name. A result text starting with
  ``Error`` is *not* a failure by itself; explicit markers on the result message, ``error`` and
  ``is_error``, are kept as given and read by the failure rules as any trace's are.
* A call whose result never arrives is complete (without a result) at the end of the input.
"""

from __future__ import annotations

from typing import Any

from ..calls import Batch, Location, ToolCall
from ..failed import keep_failure_fields
from ._base import MessagesDialect
from ._util import content_text, located_finding, parse_arguments
from .detect import Shape, line_messages

__all__ = ["DIALECT", "OpenAIDialect", "sniff"]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _arguments(raw: Any) -> Any:
    return parse_arguments(raw) if isinstance(raw, str) else raw


def _usable_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool) and value != ""


class OpenAIDialect(MessagesDialect):
    """Reads OpenAI chat messages; pairs ``tool`` messages with their calls by id."""

    name = "openai"

    def _other(self, obj: dict[str, Any], location: Location | None, out: Batch) -> None:
        choices = obj.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict):
                    message = choice.get("message")
                    self._message(message if isinstance(message, dict) else choice, location, out)
            return
        if "role" not in obj and isinstance(obj.get("function"), dict):
            self._tool_call(obj, obj["function"], location, out)
            return
        self._message(obj, location, out)

    def _message(self, msg: dict[str, Any], location: Location | None, out: Batch) -> None:
        role = msg.get("role")
        if role == "tool":
            self._result(msg.get("tool_call_id"), msg, out)
            return
        if role == "function":
            self._result(("function_call", msg.get("name")), msg, out)
            return
        legacy = msg.get("function_call")
        if isinstance(legacy, dict):
            self._legacy(legacy, location, out)
        tool_calls = msg.get("tool_calls")
        if isinstance(tool_calls, list):
            for entry in tool_calls:
                if not isinstance(entry, dict):
                    continue
                function = entry.get("function")
                kind = entry.get("type")
                if isinstance(function, dict) and (kind == "function" or kind is None):
                    self._tool_call(entry, function, location, out)

    def _named(self, function: dict[str, Any], location: Location | None, out: Batch) -> str | None:
        name = function.get("name")
        if name and isinstance(name, str):
            return name
        problem = "has no name" if not name else f"is named by a JSON {type(name).__name__}"
        out.findings.append(
            located_finding("bad_tool_name", f"tool call skipped: its function {problem}", location)
        )
        return None

    def _tool_call(
        self,
        entry: dict[str, Any],
        function: dict[str, Any],
        location: Location | None,
        out: Batch,
    ) -> None:
        name = self._named(function, location, out)
        if name is None:
            return
        call_id = entry.get("id")
        call = ToolCall(
            tool=name,
            args=_arguments(function.get("arguments")),
            metadata={"format": "tool_calls", "id": call_id},
            location=location,
        )
        self._emit(call_id if _usable_id(call_id) else None, call, out)

    def _legacy(self, function: dict[str, Any], location: Location | None, out: Batch) -> None:
        name = self._named(function, location, out)
        if name is None:
            return
        call = ToolCall(
            tool=name,
            args=_arguments(function.get("arguments")),
            metadata={"format": "function_call"},
            location=location,
        )
        self._emit(("function_call", name), call, out)

    def _emit(self, key: Any, call: ToolCall, out: Batch) -> None:
        if key is None:
            self.new_call(call, out)
            return
        earlier = self.pending.pop(key, None)
        if earlier is not None:  # the same id again: the first one gets no result
            self.complete(earlier, out)
        self.pending[key] = call
        self.new_call(call, out, complete=False)

    def _result(self, key: Any, msg: dict[str, Any], out: Batch) -> None:
        if isinstance(key, (dict, list)):
            return
        call = self.pending.pop(key, None)
        if call is None:
            return
        call.result = content_text(msg.get("content"))
        keep_failure_fields(msg, call.metadata)
        self.complete(call, out)


DIALECT = OpenAIDialect


def _is_message(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if "tool_calls" in value or "function_call" in value:
        return True
    role = value.get("role")
    return isinstance(role, str) and role in ROLES


def _is_decisive(value: Any) -> bool:
    """A message only OpenAI writes: tool calls, a tool/function result, a system prompt."""
    if not isinstance(value, dict):
        return False
    if "tool_calls" in value or "function_call" in value:
        return True
    role = value.get("role")
    return isinstance(role, str) and role in ("tool", "function", "system", "developer")


def is_openai_messages(messages: list[Any]) -> bool:
    """Sampled messages that read as OpenAI chat: a ``tool_calls``/``function_call`` key, or
    a chat role (Anthropic message lists are claimed earlier, by their content blocks)."""
    return any(_is_message(m) for m in messages)


def _is_entry(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("function"), dict)


def sniff(shape: Shape) -> str | None:
    """OpenAI chat: chat completions, message lists (also ones that start with ``system``),
    a single message, and bare ``tool_calls`` entries."""
    if shape.layout == "jsonl":
        if any(isinstance(line, dict) and "choices" in line for line in shape.lines):
            return ""
        messages = line_messages(shape.lines)
        if any(_is_decisive(m) for m in messages):
            return ""
        # A user or assistant line alone may still turn out to be Anthropic: wait for more
        # lines, unless this is the whole input.
        return "" if shape.complete and is_openai_messages(messages) else None
    if shape.top == "array":
        return "item" if is_openai_messages(shape.items("item")) else None
    if shape.top != "object":
        return None
    sample = shape.sample
    if isinstance(sample.get("choices"), list):
        first = shape.first("choices.item")
        if isinstance(first, dict) and "message" in first:
            return "choices.item.message"
        return "choices.item"
    if isinstance(sample.get("messages"), list):
        return "messages.item" if is_openai_messages(shape.items("messages.item")) else None
    tool_calls = shape.items("tool_calls.item")
    if "role" not in sample and tool_calls and _is_entry(tool_calls[0]):
        return "tool_calls.item"
    return "" if _is_message(sample) else None
