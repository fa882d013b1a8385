"""Runs (the count rules' heads and their lines, kept as runs of consecutive values) behave
as the list of their values, whichever way they were built, and have one form."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from toolscore.hardrules.runs import Runs

# mostly consecutive stretches, sometimes a jump, a repeat or a marker (-1, -2)
steps = st.lists(
    st.one_of(
        st.just(1),
        st.just(1),
        st.just(1),
        st.just(0),
        st.integers(-3, 40),
        st.sampled_from(["m1", "m2"]),
    ),
    max_size=40,
)


def _values(start: int, moves: list[int | str]) -> list[int]:
    out: list[int] = []
    x = start
    for move in moves:
        if move == "m1":
            out.append(-1)
        elif move == "m2":
            out.append(-2)
        else:
            assert isinstance(move, int)
            x = max(0, x + move)
            out.append(x)
    return out


@given(st.integers(0, 5), steps, st.data())
def test_runs_are_the_list_of_their_values(
    start: int, moves: list[int | str], data: st.DataObject
) -> None:
    values = _values(start, moves)
    built = Runs.of(values)
    one_by_one = Runs()
    for v in values:
        one_by_one.append(v)
    cut = data.draw(st.integers(0, len(values)))
    in_two = Runs(values[:cut])
    in_two.extend(Runs.of(values[cut:]))
    for runs in (built, one_by_one, in_two, pickle.loads(pickle.dumps(built)), built.copy()):
        assert list(runs) == values
        assert len(runs) == len(values)
        assert runs == built
        assert (runs.starts, runs.ends) == (built.starts, built.ends)  # one form
    assert [built[k] for k in range(len(values))] == values
    assert [built[-k] for k in range(1, len(values) + 1)] == [
        values[-k] for k in range(1, len(values) + 1)
    ]
    n = data.draw(st.integers(-1, len(values) + 1))
    assert list(built.head(n)) == values[: max(n, 0)]
    assert built.head(n) == Runs.of(values[: max(n, 0)])
    by = data.draw(st.integers(0, 50))
    moved = [v + by if v >= 0 else v for v in values]
    assert list(built.shifted(by, markers=False)) == moved
    assert built.shifted(by, markers=False) == Runs.of(moved)
    if all(v >= 0 for v in values):
        assert list(built.shifted(by)) == [v + by for v in values]
    for probe in (-2, -1, 0, start, start + 3, 41):
        assert (probe in built) == (probe in values)
    assert Runs.of(range(start, start + len(values))) == Runs.of(
        list(range(start, start + len(values)))
    )
