"""Tool schemas from OpenAI, Anthropic, MCP and Gemini definitions, and a call's arguments
checked against them with the failing path."""

from __future__ import annotations

import decimal
import enum
import random
from collections import UserDict
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore import evaluate
from toolscore.hardrules import ToolSchemas, tool_definitions
from toolscore.hardrules.schemas import error_path

SEARCH = {
    "type": "object",
    "properties": {
        "q": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1},
        "filters": {
            "type": "array",
            "items": {"type": "object", "properties": {"field": {"enum": ["a", "b"]}},
                      "required": ["field"]},
        },
    },
    "required": ["q"],
    "additionalProperties": False,
}  # fmt: skip


@pytest.mark.parametrize(
    "definitions",
    [
        [{"type": "function", "function": {"name": "search", "parameters": SEARCH}}],  # OpenAI
        [{"type": "function", "name": "search", "parameters": SEARCH}],  # OpenAI Responses
        [{"name": "search", "description": "web", "input_schema": SEARCH}],  # Anthropic
        {"tools": [{"name": "search", "inputSchema": SEARCH}]},  # MCP tools/list result
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "search",
                                                          "inputSchema": SEARCH}]}},
        [{"functionDeclarations": [{"name": "search", "parameters": SEARCH}]}],  # Gemini
        {"search": SEARCH},  # name -> schema
    ],
    ids=["openai", "openai-responses", "anthropic", "mcp", "mcp-jsonrpc", "gemini", "mapping"],
)  # fmt: skip
def test_every_provider_shape_gives_the_tool_and_its_schema(definitions: Any) -> None:
    assert tool_definitions(definitions) == [("search", SEARCH)]
    schemas = ToolSchemas.from_definitions(definitions)
    assert schemas.problem("search", {"q": "x"}) is None


def test_a_tool_declared_without_parameters_takes_any_object() -> None:
    schemas = ToolSchemas.from_definitions([{"name": "now", "description": "the time"}])
    assert schemas.problem("now", {"tz": "UTC"}) is None
    assert schemas.problem("now", None) is None


@pytest.mark.parametrize(
    ("args", "path", "problem"),
    [
        ({}, "", "'q' is a required property"),
        ({"q": 3}, "q", "expected 'string', got integer"),
        ({"q": "x", "limit": 0}, "limit", "fails minimum 1"),
        ({"q": "x", "filters": [{"field": "a"}, {"field": "c"}]}, "filters[1].field",
         "not one of ['a', 'b']"),
        ({"q": "x", "filters": [{}]}, "filters[0]", "'field' is a required property"),
        ({"q": "x", "page": 2}, "", "unexpected argument 'page'"),
    ],
)  # fmt: skip
def test_the_failing_path_and_keyword_are_reported(args: Any, path: str, problem: str) -> None:
    found = ToolSchemas({"search": SEARCH}).problem("search", args)
    assert found is not None
    assert found[:2] == (path, problem)


def test_the_message_never_quotes_the_argument_value() -> None:
    key = "sk-ant-" + "aB3xY9" * 5
    result = evaluate(
        [],
        [{"tool": "search", "args": {"q": ["not", key]}}],
        rules={"schemas": {"search": SEARCH}},
    )
    (violation,) = result.rule_violations
    assert violation["kind"] == "schema_violation" and violation["path"] == "q"
    assert key not in violation["message"] and "aB3xY9" not in violation["message"]
    assert violation["message"] == (
        "call 1 search arguments fail its schema at 'q': expected 'string', got array "
        "(rule schema:search)"
    )


def test_a_call_to_a_tool_without_a_schema_is_not_checked() -> None:
    assert ToolSchemas({"search": SEARCH}).problem("fetch", {"anything": 1}) is None


