"""What every ``from_*`` helper shares: SDK objects as plain JSON-like values, a dialect run
over in-memory items (the twin of a streamed read), and a call as the dict ``evaluate()``
reads."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from typing import Any

from ..calls import Batch, Location, ToolCall
from ..failed import keep_failure_fields
from ..sources._base import Dialect

__all__ = ["call_to_dict", "run_dialect"]

_MAX_DEPTH = 64
_SCALARS = (str, int, float, bool, type(None))


def _plain(obj: Any, depth: int = 0, *, tag: bool = False) -> Any:
    """``obj`` as dicts, lists and scalars: ``model_dump()`` for pydantic models, fields for
    dataclasses, public attributes for other objects. ``tag`` adds ``"__class__"`` to converted
    objects (for SDKs whose blocks carry their kind only in the class name)."""
    if isinstance(obj, _SCALARS) or depth > _MAX_DEPTH:
        return obj
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {str(k): _plain(v, depth + 1, tag=tag) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, depth + 1, tag=tag) for v in obj]
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        try:
            dumped = dump()
        except TypeError:
            dumped = None
        if isinstance(dumped, Mapping):
            out = _plain(dumped, depth + 1, tag=tag)
            if tag:
                out.setdefault("__class__", type(obj).__name__)
            return out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {
            f.name: _plain(getattr(obj, f.name, None), depth + 1, tag=tag)
            for f in dataclasses.fields(obj)
        }
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and not callable(obj):
        out = {
            k: _plain(v, depth + 1, tag=tag) for k, v in vars(obj).items() if not k.startswith("_")
        }
    else:
        return obj
    if tag:
        out.setdefault("__class__", type(obj).__name__)
    return out


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` otherwise (``None`` when absent)."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def call_to_dict(call: ToolCall) -> dict[str, Any]:
    """The call as the dict ``evaluate()`` reads (Toolscore's in-memory call form)."""
    out: dict[str, Any] = {"tool": call.tool, "args": call.args}
    md = call.metadata
    if call.result is not None:
        out["result"] = call.result
    keep_failure_fields(md, out)
    if call.duration is not None:
        out["duration"] = call.duration
    if md.get("id") is not None:
        out["id"] = md["id"]
    elif md.get("jsonrpc_id") is not None:
        out["id"] = md["jsonrpc_id"]
    if call.timestamp is not None:
        out["timestamp"] = call.timestamp
    return out


def run_dialect(dialect: Dialect, items: Iterable[Any]) -> list[ToolCall]:
    """Feed in-memory items through ``dialect`` and return every call, results filled in.

    This is the in-memory twin of a streamed read: the same ``item()``/``close()`` sequence.
    """
    out = Batch()
    location: Location | None = None
    for item in items:
        dialect.item(item, location, out)
    dialect.close(out)
    return out.calls


def _run(dialect: Dialect, items: Iterable[Any]) -> list[dict[str, Any]]:
    return [call_to_dict(call) for call in run_dialect(dialect, items)]
