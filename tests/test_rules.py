"""Forbidden-rule loading: the JSON operators, validation and every RuleFileError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore import evaluate
from toolscore.calls import ToolCall
from toolscore.errors import InputError, RuleFileError
from toolscore.matchers import Contains, OneOf, Regex, Search, compare_values
from toolscore.rules import (
    check_forbidden_calls,
    compile_rule,
    load_forbidden_rules,
    match_rule,
    rules_from_json,
    rules_from_python,
)

SEED_RULES: list[dict[str, Any]] = [
    {
        "tool": "run_shell",
        "args": {"command": {"$regex": "rm -rf"}},
        "reason": "destructive shell command",
    },
    {"tool": "read_file", "args": {"path": {"$contains": ".ssh"}}, "reason": "private keys"},
    {"tool": "deploy", "args": {"env": {"$one_of": ["prod", "production"]}}},
]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "forbidden.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_json_operators_become_matchers() -> None:
    rules = rules_from_json(SEED_RULES)
    assert isinstance(rules[0]["args"]["command"], Search)
    assert isinstance(rules[1]["args"]["path"], Contains)
    assert isinstance(rules[2]["args"]["env"], OneOf)
    assert rules[2]["reason"] is None
    assert [set(r) for r in rules] == [{"tool", "args", "reason"}] * 3


def test_seed_regex_rule_is_a_search() -> None:
    (rule,) = rules_from_json(SEED_RULES[:1])
    args = rule["args"]
    assert match_rule({"command": "rm -rf /"}, args)
    assert match_rule({"command": "sudo rm -rf /"}, args)  # a prefix does not hide it
    assert match_rule({"command": "ls\nrm -rf /"}, args)  # nor a second line
    assert match_rule({"command": ["rm", "-rf", "/"]}, args)  # a list is joined with spaces
    assert not match_rule({"command": "rm -r /tmp"}, args)
    assert not match_rule({"command": None}, args)
    assert not match_rule({}, args)


def test_contains_and_one_of() -> None:
    rules = rules_from_json(SEED_RULES)
    assert match_rule({"path": "/home/u/.ssh/id_rsa"}, rules[1]["args"])
    assert not match_rule({"path": "/etc/hosts"}, rules[1]["args"])
    assert match_rule({"env": "production"}, rules[2]["args"])
    assert not match_rule({"env": "staging"}, rules[2]["args"])


def test_literals_stay_literal_and_operators_apply_at_any_depth() -> None:
    (rule,) = rules_from_json([{"tool": "t", "args": {"b": {"k": 1}, "c": "v"}}])
    assert rule["args"] == {"b": {"k": 1}, "c": "v"}
    assert match_rule({"b": {"k": 1}, "c": " v "}, rule["args"])
    # operators apply at any depth (Toolscore: the top level only)
    (nested,) = rules_from_json([{"tool": "t", "args": {"a": {"b": {"$regex": "x"}}}}])
    assert match_rule({"a": {"b": "axe"}}, nested["args"])
    assert not match_rule({"a": {"b": "no"}}, nested["args"])
    # a literal object with $ keys is written with $literal; mixing is an error
    (lit,) = rules_from_json([{"tool": "t", "args": {"a": {"$literal": {"x": 1, "$regex": "y"}}}}])
    assert match_rule({"a": {"x": 1, "$regex": "y"}}, lit["args"])
    with pytest.raises(RuleFileError, match=r"argument 'a'.*plain key 'x'.*\$literal"):
        rules_from_json([{"tool": "t", "args": {"a": {"x": 1, "$regex": "y"}}}])


def test_lenient_comparison() -> None:
    assert match_rule({"n": 1.0}, {"n": 1})
    assert match_rule({"s": "  hi "}, {"s": "hi"})
    assert not match_rule({"s": "HI"}, {"s": "hi"})
    assert match_rule({"a": 1}, None)
    assert match_rule(None, {})
    assert not match_rule(["a"], {"a": 1})  # non-dict args never satisfy listed args


def test_python_form_keeps_matchers_and_plain_values() -> None:
    rules = rules_from_python(
        [{"tool": "run_shell", "args": {"command": Regex(r".*rm -rf.*")}}, {"tool": "x"}]
    )
    assert isinstance(rules[0]["args"]["command"], Regex)
    assert rules[1] == {"tool": "x", "args": None, "reason": None}
    # Python-form dicts with $ keys are literal values, as in Toolscore
    (rule,) = rules_from_python([{"tool": "t", "args": {"a": {"$regex": "x"}}}])
    assert rule["args"]["a"] == {"$regex": "x"}


def test_load_forbidden_rules(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(SEED_RULES, indent=2))
    rules = load_forbidden_rules(path)
    assert [r["tool"] for r in rules] == ["run_shell", "read_file", "deploy"]
    assert load_forbidden_rules(str(path))[0]["reason"] == "destructive shell command"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"tool": "x"}, "forbidden rules must be a JSON list of rule objects, got dict"),
        (
            [{"tool": "a"}, "rm"],
            'forbidden rule 1 must be an object like {"tool": "name", "args": {...}}, got \'rm\'',
        ),
        ([{"tool": "a"}, {"tool": "b"}, {"tool": ""}], "forbidden rule 2 needs a non-empty 'tool'"),
        ([{"args": {}}], "forbidden rule 0 needs a non-empty 'tool' string"),
        ([{"tool": 5}], "forbidden rule 0 needs a non-empty 'tool' string"),
        (
            [{"tool": "t", "args": ["a"]}],
            "forbidden rule 0 'args' must be an object (argument name: value), got ['a']",
        ),
        (
            [{"tool": "t", "args": {"c": {"$regex": 5}}}],
            "forbidden rule 0 argument 'c': $regex needs a pattern string, got 5",
        ),
        (
            [{"tool": "t", "args": {"c": {"$regex": "("}}}],
            "forbidden rule 0 argument 'c': invalid $regex pattern '(': missing ), unterminated",
        ),
        (
            [{"tool": "t", "args": {"c": {"$one_of": "prod"}}}],
            "forbidden rule 0 argument 'c': $one_of needs a list, got 'prod'",
        ),
        (
            [{"tool": "t"}, {"tool": "t", "args": {"c": {"$regx": "rm"}}}],
            "forbidden rule 1 argument 'c': unknown operator '$regx' "
            "(known: $one_of, $any_of, $regex",
        ),
    ],
)
def test_rule_errors(data: Any, problem: str) -> None:
    with pytest.raises(RuleFileError) as info:
        rules_from_json(data)
    assert info.value.path == "<rules>"
    assert info.value.problem.startswith(problem)
    assert str(info.value).startswith(f"<rules>: {problem}")


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("[1, 2]", 1, "forbidden rule 0 must be an object like"),
        (
            '[\n {"tool": "a"},\n {"tool": "b", "args": {"c": {"$regx": "rm"}}}\n]',
            3,
            "forbidden rule 1 argument 'c': unknown operator '$regx' (known: $one_of, $any_of, ",
        ),
        (
            '[{"tool": "a"},\n{"tool": "b",\n "args": {"c": {"$regex": "x(?P<n"}}}]',
            3,
            "forbidden rule 1 argument 'c': invalid $regex pattern 'x(?P<n': missing >, "
            "unterminated name at position 5 (at $[1].args.c.$regex)",
        ),
        ('[{"tool": "a"},\n {"args": {}}]', 2, "forbidden rule 1 needs a non-empty 'tool'"),
        ('[{"tool": "a"},\n {"tool": 3}]', 2, "forbidden rule 1 needs a non-empty 'tool'"),
        ('[\n{"tool": "a", "args": "rm"}]', 2, "forbidden rule 0 'args' must be an object"),
        ('{"tool": "a"}', 1, "forbidden rules must be a JSON list of rule objects, got dict"),
        ("[" * 1001 + "]" * 1001, 1, "arrays and objects nested deeper than 1,000 levels"),
    ],
)
def test_rule_file_errors_name_the_line_and_json_path(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(RuleFileError) as info:
        load_forbidden_rules(path)
    assert info.value.line == line
    assert info.value.problem.startswith(problem), info.value.problem
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_rule_errors_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[{"tool": "t", "args": {"c": {"$contains": "x"}}}, {"tool": ""}]')
    with pytest.raises(RuleFileError) as info:
        load_forbidden_rules(path)
    assert info.value.path == str(path)
    assert "forbidden rule 1 needs a non-empty 'tool' string" in str(info.value)


def test_bad_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '[\n  {"tool": "a"},\n  {"tool": "b",}\n]')
    with pytest.raises(RuleFileError) as info:
        load_forbidden_rules(path)
    err = info.value
    assert err.line == 3
    assert err.problem.startswith("not valid JSON: Expecting property name")
    assert "(column 16)" in err.problem
    assert str(err).startswith(f"{path}:3: not valid JSON")
    assert isinstance(err, InputError)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(RuleFileError, match="cannot read the rule file"):
        load_forbidden_rules(tmp_path / "nope.json")
    path = tmp_path / "bin.json"
    path.write_bytes(b'[{"tool": "\xff"}]')
    with pytest.raises(RuleFileError, match="not UTF-8") as info:
        load_forbidden_rules(path)
    assert info.value.offset == 11


def test_python_form_errors() -> None:
    with pytest.raises(RuleFileError, match="forbidden must be a list of rule dicts"):
        rules_from_python({"tool": "x"})
    with pytest.raises(RuleFileError, match="forbidden rule 0 'args' must be an object"):
        rules_from_python([{"tool": "x", "args": "rm"}])


def test_check_forbidden_calls_record_layout() -> None:
    calls = [
        ToolCall("run_shell", {"command": "make test"}),
        ToolCall("run_shell", {"command": "sudo rm -rf /"}),
        ToolCall("delete_repository", None),
    ]
    rules = rules_from_json(
        [*SEED_RULES, {"tool": "delete_repository"}, {"tool": "run_shell", "reason": "any"}]
    )
    assert check_forbidden_calls(calls, rules) == {
        "violation_count": 3,
        "rule_count": 5,
        "violations": [
            {
                "index": 0,
                "tool": "run_shell",
                "args": {"command": "make test"},
                "rule": 4,
                "reason": "any",
            },
            {
                "index": 1,
                "tool": "run_shell",
                "args": {"command": "sudo rm -rf /"},
                "rule": 0,
                "reason": "destructive shell command",
            },
            {"index": 2, "tool": "delete_repository", "args": {}, "rule": 3, "reason": None},
        ],
    }


values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["rm -rf /", "ls", " ls "]),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=5,
)


def _operator(op: str, operand: Any) -> Any:
    return rules_from_json([{"tool": "t", "args": {"k": {op: operand}}}])[0]["args"]["k"]


def reference_match(args: Any, rule_args: Any) -> bool:
    """The definition the compiled form must answer as: every rule argument present and
    equal by compare_values; args that are not a dict satisfy no rule listing arguments."""
    if not rule_args:
        return True
    if not isinstance(args, dict):
        return False
    return all(k in args and compare_values(v, args[k]) for k, v in rule_args.items())


rule_values = (
    values
    | st.sampled_from(["rm", "^ls", "(?i)LS"]).map(lambda p: _operator("$regex", p))
    | values.map(lambda v: _operator("$contains", v))
    | st.lists(values, max_size=3).map(lambda v: _operator("$one_of", v))
)


@settings(max_examples=500, deadline=None)
@given(
    st.none() | st.dictionaries(st.sampled_from(["k", "j"]), rule_values, max_size=2),
    st.none() | values | st.dictionaries(st.sampled_from(["k", "j", "x"]), values, max_size=3),
)
def test_compiled_rules_answer_as_the_definition(rule_args: Any, args: Any) -> None:
    assert compile_rule(rule_args).matches(args) == reference_match(args, rule_args)
    assert match_rule(args, rule_args) == reference_match(args, rule_args)


# The column path searches a batch's strings joined by newlines before it tests them one by
# one: patterns whose zero-width parts look past a string's edge, and strings with newlines,
# are where that could go wrong.
TRICKY_PATTERNS = [
    "rm", "^ls", "ls$", "(?i)LS", r"\bls\b", r"\Bs", r"\Als", r"ls\Z", "(?<=x)ls", "(?<!x)ls",
    r"ls(?!\s)", r"ls(?=\n)", r"(l)\1", "(?m)^ls$", "(?s)l.s", "l.s", "[^a]ls", "^$", "", "\n",
    "ls\n", r"(?:a|^)ls", "(?>ls)", "(l)?(?(1)s|x)", r"\B", r"\b", "^", "$", r"\Z", r"\A",
]  # fmt: skip
texts = st.sampled_from(["ls", " ls", "ls ", "xls", "lls", "l\ns", "ls\n", "a\nls", "", "\n", "é"])
column_values = (
    texts
    | st.text(alphabet="ls\n xa", max_size=5)
    | st.none()
    | st.integers(-1, 1)
    | st.lists(texts, max_size=2)
)
column_rule_values = (
    st.sampled_from(TRICKY_PATTERNS).map(lambda p: _operator("$regex", p))
    | texts.map(lambda v: _operator("$contains", v))
    | st.lists(texts, max_size=3).map(lambda v: _operator("$one_of", v))
    | texts
    | column_values
)


@settings(max_examples=700, deadline=None)
@given(
    st.none() | st.dictionaries(st.sampled_from(["k", "j"]), column_rule_values, max_size=2),
    st.lists(
        st.dictionaries(st.sampled_from(["k", "j", "x"]), column_values, max_size=3)
        | st.sampled_from([None, [], "k"]),
        max_size=8,
    ),
)
def test_column_rules_answer_as_the_definition(rule_args: Any, column: list[Any]) -> None:
    expected = [i for i, args in enumerate(column) if reference_match(args, rule_args)]
    assert compile_rule(rule_args).select(column) == expected


@pytest.mark.parametrize("pattern", TRICKY_PATTERNS)
def test_every_tricky_pattern_answers_as_the_definition_on_joined_strings(pattern: str) -> None:
    rule_args = rules_from_json([{"tool": "t", "args": {"k": {"$regex": pattern}}}])[0]["args"]
    strings = ["ls", "xls", "a\nls", "ls\n", "l\ns", "", "\n", "lls", "s ls", "éls"]
    for i in range(len(strings)):
        for j in range(i, len(strings) + 1):
            column = [{"k": s} for s in strings[i:j]]
            expected = [n for n, args in enumerate(column) if reference_match(args, rule_args)]
            assert compile_rule(rule_args).select(column) == expected, (pattern, strings[i:j])


class _AnyCase(Contains):
    """A user's matcher on top of a built-in one: its own answers must be kept."""

    def matches(self, value: object) -> bool:
        return isinstance(value, str) and str(self.item).lower() in value.lower()


