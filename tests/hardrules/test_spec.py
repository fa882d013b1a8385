"""The rule file's object form: what it accepts, and a clear error for what it does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolscore import Contains
from toolscore.errors import RuleFileError
from toolscore.hardrules import (
    ArgumentModes,
    CountRule,
    OrderRule,
    combine,
    load_gold_rules,
    load_rules,
    ruleset,
    ruleset_from_json,
)
from toolscore.matchers import Search


def test_a_plain_forbidden_list_is_still_a_rule_file(tmp_path: Path) -> None:
    path = tmp_path / "forbidden.json"
    path.write_text(json.dumps([{"tool": "run_shell", "args": {"command": {"$regex": "rm"}}}]))
    rules = load_rules(path)
    assert rules.has_forbidden and not rules.hard
    assert isinstance(rules.forbidden[0]["args"]["command"], Search)


def test_every_key_of_the_object_form() -> None:
    rules = ruleset_from_json(
        {
            "forbidden": [{"tool": "rm"}],
            "allow": ["search", "fetch"],
            "order": [{"before": "login", "after": "pay", "reason": "auth first"},
                      ["lint", "test", "deploy"]],
            "counts": [{"tool": "deploy", "max": 1}, {"tool": "search", "min": 1, "max": 3}],
            "max_calls": 20,
            "schemas": {"search": {"type": "object"}},
            "data_flow": {"sinks": ["http_post"], "sources": [
                {"tool": "read_file", "args": {"path": {"$contains": ".ssh"}}}]},
            "match": ["strict", "superset"],
            "arguments": {"mode": "subset", "tools": {"fetch": "ignore",
                          "search": {"args": {"page": "ignore"}}}, "score": True},
        }
    )  # fmt: skip
    assert rules.hard and rules.has_forbidden
    assert rules.allow == {"search", "fetch"}
    assert rules.order == (
        OrderRule("order[0]", "login", "pay", "auth first"),
        OrderRule("order[1].0", "lint", "test"),
        OrderRule("order[1].1", "test", "deploy"),
    )
    assert rules.counts == (
        CountRule("counts[0]", "deploy", None, 1),
        CountRule("counts[1]", "search", 1, 3),
        CountRule("max_calls", None, None, 20),
    )
    assert rules.schemas is not None and rules.schemas.tools == {"search"}
    (flow,) = rules.data_flow
    assert flow.id == "data_flow" and flow.sinks == {"http_post"} and flow.credentials
    assert isinstance(flow.sources[0]["args"]["path"], Contains)
    assert rules.match == ("strict", "superset")
    assert rules.arguments == ArgumentModes(
        "subset", {"fetch": "ignore"}, {"search": {"page": "ignore"}}, True
    )
    assert rules.rule_count() == 3 + 3 + 1 + 1 + 1 + 2


def test_ids_given_in_the_file_are_kept_and_must_be_unique() -> None:
    rules = ruleset({"counts": [{"id": "one-deploy", "tool": "deploy", "max": 1}]})
    assert rules.counts[0].id == "one-deploy"
    with pytest.raises(RuleFileError, match="two rules have the id 'x'"):
        ruleset({"counts": [{"id": "x", "tool": "a", "max": 1}],
                 "order": [{"id": "x", "before": "a", "after": "b"}]})  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"allowed": ["a"]}, "unknown rule key 'allowed'"),
        ({"allow": "search"}, "allow must be a list of tool names"),
        ({"allow": [""]}, "allow item 0 must be a non-empty string"),
        ({"order": [{"before": "a"}]}, "order rule 0 'after' must be a non-empty string"),
        ({"order": [{"before": "a", "after": "a"}]}, "name the same tool"),
        ({"order": [["a"]]}, "a chain needs at least two tools"),
        ({"order": [{"before": "a", "after": "b", "then": "c"}]}, "unknown key 'then'"),
        ({"counts": [{"tool": "a"}]}, "count rule 0 needs 'min', 'max' or both"),
        ({"counts": [{"tool": "a", "max": -1}]}, "'max' must be a non-negative integer"),
        ({"counts": [{"tool": "a", "max": True}]}, "'max' must be a non-negative integer"),
        ({"counts": [{"tool": "a", "min": 3, "max": 1}]}, "'min' 3 is above 'max' 1"),
        ({"max_calls": "10"}, "must be a non-negative integer"),
        ({"data_flow": {"sources": []}}, "'sinks' must be a list of tool names"),
        ({"data_flow": {"sinks": ["post"], "credentials": False}}, "has no source"),
        (
            {
                "data_flow": {
                    "sinks": ["post"],
                    "sources": [{"tool": "r", "args": {"p": {"$regx": "x"}}}],
                }
            },
            "unknown operator '\\$regx'",
        ),
        ({"match": "exactly"}, "unknown match mode 'exactly'"),
        ({"arguments": "loose"}, "unknown argument mode 'loose'"),
        ({"arguments": {"tools": {"a": {"args": {"x": "some"}}}}}, "argument 'x'"),
        ({"arguments": {"score": "yes"}}, "'score' must be true or false"),
        ({"schemas": {"search": {"type": "objekt"}}}, "tool 'search' is not a valid JSON"),
        ({"schemas": 3}, "expected tool definitions"),
    ],
)
def test_a_bad_rule_is_an_error_that_says_what_and_where(spec: Any, message: str) -> None:
    with pytest.raises(RuleFileError, match=message) as info:
        ruleset_from_json(spec, "rules.json")
    assert str(info.value).startswith("rules.json: ")


def test_a_rule_file_that_is_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text('{\n  "allow": [\n')
    with pytest.raises(RuleFileError) as info:
        load_rules(path)
    assert info.value.line is not None and str(path) in str(info.value)


def test_schemas_may_live_in_their_own_file_next_to_the_rules(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(
        json.dumps({"tools": [{"name": "search", "inputSchema": {"type": "object"}}]})
    )
    (tmp_path / "rules.json").write_text(json.dumps({"schemas": "tools.json"}))
    rules = load_rules(tmp_path / "rules.json")
    assert rules.schemas is not None and rules.schemas.tools == {"search"}


def test_a_gold_object_carries_its_own_rules(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text(
        json.dumps(
            {
                "calls": [{"tool": "search", "args": {"q": "x"}}],
                "match": "superset",
                "arguments": {"mode": "subset"},
                "rules": {"allow": ["search", "fetch"], "counts": [{"tool": "search", "max": 2}]},
            }
        )
    )
    rules = load_gold_rules(gold)
    assert rules is not None
    assert rules.match == ("superset",) and rules.allow == {"search", "fetch"}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"tool": "search"}]))
    assert load_gold_rules(plain) is None


def test_combined_rule_sets_join_lists_and_intersect_allowlists() -> None:
    a = ruleset({"allow": ["x", "y"], "counts": [{"tool": "x", "max": 1}], "match": "strict"})
    b = ruleset({"allow": ["y", "z"], "forbidden": [{"tool": "z"}], "match": ["subset"],
                 "order": [["x", "y"]]})  # fmt: skip
    both = combine(a, b)
    assert both is not None
    assert both.allow == {"y"} and both.match == ("strict", "subset")
    assert len(both.counts) == 1 and len(both.order) == 1 and both.has_forbidden
    assert combine(None, a) is a and combine(a, None) is a


def test_the_same_default_id_in_both_sets_is_told_apart() -> None:
    a = ruleset({"data_flow": {"sinks": ["post"]}, "counts": [{"tool": "x", "max": 1}]})
    both = combine(a, a)
    assert both is not None
    assert [r.id for r in both.data_flow] == ["data_flow", "data_flow#2"]
    assert [r.id for r in both.counts] == ["counts[0]", "counts[0]#2"]
