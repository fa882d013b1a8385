"""A hard-rules state sent to another process comes back the same (its many violations and
places go as columns)."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from toolscore.calls import Location
from toolscore.hardrules.runs import Runs
from toolscore.hardrules.state import FlowState, SeqState, Violation

location = st.none() | st.builds(
    Location,
    st.sampled_from(["a.jsonl", "b.jsonl"]),
    st.none() | st.integers(1, 10**6),
    st.none() | st.integers(0, 10**9),
)
violation = st.builds(
    Violation,
    st.sampled_from(["data_flow", "allow", "schema:search"]),
    st.sampled_from(["data_flow", "tool_not_allowed", "schema_violation"]),
    st.integers(0, 10**6),
    st.sampled_from(["http_post", "curl", "search"]),
    st.sampled_from(["sends data out", "is not an allowed tool"]),
    st.none() | st.just("filters[0]"),
    st.none() | st.tuples(st.integers(0, 99), st.just("read_file"), st.just("(key)")),
    location,
)
# mostly located (the columns' case); sometimes one without a location (sent as it is)
located = st.lists(violation.filter(lambda v: v.where is not None), max_size=150)
places = st.lists(st.tuples(st.integers(0, 10**6), location), max_size=150)


def _same(a: tuple[Violation, ...], b: tuple[Violation, ...]) -> None:
    assert a == b
    assert [v.where for v in a] == [v.where for v in b]  # not compared by ==


@given(
    violations=located | st.lists(violation, max_size=100), where=places, lines=st.integers(0, 9)
)
def test_a_flow_state_pickles_to_itself(
    violations: list[Violation], where: list[tuple[int, Location | None]], lines: int
) -> None:
    state = FlowState(False, 10**6, (None,), (((3, "http_post"),),), tuple(violations),
                      tuple(where), 2, lines)  # fmt: skip
    back = pickle.loads(pickle.dumps(state, pickle.HIGHEST_PROTOCOL))
    assert back == state
    _same(back.violations, state.violations)
    assert back.places == state.places
    assert back.moved_lines == lines
    assert isinstance(back.violations, tuple) and isinstance(back.places, tuple)


@given(violations=located, where=places)
def test_a_seq_state_pickles_to_itself(
    violations: list[Violation], where: list[tuple[int, Location | None]]
) -> None:
    heads, lines = (Runs([1, 2, 3]),), (Runs([2, 3, 4]),)
    state = SeqState(False, 10**6, (4,), heads, (True,), (None,), tuple(violations), None,
                     tuple(where), 0, lines, "a.jsonl")  # fmt: skip
    back = pickle.loads(pickle.dumps(state, pickle.HIGHEST_PROTOCOL))
    assert back == state
    _same(back.violations, state.violations)
    assert back.places == state.places
    assert back.head_lines == state.head_lines and back.source == "a.jsonl"


def test_many_violations_take_less_room_as_columns() -> None:
    where = Location("a.jsonl", 1)
    violations = tuple(
        Violation("data_flow", "data_flow", i, "http_post", "sends data out", None,
                  (0, "read_file", "(key)"), Location("a.jsonl", i + 1))
        for i in range(1000)
    )  # fmt: skip
    state = FlowState(False, 1000, (None,), ((),), violations, ((0, where),))
    plain = pickle.dumps(state.__dict__, pickle.HIGHEST_PROTOCOL)
    assert len(pickle.dumps(state, pickle.HIGHEST_PROTOCOL)) < len(plain) / 2
