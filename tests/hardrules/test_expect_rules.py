"""The fluent API's hard-rule verbs: each passes on a trace that keeps the rule and raises,
saying which rule, on one that breaks it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolscore import Contains, expect
from toolscore.errors import RuleFileError
from toolscore.expect import Expectation, ToolScoreAssertionError

KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _calls(*tools: str) -> list[dict[str, Any]]:
    return [{"tool": t, "args": {}} for t in tools]


Verb = Callable[[Expectation], Expectation]


@pytest.mark.parametrize(
    ("verb", "good", "bad", "says"),
    [
        (lambda e: e.calls_in_order("lint", "test", "deploy"),
         _calls("lint", "test", "deploy"), _calls("lint", "deploy", "test"),
         "call 2 deploy comes before any call to test (rule order[0].1)"),
        (lambda e: e.calls_before("login", "pay"),
         _calls("login", "pay"), _calls("pay", "login"),
         "call 1 pay comes before any call to login"),
        (lambda e: e.calls_at_most("deploy", 1),
         _calls("deploy", "x"), _calls("deploy", "deploy"),
         "call 2 deploy is call 2 to deploy; at most 1 allowed"),
        (lambda e: e.calls_at_least("search", 2),
         _calls("search", "search"), _calls("search"), "1 calls to search; at least 2 required"),
        (lambda e: e.calls_between("b", 1, 3),
         _calls("b", "b", "b"), _calls("b", "b", "b", "b"), "call 4 b is call 4 to b"),
        (lambda e: e.within_steps(2), _calls("a", "b"), _calls("a", "b", "c"),
         "call 3 goes past the budget of 2 calls"),
        (lambda e: e.only_calls("search", "fetch"), _calls("search", "fetch"),
         _calls("search", "rm"), "call 2 rm is not an allowed tool"),
        (lambda e: e.with_schemas({"search": {"type": "object", "required": ["q"]}}),
         [{"tool": "search", "args": {"q": "x"}}], [{"tool": "search", "args": {}}],
         "call 1 search arguments fail its schema at '(root)': 'q' is a required property"),
        (lambda e: e.does_not_leak_to("http_post"),
         [{"tool": "http_post", "args": {}}, {"tool": "env", "args": {}, "result": KEY}],
         [{"tool": "env", "args": {}, "result": KEY}, {"tool": "http_post", "args": {}}],
         "call 2 http_post sends data out after call 1 env returned a credential"),
        (lambda e: e.does_not_leak_to("mail", sources=[{"tool": "read", "args": {
            "path": Contains(".ssh")}}]),
         [{"tool": "read", "args": {"path": "a.txt"}}, {"tool": "mail", "args": {}}],
         [{"tool": "read", "args": {"path": "~/.ssh/id"}}, {"tool": "mail", "args": {}}],
         "call 2 mail sends data out after call 1 read"),
    ],
)  # fmt: skip
def test_each_verb(verb: Verb, good: Any, bad: Any, says: str) -> None:
    result = verb(expect(good)).run()
    assert result.rule_violations == []
    with pytest.raises(ToolScoreAssertionError) as info:
        verb(expect(bad)).run()
    assert says in str(info.value)
    assert KEY not in str(info.value)


def test_matches_trajectory_with_argument_modes() -> None:
    trace = [{"tool": "search", "args": {"q": "x", "page": 2}}, {"tool": "fetch", "args": {}}]
    base = expect(trace).calls("fetch").calls("search", q="x")
    with pytest.raises(ToolScoreAssertionError, match=r"trajectory match \(unordered\) failed"):
        base.matches_trajectory("unordered").with_score(0).run()
    base.with_argument_mode("subset", tool="search")
    result = base.with_score(0).run()
    assert result.match_verdicts == {"unordered": True}
    with pytest.raises(ToolScoreAssertionError, match=r"\(strict\) failed"):
        base.matches_trajectory("strict").run()


def test_a_bad_rule_fails_where_it_is_written() -> None:
    with pytest.raises(RuleFileError, match="'min' 3 is above 'max' 1"):
        expect([]).calls_between("a", 3, 1)
    with pytest.raises(RuleFileError, match="unknown match mode"):
        expect([]).matches_trajectory("loose")


def test_rules_alone_are_an_expectation() -> None:
    result = expect(_calls("a", "a")).calls_at_most("a", 2).run()
    assert result.rule_violations == []
