"""Gold that says what is acceptable: the ``$`` operators (toolscore.operators), optional
arguments and keys, alternative calls, and free tools; one matcher whichever way written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import toolscore
from toolscore import (
    ANY,
    AllOf,
    Approx,
    AtLeast,
    AtMost,
    Contains,
    IsType,
    Loose,
    OneOf,
    OptionalArg,
    Search,
)
from toolscore.dataset.gold import GoldLookup, build_gold
from toolscore.errors import GoldFileError, RuleFileError, UsageError
from toolscore.gold import gold_choices, gold_from_dicts, load_gold
from toolscore.hardrules.spec import load_rules
from toolscore.matchers import compare_values
from toolscore.operators import OperatorError, from_json


def _f1(gold: Any, args: Any) -> float:
    gold = [g if isinstance(g, dict) else {"tool": g.tool, "args": g.args} for g in gold]
    result = toolscore.evaluate(gold, [{"tool": "t", "args": args}])
    return float(result.metrics["argument_metrics"]["f1"])


@pytest.mark.parametrize(
    ("spec", "python", "yes", "no"),
    [
        ({"$one_of": ["celsius", "C"]}, OneOf("celsius", "C"), "C", "F"),
        ({"$any_of": [1, {"$gte": 10}]}, OneOf(1, AtLeast(10)), 12, 5),
        ({"$regex": "rm -rf"}, Search("rm -rf"), "sudo rm -rf /", "ls"),
        ({"$contains": "NYC"}, Contains("NYC"), "to NYC now", "to BOS"),
        ({"$gte": 3}, AtLeast(3), 3, 2.5),
        ({"$lte": 3}, AtMost(3), -1, 4),
        ({"$gte": 1, "$lte": 5}, AllOf(AtLeast(1), AtMost(5)), 5, 6),
        ({"$approx": {"value": 20, "abs": 0.5}}, Approx(20, abs=0.5), 20.4, 21),
        ({"$approx": 0.3}, Approx(0.3), 0.1 + 0.2, 0.31),
        ({"$type": "integer"}, IsType(int), 3, True),
        ({"$type": ["string", "null"]}, IsType(str, type(None)), None, 1),
        ({"$loose": "New York"}, Loose("New York"), " new-york! ", "Newark"),
        ({"$any": True}, ANY, [1, {"a": None}], None),
        ({"$literal": {"$ref": "#/x"}}, {"$ref": "#/x"}, {"$ref": "#/x"}, {"$ref": "#/y"}),
    ],
)
def test_each_operator_is_its_python_matcher(spec: Any, python: Any, yes: Any, no: Any) -> None:
    built = from_json(spec)
    assert repr(built) == repr(python)
    for matcher in (built, python):
        assert compare_values(matcher, yes)
        if no is not None:
            assert not compare_values(matcher, no)
    if no is None:  # $any: anything, None included, but the key must be there
        assert _f1([{"tool": "t", "args": {"x": spec}}], {}) == 0.0


def test_a_wrong_argument_no_longer_passes_and_tolerance_says_what_is_fine() -> None:
    assert _f1([{"tool": "refund", "args": {"amount": 20}}], {"amount": 25}) == 0.0
    gold = [{"tool": "t", "args": {"amount": {"$approx": {"value": 20, "abs": 5}}}}]
    assert _f1(gold, {"amount": 25}) == 1.0
    assert _f1(gold, {"amount": 25.5}) == 0.0


def test_matchers_at_any_depth_and_optional_keys_inside_dicts() -> None:
    gold = [
        {
            "tool": "t",
            "args": {
                "flights": [{"number": {"$regex": "^HAT"}, "date": {"$optional": "2024-05-20"}}],
                "pax": {"name": {"$loose": "Mia Li"}, "dob": {"$optional": {"$type": "string"}}},
            },
        }
    ]
    ok = {"flights": [{"number": "HAT136"}], "pax": {"name": "mia li"}}
    assert _f1(gold, ok) == 1.0
    assert _f1(gold, {**ok, "pax": {"name": "Mia Li", "dob": "1990-04-05"}}) == 1.0
    assert _f1(gold, {**ok, "pax": {"name": "Mia Li", "dob": 1990}}) < 1.0  # given: must match
    assert _f1(gold, {**ok, "pax": {"name": "Mia Li", "extra": 1}}) < 1.0  # no other keys
    assert _f1(gold, {**ok, "flights": [{"number": "HAT1", "date": "2024-05-21"}]}) < 1.0


def test_optional_arguments_per_expected_call() -> None:
    gold = [{"tool": "t", "args": {"q": "x", "limit": {"$optional": 10}}}]
    assert _f1(gold, {"q": "x"}) == 1.0  # absent is fine
    assert _f1(gold, {"q": "x", "limit": 10}) == 1.0
    half = toolscore.evaluate(gold, [{"tool": "t", "args": {"q": "x", "limit": 5}}])
    assert half.metrics["argument_metrics"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    # the same in Python, and in the match modes of the hard rules
    assert _f1([{"tool": "t", "args": {"q": "x", "limit": OptionalArg(10)}}], {"q": "x"}) == 1.0
    strict = toolscore.evaluate(
        gold, [{"tool": "t", "args": {"q": "x"}}], rules={"match": "strict"}
    )
    assert strict.match_verdicts == {"strict": True}


def test_alternatives_for_a_whole_call_score_as_the_best(tmp_path: Path) -> None:
    alts = {"$one_of": [{"tool": "a", "args": {"x": 1}}, {"tool": "b", "args": {"y": 2}}]}
    gold = [alts, {"tool": "c"}]
    for first in ({"tool": "a", "args": {"x": 1}}, {"tool": "b", "args": {"y": 2}}):
        result = toolscore.evaluate(gold, [first, {"tool": "c"}], rules={"match": "strict"})
        assert result.score == pytest.approx(1.0)
        assert result.match_verdicts == {"strict": True}
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"calls": gold, "match": ["strict"]}))
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"tool": "b", "args": {"y": 2}}\n{"tool": "c"}\n')
    result = toolscore.evaluate_trace(path, trace)
    assert result.score == pytest.approx(1.0) and result.match_verdicts == {"strict": True}
    python = [
        OneOf({"tool": "a", "args": {"x": 1}}, {"tool": "b", "args": {"y": 2}}),
        {"tool": "c"},
    ]
    assert toolscore.evaluate(python, [{"tool": "b", "args": {"y": 2}}, {"tool": "c"}]).score == (
        result.score
    )


def test_unknown_operators_name_the_file_the_line_and_the_operator(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text('[\n{"tool": "a"},\n{"tool": "b", "args": {"q": {"$regx": "x"}}}\n]')
    with pytest.raises(GoldFileError, match=r"gold\.json:3: .*unknown operator '\$regx'"):
        load_gold(gold)
    keyed = tmp_path / "gold.jsonl"
    keyed.write_text(
        '{"trace_id": "1", "expected": [{"tool": "a"}]}\n'
        '{"trace_id": "2", "expected": [{"tool": "b", "args": {"q": {"$regx": "x"}}}]}\n'
    )
    with pytest.raises(GoldFileError, match=r"gold\.jsonl:2: .*unknown operator '\$regx'"):
        build_gold(str(keyed), str(tmp_path), key=None)
    rules = tmp_path / "rules.json"
    rules.write_text('{"forbidden": [\n{"tool": "b", "args": {"q": {"n": {"$regx": 1}}}}]}')
    with pytest.raises(RuleFileError, match=r"rules\.json:2: .*unknown operator '\$regx'"):
        load_rules(rules)
    with pytest.raises(UsageError, match=r"unknown operator '\$regx'"):
        toolscore.evaluate([{"tool": "b", "args": {"q": {"$regx": "x"}}}], [])
    with pytest.raises(OperatorError, match="plain key"):
        from_json({"$gte": 1, "x": 2})


def test_free_tools_are_neither_expected_nor_extra(tmp_path: Path) -> None:
    gold = [{"tool": "refund", "args": {"amount": 20}}, {"tool": "get_order"}]
    trace = [
        {"tool": "get_user", "args": {"id": 1}},
        {"tool": "think", "args": {}},
        {"tool": "refund", "args": {"amount": 20}},
        {"tool": "get_order", "args": {}},
        {"tool": "get_order", "args": {}},
    ]
    plain = toolscore.evaluate(gold, trace)
    free = toolscore.evaluate(gold, trace, rules={"free": ["get_*", "think"]})
    assert plain.score < free.score
    metrics = free.metrics
    assert metrics["selection_accuracy"] == 1.0
    # the sequence is read without them: refund, get_order, get_order against the gold's two
    assert metrics["sequence_metrics"]["sequence_accuracy"] == pytest.approx(2 / 3)
    # get_order is named by the gold: judged all the same (one call too many)
    assert metrics["efficiency_metrics"]["redundant_count"] == 1
    without = [c for c in trace if c["tool"] not in ("get_user", "think")]
    assert free.score == toolscore.evaluate(gold, without).score
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"calls": gold, "free": ["get_*", "think"]}))
    calls = tmp_path / "trace.jsonl"
    calls.write_text("".join(json.dumps(c) + "\n" for c in trace))
    assert toolscore.evaluate_trace(path, calls).score == free.score


# -- the same matcher three ways (JSON gold file, keyed gold line, Python) --------------------

_scalars = st.one_of(
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False, width=32),
    st.sampled_from(["a", "A b", "x-y", " a ", "", "NYC", "nyc!"]),
    st.booleans(),
    st.none(),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=6,
)
_numbers = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False, width=32))
_texts = st.sampled_from(["a", "nyc", "x.y", "^a", "b$", "N?Y"])


def _matchers() -> st.SearchStrategy[tuple[Any, Any]]:
    """Pairs (JSON form, Python form) of the same matcher."""
    leaf = st.one_of(
        _numbers.map(lambda n: ({"$gte": n}, AtLeast(n))),
        _numbers.map(lambda n: ({"$lte": n}, AtMost(n))),
        st.tuples(_numbers, st.floats(0, 2)).map(
            lambda p: ({"$approx": {"value": p[0], "abs": p[1]}}, Approx(p[0], abs=p[1]))
        ),
        _texts.map(lambda t: ({"$regex": t}, Search(t))),
        _texts.map(lambda t: ({"$loose": t}, Loose(t))),
        _scalars.map(lambda v: ({"$contains": v}, Contains(v))),
        st.sampled_from(
            [({"$type": n}, IsType(*t)) for n, t in [("string", (str,)), ("number", (int, float))]]
        ),
        st.just(({"$any": True}, ANY)),
        _values.map(lambda v: (v, v)),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map(
                lambda ms: ({"$one_of": [j for j, _ in ms]}, OneOf(*(p for _, p in ms)))
            ),
            inner.map(lambda m: ({"$optional": m[0]}, OptionalArg(m[1]))),
            st.dictionaries(st.sampled_from("ab"), inner, min_size=1, max_size=2).map(
                lambda d: ({k: j for k, (j, _) in d.items()}, {k: p for k, (_, p) in d.items()})
            ),
        ),
        max_leaves=4,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=_matchers(), value=_values, present=st.booleans())
@example(  # a Python optional dict whose own key is optional (found by this test)
    pair=(
        {"$optional": {"a": {"$optional": {"$gte": 0}}}},
        OptionalArg({"a": OptionalArg(AtLeast(0))}),
    ),
    value={},
    present=True,
)
def test_a_matcher_decides_alike_in_a_gold_file_a_keyed_line_and_python(
    tmp_path_factory: pytest.TempPathFactory, pair: tuple[Any, Any], value: Any, present: bool
) -> None:
    spec, python = pair
    tmp = tmp_path_factory.mktemp("gold")
    call = {"tool": "t", "args": {"x": spec}}
    file_gold = tmp / "gold.json"
    file_gold.write_text(json.dumps([call]))
    keyed = tmp / "gold.jsonl"
    keyed.write_text(json.dumps({"trace_id": "1", "expected": [call]}) + "\n")
    keyed_gold = GoldLookup(build_gold(str(keyed), str(tmp), key=None)).get("1", None)
    assert keyed_gold is not None
    args = {"x": value} if present else {}
    scores = [
        _f1(load_gold(file_gold), args),
        _f1(keyed_gold, args),
        _f1([{"tool": "t", "args": {"x": python}}], args),
    ]
    assert scores[0] == scores[1] == scores[2]


_tools = st.sampled_from("abc")
_calls = st.builds(lambda tool, x: {"tool": tool, "args": {"x": x}}, _tools, st.integers(0, 2))


@settings(max_examples=60, deadline=None)
@given(
    gold=st.lists(
        st.one_of(_calls, st.lists(_calls, min_size=2, max_size=3).map(lambda a: {"$one_of": a})),
        max_size=4,
    ),
    trace=st.lists(_calls, max_size=5),
)
def test_a_gold_of_alternatives_is_the_best_of_its_alternatives(
    gold: list[Any], trace: list[Any]
) -> None:
    result = toolscore.evaluate(gold, trace)
    calls = gold_from_dicts(gold)
    choices = gold_choices(calls) or [calls]
    best = max(
        toolscore.evaluate([{"tool": c.tool, "args": c.args} for c in choice], trace).score
        for choice in choices
    )
    assert result.score == best
