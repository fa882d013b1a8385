"""What a call whose arguments fail their schema is told: the failing argument's path and
keyword, from the schema's side only (never the argument's value), as ``jsonschema`` reports
it, and the same answer without ``jsonschema`` for a schema :func:`fast_test` compiles
(:func:`subset_problem`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._schema_tests import _TYPE_TESTS

SchemaProblem = tuple[str, str, int]
"""``(path, problem, error count)`` of a call whose arguments fail their schema."""


def error_path(parts: Sequence[Any]) -> str:
    """A JSON path in the credential scan's form: ``a.b[0].c`` (``""`` for the root)."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_JSON_TYPES = (
    (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
    (list, "array"), (tuple, "array"), (dict, "object"), (type(None), "null"),
)  # fmt: skip


def _json_type(value: Any) -> str:
    for cls, name in _JSON_TYPES:
        if isinstance(value, cls):
            return name
    return type(value).__name__


def _problem(error: Any) -> str:
    """What failed, from the schema's side only: never the argument's value."""
    return _describe(
        error.validator, error.validator_value, error.instance, error.schema, error.message
    )


def _describe(keyword: str, expected: Any, instance: Any, schema: Any, message: str) -> str:
    """:func:`_problem` of an error of ``keyword`` (its value ``expected``) on ``instance``,
    in ``schema``, whose message is ``message``."""
    if keyword == "required":
        return str(message)  # "'q' is a required property": names from the schema
    if keyword == "type":
        return f"expected {_short(expected)}, got {_json_type(instance)}"
    if keyword == "additionalProperties":
        allowed = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
        extra = sorted(
            str(k) for k in (instance if isinstance(instance, Mapping) else {})
            if k not in allowed
        )  # fmt: skip
        return f"unexpected argument {_short(extra[0]) if extra else ''}".rstrip()
    if keyword in ("enum", "const"):
        return f"not {'one of ' if keyword == 'enum' else ''}{_short(expected)}"
    return f"fails {keyword} {_short(expected)}"


_Error = tuple[tuple[Any, ...], str, Any, Any, Any, str]
"""An error as ``jsonschema`` makes it: ``(path, keyword, keyword's value, instance, schema,
message)``."""


def _subset_errors(schema: Any, instance: Any, path: tuple[Any, ...], out: list[_Error]) -> None:
    """Append the errors ``jsonschema``'s ``iter_errors`` yields for ``instance`` against a
    schema :func:`fast_test` compiles, in the same order (the schema's keywords in its
    order; properties in theirs; array items in order)."""
    if schema is True:
        return
    for keyword, value in schema.items():
        if keyword == "type":
            kinds = [value] if isinstance(value, str) else value
            if not any(_TYPE_TESTS[k](instance) for k in kinds):
                out.append((path, keyword, value, instance, schema, ""))
        elif keyword == "items":
            if isinstance(instance, list):
                for index, item in enumerate(instance):
                    _subset_errors(value, item, (*path, index), out)
        elif not isinstance(instance, dict):
            continue  # the object keywords pass anything that is not an object
        elif keyword == "properties":
            for name, sub in value.items():
                if name in instance:
                    _subset_errors(sub, instance[name], (*path, name), out)
        elif keyword == "required":
            for name in value:
                if name not in instance:
                    message = f"{name!r} is a required property"
                    out.append((path, keyword, value, instance, schema, message))
        elif keyword == "additionalProperties":
            props = schema.get("properties", {})
            extras = [k for k in instance if k not in props]
            if isinstance(value, dict):
                for name in extras:
                    _subset_errors(value, instance[name], (*path, name), out)
            elif value is False and extras:
                out.append((path, keyword, value, instance, schema, ""))


def _relevance(error: _Error) -> tuple[int, tuple[Any, ...]]:
    """``jsonschema.exceptions.relevance`` of an error of :func:`_subset_errors`: the
    shallower, then the later path. (It also weighs weak and strong keywords, none of which
    is in this subset, and prefers an error whose instance lacks the type its schema
    declares: here two errors at one path come from one schema, where a failed ``type``
    leaves no other keyword anything to find.)"""
    return -len(error[0]), error[0]


def subset_problem(schema: Any, args: Any) -> SchemaProblem | None:
    """:meth:`ToolSchemas.problem` for a schema :func:`fast_test` compiles, without
    ``jsonschema`` (whose import alone takes a tenth of a second): the same errors, the same
    best match (``jsonschema.exceptions.best_match``) and the same count. A hypothesis test
    holds the two to the same answers.

    Raises:
        TypeError: two errors whose paths hold keys of different types at one place (an
            object with keys that are not all strings), which cannot be ordered.
    """
    errors: list[_Error] = []
    _subset_errors(schema, args, (), errors)
    if not errors:
        return None
    path, keyword, value, instance, where, message = max(errors, key=_relevance)
    return error_path(path), _describe(keyword, value, instance, where, message), len(errors)
