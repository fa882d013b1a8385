"""The JSON record of a call: its one home.

``to_dict()["calls"]["actual"]`` and the JSON report list each call as the record
:data:`CALL_RECORD_FIELDS` lays out (Toolscore's ``schema_version`` 2). It is written three
ways, all here and held equal by the tests: :func:`call_record` (a dict, JSON-safe),
:func:`call_json` (the same as JSON bytes on one line, without walking arguments decoded from
JSON) and :class:`CallRecord` (a msgspec struct, for a decoded block's calls encoded in C).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

if TYPE_CHECKING:
    from .calls import ToolCall

__all__ = [
    "CALL_RECORD_FIELDS",
    "CallRecord",
    "call_json",
    "call_record",
    "expected_record",
    "json_safe",
    "record_bytes",
    "write_joined",
]

CALL_RECORD_FIELDS = ("tool", "args", "result", "is_error", "error", "duration", "cost")
"""The keys of a call's record, in order."""


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON data: non-JSON leaves become their ``repr``.

    Tuples become lists and dict keys are ``str()``'d, as in Toolscore's ``to_dict``; NaN and
    infinities become ``"nan"``/``"inf"``/``"-inf"`` so the output is strict JSON.
    """
    if value is None or value is True or value is False or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return repr(value)


def expected_record(call: ToolCall) -> dict[str, Any]:
    """A gold call as ``to_dict()["calls"]["expected"]`` lists it (JSON-safe)."""
    return {"tool": call.tool, "args": json_safe(call.args)}


def call_record(call: ToolCall, is_error: bool | None = None) -> dict[str, Any]:
    """A trace call as ``to_dict()["calls"]["actual"]`` lists it (JSON-safe).

    ``is_error``: whether the run's failure rules failed it (None: the default rules,
    ``call.is_error``). ``error`` is the recorded ``metadata["error"]``, or None when it is
    missing or a bool.
    """
    err = call.metadata.get("error") if call.metadata else None
    if isinstance(err, bool):
        err = None
    return {
        "tool": call.tool,
        "args": json_safe(call.args),
        "result": json_safe(call.result),
        "is_error": call.is_error if is_error is None else is_error,
        "error": json_safe(err),
        "duration": json_safe(call.duration),
        "cost": json_safe(call.cost),
    }


class CallRecord(msgspec.Struct, gc=False):
    """A call's record as a msgspec struct, for blocks of decoded calls encoded in C (field
    order is the JSON order: :data:`CALL_RECORD_FIELDS`)."""

    tool: str
    args: Any
    result: Any
    is_error: bool
    error: Any
    duration: Any
    cost: Any


def write_joined(
    write: Callable[[bytes | memoryview], object], records: list[bytes], separator: bytes
) -> int:
    """Write ``records`` (JSON texts on one line each), each followed by ``separator``, in
    two writes; returns how many."""
    if records:
        write(separator.join(records))
        write(separator)
    return len(records)


def record_bytes(value: Any) -> bytes:
    """``value`` (JSON-safe data) as compact JSON; integers beyond 64 bits go through
    :mod:`json`."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )


def _nonfinite(value: Any) -> bool:
    """True when ``value`` holds a NaN or an infinity (which orjson would write as null)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_nonfinite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_nonfinite(v) for v in value)
    return False


def call_json(call: ToolCall, is_error: bool | None = None) -> bytes:
    """``call_record(call, is_error)`` as JSON on one line, without walking arguments decoded
    from JSON.

    Arguments and results read from a trace are plain JSON data, so orjson writes them as
    they are; anything it refuses (a non-str key, a set, a huge int) or a NaN (which it would
    write as null) takes the ``call_record`` path.
    """
    try:
        args = orjson.dumps(call.args)
        result = orjson.dumps(call.result)
    except TypeError:
        return record_bytes(call_record(call, is_error))
    if (b"null" in args and _nonfinite(call.args)) or (
        b"null" in result and _nonfinite(call.result)
    ):
        return record_bytes(call_record(call, is_error))
    err = call.metadata.get("error") if call.metadata else None
    tail = record_bytes(
        {
            "is_error": call.is_error if is_error is None else is_error,
            "error": None if isinstance(err, bool) else json_safe(err),
            "duration": json_safe(call.duration),
            "cost": json_safe(call.cost),
        }
    )
    return b"".join(
        (b'{"tool":', orjson.dumps(call.tool), b',"args":', args, b',"result":', result, b",",
         tail[1:])
    )  # fmt: skip
