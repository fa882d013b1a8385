"""MCP traces: JSON-RPC 2.0 messages, ``tools/call`` requests paired with their responses.

Input is a list of messages, the ``toolscore mcp record`` file ``{"messages": [...]}``, or JSON
Lines with one message (or one JSON-RPC batch array) per line. Only ``tools/call`` requests are
calls: unlike Toolscore 1.10, ``initialize``, notifications and the other protocol messages are
not, and a response that answers no pending ``tools/call`` (``tools/list``, ``initialize``) is
dropped instead of becoming a call named ``unknown``.

A request with a usable id (a string or a number; ``1`` and ``"1"`` are different ids) waits for
its response; a request without one is a call without a result. From the response:

* ``result``: ``structuredContent`` when set, else the ``content`` items as text, else the raw
  ``result`` object; ``None`` on a failure (the text is then the ``error``);
* failure: ``result.isError``, or a JSON-RPC ``error`` (an object, or a non-empty string taken
  as its message); ``error`` is the RPC message or the content text of an ``isError`` result,
  ``error_code`` the RPC code;
* ``duration``: a numeric ``duration`` field on the response, else the difference of the two
  messages' ``timestamp`` fields (epoch seconds or ISO 8601), when both are there.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..calls import Batch, Location, ToolCall
from ._base import Dialect
from ._util import loads_lenient
from .detect import Shape

__all__ = ["DIALECT", "MCPDialect", "content_to_text", "sniff"]


def content_to_text(content: list[Any]) -> str:
    """Render MCP content items as text, one item per line; unknown item types are skipped."""
    lines: list[str] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            if isinstance(text, str):
                lines.append(text)
        elif kind == "resource":
            res = item.get("resource")
            if not isinstance(res, dict):
                continue
            uri = res.get("uri", "")
            if isinstance(res.get("text"), str):
                lines.append(f"[resource {uri}]\n{res['text']}")
            else:
                lines.append(f"[binary resource {uri} ({res.get('mimeType', '')})]")
        elif kind == "resource_link":
            lines.append(f"[resource link {item.get('uri', '')} {item.get('name', '')}]")
        elif kind in ("image", "audio"):
            lines.append(f"[{kind} ({item.get('mimeType', '')})]")
    return "\n".join(lines)


def _id_key(value: Any) -> tuple[str, Any] | None:
    """A type-aware key for a JSON-RPC id; ``None`` for an unusable one (bool, null, object)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return (type(value).__name__, value)


def _seconds(value: Any) -> float | None:
    """A timestamp as epoch seconds: a number as is, an ISO 8601 string parsed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            return None
    return None


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return loads_lenient(value)
        except ValueError:
            return {}
    return {} if value is None else value


class MCPDialect(Dialect):
    """Reads JSON-RPC messages; each ``tools/call`` request is a call, its response the result."""

    name = "mcp"

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        """Decode one JSON-RPC message, a batch array of them, or a recorded trace dict."""
        if isinstance(obj, list):
            for element in obj:
                self.item(element, location, out)
            return
        if not isinstance(obj, dict):
            return
        method = obj.get("method")
        if method is None:
            if "result" in obj or "error" in obj:
                self._response(obj, out)
            elif "jsonrpc" not in obj and isinstance(obj.get("messages"), list):
                self.item(obj["messages"], location, out)
            return
        if method != "tools/call":
            return
        params = obj.get("params")
        if not isinstance(params, dict):
            return
        name = params.get("name")
        if not name or not isinstance(name, str):
            return
        msg_id = obj.get("id")
        metadata: dict[str, Any] = {"format": "mcp", "method": method}
        if msg_id is not None:
            metadata["jsonrpc_id"] = msg_id
        call = ToolCall(
            tool=name,
            args=_arguments(params.get("arguments")),
            timestamp=_seconds(obj.get("timestamp")),
            metadata=metadata,
            location=location,
        )
        key = _id_key(msg_id)
        if key is None:
            self.new_call(call, out)
            return
        self.new_call(call, out, complete=False)
        previous = self.pending.pop(key, None)
        if previous is not None:
            self.complete(previous, out)
        self.pending[key] = call

    def _response(self, obj: dict[str, Any], out: Batch) -> None:
        key = _id_key(obj.get("id"))
        call = None if key is None else self.pending.pop(key, None)
        if call is None:
            return
        md = call.metadata
        error = obj.get("error")
        if isinstance(error, str) and error:
            error = {"message": error}
        if isinstance(error, dict):
            md["is_error"] = True
            message = error.get("message")
            if isinstance(message, str) and message:
                md["error"] = message
            if "code" in error:
                md["error_code"] = error["code"]
        else:
            result = obj.get("result")
            failed = isinstance(result, dict) and bool(result.get("isError"))
            value: Any = result
            text: str | None = None
            if isinstance(result, dict):
                content = result.get("content")
                if isinstance(content, list):
                    text = content_to_text(content)
                if result.get("structuredContent"):
                    value = result["structuredContent"]
                elif text is not None:
                    value = text
            md["is_error"] = failed
            if failed:
                if text:
                    md["error"] = text
            else:
                call.result = value
        duration = obj.get("duration")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            call.duration = float(duration)
        elif call.timestamp is not None:
            end = _seconds(obj.get("timestamp"))
            if end is not None:
                call.duration = end - call.timestamp
        self.complete(call, out)


DIALECT = MCPDialect


def _is_message(value: Any) -> bool:
    if isinstance(value, list) and value:
        value = value[0]  # a JSON-RPC batch
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0"


def sniff(shape: Shape) -> str | None:
    """The prefix of the JSON-RPC messages: the record file's ``messages.item``, an array's
    ``item``, or ``""`` for one message (or one message per line)."""
    if shape.layout == "jsonl":
        return "" if any(_is_message(v) for v in shape.lines[:50]) else None
    sample = shape.sample
    if isinstance(sample, dict):
        if "jsonrpc" in sample:
            return ""
        messages = sample.get("messages")
        if sample.get("format") == "mcp" or (
            isinstance(messages, list) and messages and _is_message(messages[0])
        ):
            return "messages.item"
        return None
    if isinstance(sample, list) and sample and _is_message(sample[0]):
        return "item"
    return None
