"""Durations and costs added a batch at a time: the same Stats as each batch's merged in."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore import _exact
from toolscore.checks.expected.state import Stats, StatsAdder

_NUMBER = st.one_of(
    st.floats(allow_nan=False, allow_infinity=True, width=64),
    st.floats(0, 10, allow_nan=False).map(lambda v: round(v, 3)),
    st.integers(-(10**20), 10**20),
)


@pytest.mark.parametrize("chunk", [1, 3, 8192])
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_NUMBER, min_size=1, max_size=12), max_size=12))
def test_adder_equals_the_merged_stats_of_each_batch(
    chunk: int, batches: list[list[float]]
) -> None:
    expected = Stats()
    for values in batches:
        expected = expected.merge(Stats.of(values))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_exact, "SUM_CHUNK", chunk)  # sums taken a few values at a time too
        adder = StatsAdder()
        for values in batches:
            adder.add(values)
        got = adder.stats()
    assert repr(got) == repr(expected)  # field by field, a NaN sum (inf + -inf) included