def test_answers_are_remembered_by_the_arguments_text() -> None:
    schemas = ToolSchemas({"search": SEARCH})
    first = schemas.problem("search", {"q": 1}, b'{"q":1}')
    assert first is not None
    # the same key answers from memory, even for other values (the caller's contract)
    assert schemas.problem("search", {"q": "fine"}, b'{"q":1}') == first


json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["q", "limit", "filters", "field", "x"]), inner, max_size=3
        )
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(args=json_value)
def test_any_arguments_get_an_answer_that_agrees_with_jsonschema(args: Any) -> None:
    from jsonschema import Draft202012Validator

    found = ToolSchemas({"search": SEARCH}).problem("search", args)
    errors = list(Draft202012Validator(SEARCH).iter_errors(args))
    assert (found is None) == (not errors)
    if found is not None:
        paths = {error_path(e.absolute_path) for e in errors}
        assert found[0] in paths and found[2] == len(errors)


simple_schema = st.deferred(
    lambda: st.sampled_from(
        [{"type": t} for t in ("string", "integer", "number", "boolean", "null", "array",
                               "object")]
        + [True, {}, {"type": ["string", "null"]}, {"description": "anything"}]
    )
    | st.builds(lambda items: {"type": "array", "items": items}, simple_schema)
    | st.builds(
        lambda props, required, extra: {
            "type": "object",
            "properties": props,
            "required": required,
            **({} if extra is None else {"additionalProperties": extra}),
        },
        st.dictionaries(st.sampled_from(["q", "limit", "filters", "field"]), simple_schema,
                        max_size=3),
        st.lists(st.sampled_from(["q", "limit", "x"]), max_size=2, unique=True),
        st.none() | st.booleans() | simple_schema,
    )
)  # fmt: skip
any_value = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, width=16)
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["q", "limit", "filters", "field", "x"]), inner,
                      max_size=3),
    max_leaves=10,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(schema=simple_schema, value=any_value)
def test_the_fast_test_gives_jsonschemas_answer(schema: Any, value: Any) -> None:
    from jsonschema import Draft202012Validator

    from toolscore.hardrules.schemas import fast_test

    test = fast_test(schema)
    assert test is not None
    assert test(value) == Draft202012Validator(schema).is_valid(value)


def test_a_schema_with_other_keywords_has_no_fast_test() -> None:
    from toolscore.hardrules.schemas import fast_test

    assert fast_test({"type": "string", "minLength": 2}) is None
    assert fast_test({"type": "object", "properties": {"q": {"enum": ["a"]}}}) is None
    assert fast_test(SEARCH) is None  # "minimum" and "enum" inside


@settings(max_examples=200, deadline=None)
@given(schema=simple_schema, column=st.lists(any_value, max_size=5))
def test_a_column_passes_only_when_every_call_is_valid(schema: Any, column: list[Any]) -> None:
    from jsonschema import Draft202012Validator

    from toolscore.hardrules.schemas import column_test

    test = column_test(schema)
    if test is None:
        assert not (isinstance(schema, dict) and schema.get("type") == "object"
                    and schema.get("additionalProperties", True) in (True, False))  # fmt: skip
        return
    validator = Draft202012Validator(schema)
    if test(column):
        assert all(validator.is_valid(v) for v in column)
    # a column of valid calls of exact JSON types passes
    plain = [{"q": "x", "limit": 2}] * 3
    if all(validator.is_valid(v) for v in plain):
        assert test(plain)


@settings(max_examples=200, deadline=None)
@given(schema=simple_schema, column=st.lists(any_value, max_size=5))
def test_the_column_test_for_decoded_json_passes_only_when_every_call_is_valid(
    schema: Any, column: list[Any]
) -> None:
    """The variant for a trace's arguments (JSON values only), which types ``object`` and
    ``array`` properties in the struct instead of testing their exact types: never passes an
    invalid column, and passes what the general test passes."""
    from jsonschema import Draft202012Validator

    from toolscore.hardrules.schemas import column_test

    test = column_test(schema, json_values=True)
    general = column_test(schema)
    assert (test is None) == (general is None)
    if test is None or general is None:
        return
    validator = Draft202012Validator(schema)
    if test(column):
        assert all(validator.is_valid(v) for v in column)
    if general(column):
        assert test(column)