class _Prefix(Search):
    def matches(self, value: object) -> bool:
        return isinstance(value, str) and value.startswith(self.pattern)


def test_subclassed_matchers_keep_their_own_answers() -> None:
    column = [{"k": "RM -RF /"}, {"k": "rm -rf /"}, {"k": "xrm"}, {"k": "ls"}]
    for rule_args in ({"k": _AnyCase("rm -rf")}, {"k": _Prefix("rm")}):
        expected = [i for i, args in enumerate(column) if reference_match(args, rule_args)]
        assert compile_rule(rule_args).select(column) == expected
        assert [compile_rule(rule_args).matches(args) for args in column] == [
            reference_match(args, rule_args) for args in column
        ]
    assert compile_rule({"k": _AnyCase("rm -rf")}).select(column) == [0, 1]
    assert compile_rule({"k": _Prefix("rm")}).select(column) == [1]


@settings(max_examples=200, deadline=None)
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(["run_shell", "sql_query", "search"]),
            st.sampled_from([{}, {"command": "sudo rm -rf /"}, {"command": "ls"},
                             {"command": "rm  -rf"}, {"query": "DROP TABLE x"},
                             {"query": "select 1"}]),
        ),
        max_size=12,
    )
)  # fmt: skip
def test_a_batch_matches_the_same_with_or_without_the_callers_grouping(
    calls: list[tuple[str, Any]],
) -> None:
    """``CompiledRules.match`` groups the batch itself when the caller (the policy check,
    with the batch's shared grouping) does not."""
    from toolscore.rules import CompiledRules

    compiled = CompiledRules(
        rules_from_python(
            [
                {"tool": "run_shell", "args": {"command": Contains("sudo")}},
                {"tool": "run_shell", "args": {"command": Regex(r"\brm\s+-rf\b")}},
                {"tool": "sql_query", "args": {"query": Regex(r"(?i)drop\s+table")}},
            ]
        )
    )
    tools = [t for t, _ in calls]
    args = [a for _, a in calls]
    groups: dict[str, list[int]] = {}
    for i, tool in enumerate(tools):
        groups.setdefault(tool, []).append(i)
    found = compiled.match(tools, args)
    assert found == compiled.match(tools, args, groups)
    # and with the batch's shared columns of arguments (a tool's calls left for its later
    # rules are the ones no earlier rule matched)
    from toolscore.calls import ToolCall
    from toolscore.columns import ListColumns

    cols = ListColumns([ToolCall(t, a) for t, a in calls])
    assert found == compiled.match(tools, args, cols.by_tool(), cols.args_of)
    expected = [(i, r) for i, (t, a) in enumerate(calls)
                if (r := compiled.first_match(t, a)) is not None]  # fmt: skip
    assert found[0] == expected


def test_an_undecided_forbidden_match_is_a_violation_in_evaluate() -> None:
    hostile = "a" * 99 + "!\n"  # $ before a final newline: Python's re, under the time bound
    calls = [{"tool": "run_shell", "args": {"command": hostile}}] * 5
    calls.append({"tool": "run_shell", "args": {"command": "aaa\n"}})
    # nested in another matcher too: the undecided match reaches the rule, not "no match"
    for expected in ({"$regex": "(a+)+$"}, {"$one_of": [{"$regex": "(a+)+$"}, "x"]}):
        rules = rules_from_json([{"tool": "run_shell", "args": {"command": expected}}])
        result = evaluate([], calls, forbidden=rules)
        violations = result.policy_violations
        assert [v["index"] for v in violations][-1] == 5
        assert violations[-1].get("undecided") is True
        assert result.verdict().violations.total >= 1
