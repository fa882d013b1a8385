"""Test helpers for checks: the conformance of a check to the state protocol.

:func:`check_conformance` holds any check, built-in or your own, to the laws of
:mod:`toolscore.checks._base`: a trace fed whole, and the same trace cut into consecutive
parts, each fed to a fresh check of its own (numbered from 0, told ``begin_part()``), give

- the same state, once the parts' states are merged in order (each later part's state sent
  through :mod:`pickle` first, as another process would send it), and
- the same findings, once each part's findings (and the findings only a merge shows) are
  moved into place.

It draws the cuts and the batch sizes with hypothesis (the ``test`` extra), so call it from a
test::

    from toolscore.testing import check_conformance

    def test_my_check_conforms() -> None:
        check_conformance(MyCheck, my_trace_calls)

:func:`assert_parts_merge` is the same check for one given cut.
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle
from collections.abc import Callable, Sequence
from typing import Any

from .calls import Batch, Finding, ToolCall

__all__ = ["assert_parts_merge", "check_conformance"]


def _feed(check: Any, calls: Sequence[ToolCall], batch: int, finish: bool = True) -> list[Finding]:
    found: list[Finding] = []
    for start in range(0, len(calls), batch):
        chunk = list(calls[start : start + batch])
        found.extend(check.feed(Batch(calls=chunk, done=list(chunk))))
    if finish:
        found.extend(check.finish())
    return found


def _renumbered(calls: Sequence[ToolCall], start: int) -> list[ToolCall]:
    return [dataclasses.replace(c, index=i) for i, c in enumerate(calls[start:], 0)]


def assert_parts_merge(
    make_check: Callable[[], Any],
    trace: Sequence[ToolCall],
    cuts: Sequence[int],
    *,
    batch: int = 3,
) -> None:
    """Feed ``trace`` whole, and cut at ``cuts`` (positions, in order), in batches of
    ``batch`` calls; assert the merged state and the moved findings are the whole's.

    A check with a ``resume(state)`` method is finished as the pipeline finishes it after
    reading parts: the first part's check takes the merged state back and only it runs
    :meth:`finish` (what only the whole trace shows: a count below its minimum, a match
    verdict); other checks finish each part.

    Raises:
        AssertionError: what differs.
    """
    calls = [dataclasses.replace(c, index=i) for i, c in enumerate(trace)]
    whole = make_check()
    whole_found = _feed(whole, calls, batch)
    bounds = [0, *sorted(cuts), len(calls)]
    merged: Any = None
    kept: list[Any] = []  # the parts' states live on (their files) until the comparison
    parts_found: list[Finding] = []
    main: Any = None
    resumes = hasattr(whole, "resume")
    for k, (start, end) in enumerate(itertools.pairwise(bounds)):
        check = make_check()
        if k:
            begin = getattr(check, "begin_part", None)
            if begin is not None:
                begin()
        else:
            main = check
        part = _renumbered(calls[:end], start)
        found = [f.moved(start, 0) for f in _feed(check, part, batch, finish=not resumes)]
        get_state = getattr(check, "state", None)
        state = get_state() if get_state is not None else None
        if state is not None:
            kept.append(state)
            if merged is None:
                merged = state
            else:
                sent = pickle.loads(pickle.dumps(state))
                parts_found.extend(merged.findings_between(sent))
                merged = merged.merge(sent)
        parts_found.extend(found)
    if resumes:
        if merged is not None:
            main.resume(merged)
        parts_found.extend(main.finish())
        merged = main.state()
    get_whole = getattr(whole, "state", None)
    whole_state = get_whole() if get_whole is not None else None
    assert merged == whole_state, f"merged state {merged!r} != whole {whole_state!r} at {cuts}"
    if whole_state is not None:
        assert merged.metrics() == whole_state.metrics(), f"metrics differ at cuts {cuts}"
    assert parts_found == whole_found, (
        f"findings differ at cuts {list(cuts)}:\n"
        f"  parts: {[f.message for f in parts_found]}\n"
        f"  whole: {[f.message for f in whole_found]}"
    )


def check_conformance(
    make_check: Callable[[], Any],
    trace: Sequence[ToolCall],
    *,
    max_parts: int = 5,
    max_examples: int = 40,
) -> None:
    """:func:`assert_parts_merge` over cuts and batch sizes drawn by hypothesis (at most
    ``max_parts`` parts, ``max_examples`` draws, shrunk to the simplest failing cut).

    Args:
        make_check: builds a fresh check (the same configuration each time).
        trace: the calls (their ``index`` is set from their position).
    """
    # optional dependency: hypothesis, for property tests only
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        cuts=st.lists(st.integers(0, len(trace)), max_size=max_parts - 1),
        batch=st.integers(1, 8),
    )
    def conforms(cuts: list[int], batch: int) -> None:
        assert_parts_merge(make_check, trace, sorted(cuts), batch=batch)

    conforms()