def test_the_column_test_for_decoded_json_types_objects_and_arrays() -> None:
    from toolscore.hardrules.schemas import ToolSchemas

    schema = {
        "type": "object",
        "properties": {"o": {"type": "object"}, "l": {"type": "array"}, "q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    }
    schemas = ToolSchemas({"t": schema})
    ok = [{"q": "x", "o": {"a": [1]}, "l": [{"b": 2}]}, {"q": "y"}]
    assert schemas.all_valid("t", ok, json_values=True)
    assert schemas.all_valid("t", ok)
    for bad in ({"q": "x", "o": []}, {"q": "x", "l": {}}, {"q": "x", "o": "{}"}, {"q": 1}, [],
                None, "q"):  # fmt: skip
        assert not schemas.all_valid("t", [*ok, bad], json_values=True)
        assert not schemas.all_valid("t", [*ok, bad])
    # what only Python code passes is for the general test to refuse (the per-call test
    # then says): the variant for decoded JSON is never given it
    assert not schemas.all_valid("t", [{"q": "x", "l": ()}])
    assert not schemas.all_valid("t", [{"q": "x", "o": MappingProxyType({})}])
    assert not schemas.all_valid("t", [MappingProxyType({"q": "x"})])


class _Text(str):
    pass


class _Level(enum.IntEnum):
    LOW = 1


odd_value = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.integers(2**63, 2**65)
    | st.floats(allow_nan=False, width=16) | st.just(1.0) | st.just(decimal.Decimal("1.5"))
    | st.just(complex(1, 1)) | st.just(_Level.LOW) | st.text(max_size=3).map(_Text)
    | st.text(max_size=3) | st.just(b"x"),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.sampled_from(["q", "limit", "filters", "field", "x"]), inner,
                      max_size=3).map(lambda d: st.sampled_from([d, MappingProxyType(d),
                                                                 UserDict(d)]))
    .flatmap(lambda s: s)
    | st.dictionaries(st.integers(0, 2), inner, max_size=2),
    max_leaves=10,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    schema=simple_schema,
    column=st.lists(
        st.dictionaries(st.sampled_from(["q", "limit", "filters", "field", "x", "a b"]),
                        odd_value, max_size=4),
        max_size=4,
    ),
)  # fmt: skip
def test_a_column_of_python_values_passes_only_when_every_call_is_valid(
    schema: Any, column: list[Any]
) -> None:
    """Values only Python code makes (tuples, mappings that are not dicts, decimals, enums,
    str subclasses, bytes, huge ints): the column test may send a valid column to the
    per-call test, never pass an invalid one."""
    from jsonschema import Draft202012Validator

    from toolscore.hardrules.schemas import column_test

    test = column_test(schema)
    if test is not None and test(column):
        validator = Draft202012Validator(schema)
        assert all(validator.is_valid(v) for v in column)


def _shuffled(schema: Any, rnd: random.Random) -> Any:
    """``schema`` with its keywords (and those of its subschemas) in an order ``rnd`` draws: the
    order jsonschema reports errors in, which decides between equally good ones."""
    if not isinstance(schema, dict):
        return schema
    keys = list(schema)
    rnd.shuffle(keys)
    out: dict[str, Any] = {}
    for k in keys:
        value = schema[k]
        if k == "properties":
            out[k] = {n: _shuffled(v, rnd) for n, v in value.items()}
        else:
            out[k] = _shuffled(value, rnd) if k in ("items", "additionalProperties") else value
    return out


