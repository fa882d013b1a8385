"""A call's JSON record has one home (toolscore.records): its three writers agree."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from toolscore.calls import ToolCall
from toolscore.records import CALL_RECORD_FIELDS, CallRecord, call_json, call_record

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    tool=st.text(min_size=1),
    args=values,
    result=values,
    error=st.one_of(st.none(), st.booleans(), st.text()),
    duration=st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
)
def test_the_record_writers_agree(
    tool: str, args: Any, result: Any, error: Any, duration: float | None
) -> None:
    call = ToolCall(tool, args, result, duration=duration, metadata={"error": error})
    record = call_record(call)
    assert tuple(record) == CALL_RECORD_FIELDS
    assert json.loads(call_json(call)) == json.loads(json.dumps(record))


def test_the_struct_has_the_record_fields_in_order() -> None:
    assert tuple(f for f in CallRecord.__struct_fields__) == CALL_RECORD_FIELDS
    call = ToolCall("t", {"a": 1}, "ok", duration=0.5, cost=0.1, metadata={"error": "x"})
    struct = CallRecord(*call_record(call).values())
    assert msgspec.json.decode(msgspec.json.encode(struct)) == call_record(call)
