"""Plain Python tests for simple schemas (an object of typed properties, some required,
perhaps no others allowed): :func:`fast_test` for one call's arguments and
:func:`column_test` for a batch's calls to a tool, each with ``jsonschema``'s answer (see
:mod:`toolscore.hardrules.schemas`)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from itertools import repeat
from typing import Any

from msgspec import UNSET, UnsetType, ValidationError, convert, defstruct

Test = Callable[[Any], bool]
_ANNOTATIONS: dict[str, type | tuple[type, ...]] = {
    "description": str, "title": str, "$comment": str, "default": object, "examples": list,
    "deprecated": bool, "readOnly": bool, "writeOnly": bool,
}  # fmt: skip
"""Keywords that do not change what is valid, and the type the meta-schema wants of each."""


def _is_integer(v: Any) -> bool:
    if v.__class__ is int:
        return True
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


_TYPE_TESTS: dict[str, Test] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _always(value: Any) -> bool:
    return True


def fast_test(schema: Any) -> Test | None:
    """A plain Python test with ``jsonschema``'s answer for a simple schema (``type``;
    for an object ``properties``, ``required`` and ``additionalProperties``; for an array
    ``items``; annotations such as ``description``), or None for any other schema."""
    if schema is True:
        return _always
    if not isinstance(schema, dict):
        return None
    keys = set(schema)
    for key in keys & _ANNOTATIONS.keys():
        if not isinstance(schema[key], _ANNOTATIONS[key]):
            return None  # not a valid schema: jsonschema says why
    keys -= _ANNOTATIONS.keys()
    kind = schema.get("type")
    if kind is None:
        return _always if not keys else None
    if isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        if not keys <= {"type"} or any(k not in _TYPE_TESTS for k in kind):
            return None
        if len(set(kind)) != len(kind):
            return None
        tests = [_TYPE_TESTS[k] for k in kind]
        return lambda v: any(t(v) for t in tests)
    if not isinstance(kind, str) or kind not in _TYPE_TESTS:
        return None
    type_test = _TYPE_TESTS[kind]
    if kind == "array":
        if not keys <= {"type", "items"}:
            return None
        if "items" not in schema:
            return type_test
        item = fast_test(schema["items"])
        if item is None:
            return None
        return lambda v: isinstance(v, list) and all(map(item, v))
    if kind != "object":
        return type_test if keys <= {"type"} else None
    return _object_test(schema, keys)


def _object_test(schema: dict[str, Any], keys: set[str]) -> Test | None:
    if not keys <= {"type", "properties", "required", "additionalProperties"}:
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, dict) or not isinstance(required, list):
        return None
    if not all(isinstance(r, str) for r in required) or len(set(required)) != len(required):
        return None
    tests: dict[str, Test] = {}
    for name, sub in props.items():
        prop_test = fast_test(sub)
        if prop_test is None:
            return None
        tests[name] = prop_test
    if extra is True:
        extra_test: Test | None = None
    elif extra is False:
        extra_test = None
    else:
        extra_test = fast_test(extra)
        if extra_test is None:
            return None
    closed = extra is False
    names = frozenset(props)
    needed = tuple(dict.fromkeys(required))

    def test(v: Any) -> bool:
        if not isinstance(v, dict):
            return False
        if closed and not v.keys() <= names:
            return False
        for name in needed:
            if name not in v:
                return False
        for name, value in v.items():
            check = tests.get(name)
            if check is not None:
                if not check(value):
                    return False
            elif closed:
                return False
            elif extra_test is not None and not extra_test(value):
                return False
        return True

    if closed and not names:
        return lambda v: isinstance(v, dict) and not v and not needed
    return test


ColumnTest = Callable[[list[Any]], bool]
_MISSING = object()
_EXACT_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset({str}), "integer": frozenset({int}), "number": frozenset({int, float}),
    "boolean": frozenset({bool}), "null": frozenset({type(None)}),
    "array": frozenset({list}), "object": frozenset({dict}),
}  # fmt: skip
"""The exact types of decoded JSON that surely have each type (a float with an integral
value is an integer too, a subclass of str a string: those go to the per-call test)."""


_STRUCT_TYPES: dict[str, Any] = {
    "string": str, "integer": int, "number": float, "boolean": bool, "null": None,
}  # fmt: skip
"""The property types msgspec's ``convert`` accepts exactly when jsonschema's type does, or
less: a bool is not an integer nor a number, a float is not an integer (an integral one goes
to the per-call test), an int is a number. Not ``object`` nor ``array``: msgspec takes any
mapping for a dict and a tuple for a list, which jsonschema does not; those are tested by
their exact types (:data:`_EXACT_TYPES`)."""

_JSON_STRUCT_TYPES: dict[str, Any] = {**_STRUCT_TYPES, "array": list, "object": dict}
""":data:`_STRUCT_TYPES` for values a JSON decoder made, where every mapping is a dict and
every sequence a list: ``object`` and ``array`` too."""


def _none_valid(col: list[Any]) -> bool:
    return not col


def column_test(schema: Any, *, json_values: bool = False) -> ColumnTest | None:
    """For a simple object schema (see :func:`fast_test`), a test of a whole column of
    calls' arguments at once, in C: True only when every one is valid. False says nothing
    about which: the calls are then tested one by one. None for a schema that is not a
    simple object schema.

    The argument names (required, allowed) and the scalar-typed properties are checked by
    converting the column to a msgspec ``Struct`` made for the schema (one C call); the
    ``object`` and ``array`` properties by their exact types with ``map``; any other
    property by its :func:`fast_test`.

    Args:
        schema: the tool's schema.
        json_values: the columns tested hold only what a JSON decoder makes (dicts with
            string keys, lists, strings, numbers, booleans, None; no tuples, no other
            mappings), as a trace's do. The ``object`` and ``array`` properties are then
            typed in the ``Struct`` too, and the conversion is the whole test but for the
            other properties.
    """
    if fast_test(schema) is None or not isinstance(schema, dict):
        return None
    if schema.get("type") != "object":
        return None
    props: dict[str, Any] = schema.get("properties", {})
    needed = frozenset(schema.get("required", []))
    extra = schema.get("additionalProperties", True)
    if extra not in (True, False):
        return None
    if extra is False and not needed <= props.keys():
        # a required name that is no property, and no other allowed: no call is valid (the
        # Struct would take the name as a field)
        return _none_valid
    struct_types = _JSON_STRUCT_TYPES if json_values else _STRUCT_TYPES
    fields: list[tuple[Any, ...]] = []
    rename: dict[str, str] = {}
    exact: list[tuple[str, frozenset[type]]] = []
    others: list[tuple[str, Test]] = []
    for k, (name, sub) in enumerate(props.items()):
        kind = sub.get("type") if isinstance(sub, dict) else None
        typed = (
            isinstance(sub, dict)
            and isinstance(kind, str)
            and set(sub) - _ANNOTATIONS.keys() == {"type"}
        )
        typ: Any = Any
        if typed and kind in struct_types:
            typ = struct_types[kind]
        elif typed:  # object: the type of the missing marker
            exact.append((name, _EXACT_TYPES[str(kind)] | {object}))
        else:
            test = fast_test(sub)
            assert test is not None  # the whole schema has a fast test
            others.append((name, test))
        rename[f"p{k}"] = name  # any name, whatever Python allows in an identifier
        if name in needed:
            fields.append((f"p{k}", typ))
        else:
            fields.append((f"p{k}", Any if typ is Any else typ | UnsetType, UNSET))
    for k, name in enumerate(sorted(needed - props.keys())):
        rename[f"r{k}"] = name
        fields.append((f"r{k}", Any))
    shape = defstruct(
        "Arguments", fields, kw_only=True, forbid_unknown_fields=extra is False,
        rename=rename, gc=False,
    )  # fmt: skip
    # the column as the one field of a struct: msgspec keeps what it learnt of a Struct
    # type, and would read a ``list[shape]`` afresh at every call (a microsecond)
    target = defstruct("Column", [("calls", list[shape])], gc=False)  # type: ignore[valid-type]

    def column(col: list[Any]) -> bool:
        if not json_values and list(map(type, col)).count(dict) != len(col):
            return False
        try:  # names (string keys only), required ones, and the scalar types
            convert({"calls": col}, target)
        except ValidationError:
            return False
        for name, types in exact:
            if not types.issuperset(map(type, map(dict.get, col, repeat(name), repeat(_MISSING)))):
                return False
        for name, test in others:
            values = map(dict.get, col, repeat(name), repeat(_MISSING))
            if not all(test(v) for v in values if v is not _MISSING):
                return False
        return True

    return column