@settings(max_examples=300, deadline=None)
@given(
    schema=simple_schema,
    rnd=st.randoms(use_true_random=False),
    value=any_value | odd_value | st.dictionaries(
        st.sampled_from(["q", "limit", "filters", "field", "x"]), any_value | odd_value,
        max_size=4,
    ),
)  # fmt: skip
def test_a_simple_schema_is_described_as_jsonschema_describes_it(
    schema: Any, rnd: random.Random, value: Any
) -> None:
    """Path, problem and count of a failing call, found without jsonschema for a simple
    schema: what jsonschema's best match says (the same schema with a keyword that changes
    nothing, ``minProperties: 0``, has no fast test, so jsonschema validates it)."""
    from toolscore.hardrules.schemas import ToolSchemas, subset_problem

    schema = _shuffled(schema, rnd)
    if schema is True:
        assert subset_problem(schema, value) is None
        return
    args = {} if value is None else value  # as problem() takes a call without arguments
    slow = ToolSchemas({"t": {**schema, "minProperties": 0}})
    try:
        expected = slow.problem("t", args)
    except TypeError:  # paths that cannot be ordered: subset_problem raises too
        with pytest.raises(TypeError):
            subset_problem(schema, args)
        return
    assert subset_problem(schema, args) == expected


def test_a_simple_schema_needs_no_jsonschema() -> None:
    """Describing a failing call against a simple schema does not import jsonschema (a
    tenth of a second); in a fresh interpreter, since the tests import it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from toolscore.hardrules.schemas import ToolSchemas\n"
        "s = ToolSchemas({'t': {'type': 'object', 'properties': {'q': {'type': 'string'}},"
        " 'required': ['q'], 'additionalProperties': False}})\n"
        "print(s.problem('t', {'q': 1, 'x': 2}))\n"
        "print(s.problem('t', {}))\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        "('', \"unexpected argument 'x'\", 2)",
        "('', \"'q' is a required property\", 1)",
        "False",
    ]


def test_the_column_test_judges_names_and_types_as_jsonschema_does() -> None:
    from jsonschema import Draft202012Validator

    from toolscore.hardrules.schemas import column_test

    schema = {
        "type": "object",
        "properties": {
            "a b": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"},
            "z": {"type": "null"}, "o": {"type": "object"}, "l": {"type": "array"},
        },
        "required": ["a b"],
        "additionalProperties": False,
    }  # fmt: skip
    test = column_test(schema)
    assert test is not None
    ok = {"a b": "x"}
    valid = [ok, {**ok, "n": 2, "i": 3, "z": None, "o": {}, "l": []}]
    assert all(map(Draft202012Validator(schema).is_valid, valid)) and test(valid)
    assert not test([{"n": 2}])  # a required name missing
    assert not test([{**ok, "extra": 1}])
    assert not test([{**ok, "n": True}])
    assert not test([{**ok, "i": 1.0}])  # valid, but for the per-call test to say
    assert not test([{**ok, "z": 0}])
    assert not test([{**ok, "o": MappingProxyType({})}])
    assert not test([{**ok, "l": ()}])
    assert not test([{**ok, 1: 2}])
    # a required name that is not a property, where other names are allowed
    open_schema = {**schema, "required": ["a b", "gone"], "additionalProperties": True}
    open_test = column_test(open_schema)
    assert open_test is not None
    assert open_test([{"a b": "x", "gone": 1}]) and not open_test([ok])


def test_a_required_name_that_no_property_allows_fails_every_column() -> None:
    """Required, but not a property, with no other property allowed: no call can be valid
    (found by the hypothesis test of Python values: the Struct took the name as a field)."""
    from toolscore.hardrules.schemas import ToolSchemas, column_test

    schema = {"type": "object", "properties": {}, "required": ["limit"],
              "additionalProperties": False}  # fmt: skip
    for json_values in (False, True):
        test = column_test(schema, json_values=json_values)
        assert test is not None and not test([{"limit": None}]) and not test([{}])
    problem = ToolSchemas({"t": schema}).problem("t", {"limit": None})
    assert problem == ("", "unexpected argument 'limit'", 1)
