"""Tool schemas: the JSON Schema each tool declares for its arguments, and the check of a
call's arguments against it.

Tool definitions are read as the providers write them:

- OpenAI Chat Completions ``{"type": "function", "function": {"name", "parameters"}}`` and
  Responses ``{"type": "function", "name", "parameters"}``;
- Anthropic ``{"name", "input_schema"}``;
- MCP ``{"name", "inputSchema"}``, a ``tools/list`` result ``{"tools": [...]}`` or the whole
  JSON-RPC response ``{"result": {"tools": [...]}}``;
- Gemini ``{"functionDeclarations": [{"name", "parameters"}]}``;
- or a plain object mapping each tool name to its schema.

Each schema is checked once (``check_schema``) and compiled into a ``jsonschema`` validator of
the draft it declares (2020-12 when it declares none). A call whose arguments fail is reported
with the failing argument's path (``filters[0].field``, the same form as the credential scan's
paths) and the keyword that failed; the message never quotes the argument's value.
Validation results are remembered by the arguments' canonical text (up to 4,096 per tool), so
identical calls are validated once.

Most tool schemas are simple: an object of typed properties, some required, perhaps no
others allowed. Such a schema is also compiled into a plain Python test (:func:`fast_test`)
that gives the same answer as ``jsonschema``'s ``is_valid`` in a microsecond or two
(``jsonschema`` takes 50 to 100), and a column test that checks a batch's calls to the tool
at once (:func:`column_test`). Arguments that fail them are described by
:func:`subset_problem`: the errors ``jsonschema`` would find and the one it would pick, so
that ``jsonschema`` (a tenth of a second to import) is never loaded for such a schema. A
schema with any other keyword is validated by ``jsonschema`` alone. Hypothesis tests hold
each shortcut to ``jsonschema``'s answers.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import repeat
from typing import Any

from msgspec import UNSET, UnsetType, ValidationError, convert, defstruct

from ..errors import RuleFileError

__all__ = [
    "SchemaProblem",
    "ToolSchemas",
    "error_path",
    "fast_test",
    "schema_file",
    "subset_problem",
    "tool_definitions",
]

SchemaProblem = tuple[str, str, int]
"""``(path, problem, error count)`` of a call whose arguments fail their schema."""

_CACHE = 4096
_DEF_KEYS = ("parameters", "input_schema", "inputSchema")


def _definition(item: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    if isinstance(item.get("function"), Mapping):  # OpenAI Chat Completions
        item = item["function"]
    declarations = item.get("functionDeclarations", item.get("function_declarations"))
    if isinstance(declarations, list):  # Gemini
        for decl in declarations:
            if isinstance(decl, Mapping):
                yield from _definition(decl)
        return
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a tool definition without a 'name'")
    for key in _DEF_KEYS:
        if key in item:
            yield name, item[key]
            return
    yield name, {"type": "object"}  # a tool declared without parameters takes any object


def tool_definitions(data: Any) -> list[tuple[str, Any]]:
    """``(tool name, argument schema)`` pairs from any of the shapes in the module docstring.

    Raises:
        ValueError: a shape that is none of them.
    """
    if isinstance(data, Mapping):
        result = data.get("result")
        if isinstance(result, Mapping) and isinstance(result.get("tools"), list):
            data = result["tools"]  # a JSON-RPC tools/list response
        elif isinstance(data.get("tools"), list):
            data = data["tools"]  # a tools/list result, or {"tools": [...]} of a request
        elif "functionDeclarations" in data or "function_declarations" in data:
            data = [data]
        elif "name" in data and any(k in data for k in (*_DEF_KEYS, "function")):
            data = [data]
        else:
            out = []
            for name, schema in data.items():
                if not isinstance(schema, (Mapping, bool)):
                    raise ValueError(f"the schema of {name!r} must be an object")
                out.append((str(name), schema))
            return out
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence):
        raise ValueError(f"expected tool definitions, got a JSON {type(data).__name__}")
    pairs: list[tuple[str, Any]] = []
    for item in data:
        if not isinstance(item, Mapping):
            raise ValueError(f"a tool definition must be an object, got {type(item).__name__}")
        if isinstance(item.get("tools"), list):  # [{"tools": [...]}], as some SDKs write
            pairs.extend(tool_definitions(item))
            continue
        pairs.extend(_definition(item))
    return pairs


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


class _Compiled:
    __slots__ = ("_validator", "cache", "column", "column_json", "fast", "schema")

    def __init__(self, schema: Any, fast: Test | None, validator: Any = None) -> None:
        self.schema = schema
        self.fast = fast
        self.column = column_test(schema) if fast is not None else None
        self.column_json = column_test(schema, json_values=True) if fast is not None else None
        self._validator = validator
        self.cache: dict[bytes, SchemaProblem | None] = {}

    @property
    def validator(self) -> Any:
        """The ``jsonschema`` validator, made when first needed."""
        if self._validator is None:
            from jsonschema.validators import Draft202012Validator

            self._validator = Draft202012Validator(self.schema)
        return self._validator


def schema_file(rule_file: str, named: str | os.PathLike[str]) -> str:
    """The schema file a rule file's ``schemas`` names: relative to the rule file's folder."""
    base = os.path.dirname(rule_file) if rule_file and not rule_file.startswith("<") else ""
    return os.path.join(base, os.fspath(named))


class ToolSchemas:
    """Compiled argument validators by tool name (see the module docstring).

    Args:
        schemas: ``{tool: JSON Schema}``.
        path: the rule file, for error messages.

    Raises:
        RuleFileError: a schema that is not a valid JSON Schema.
    """

    def __init__(self, schemas: Mapping[str, Any], path: str = "<rules>") -> None:
        self.schemas = dict(schemas)
        self._compiled: dict[str, _Compiled] = {}
        for name, schema in self.schemas.items():
            fast = fast_test(schema)
            if fast is not None:
                # a simple schema of the default draft, well formed (fast_test checked every
                # keyword it has): jsonschema is loaded only for a call that fails it
                self._compiled[name] = _Compiled(schema, fast)
                continue
            from jsonschema.exceptions import SchemaError
            from jsonschema.validators import Draft202012Validator, validator_for

            cls = validator_for(schema, default=Draft202012Validator)
            try:
                cls.check_schema(schema)
            except SchemaError as exc:
                raise RuleFileError(
                    path,
                    f"the schema of tool {name!r} is not a valid JSON Schema at "
                    f"'{error_path(exc.absolute_path) or '(root)'}': {exc.message}",
                ) from exc
            self._compiled[name] = _Compiled(schema, None, cls(schema))
        self.tools = frozenset(self._compiled)

    @classmethod
    def from_definitions(cls, data: Any, path: str = "<rules>") -> ToolSchemas:
        """From any of the definition shapes in the module docstring; a string is a JSON file
        of them, relative to the rule file's folder.

        Raises:
            RuleFileError: an unreadable file, an unknown shape, a tool defined twice, or an
                invalid schema.
        """
        if isinstance(data, ToolSchemas):
            return data
        if isinstance(data, (str, os.PathLike)):
            from ..jsonfile import read_json

            name = schema_file(path, data)
            return cls.from_definitions(read_json(name, "schema file", RuleFileError)[0], name)
        try:
            pairs = tool_definitions(data)
        except ValueError as exc:
            raise RuleFileError(path, f"schemas: {exc}") from None
        schemas: dict[str, Any] = {}
        for name, schema in pairs:
            if name in schemas:
                raise RuleFileError(path, f"schemas: the tool {name!r} is defined twice")
            if not isinstance(schema, (Mapping, bool)):
                raise RuleFileError(path, f"schemas: the schema of {name!r} must be an object")
            schemas[name] = schema
        return cls(schemas, path)

    def __len__(self) -> int:
        return len(self._compiled)

    def combined(self, other: ToolSchemas) -> ToolSchemas:
        """Both sets; ``other`` wins for a tool both define."""
        return ToolSchemas({**self.schemas, **other.schemas})

    def all_valid(self, tool: str, column: list[Any], *, json_values: bool = False) -> bool:
        """True when every call's arguments in ``column`` (calls to ``tool``) surely match
        its schema, tested a column at a time; False: test them one by one
        (:meth:`problem`). ``json_values``: the arguments were decoded from JSON (see
        :func:`column_test`)."""
        compiled = self._compiled.get(tool)
        if compiled is None:
            return True
        test = compiled.column_json if json_values else compiled.column
        return test is not None and test(column)

    def problem(self, tool: str, args: Any, key: bytes | None = None) -> SchemaProblem | None:
        """The first problem (by ``jsonschema.exceptions.best_match``) of ``args`` against
        ``tool``'s schema, or None when they are valid or the tool declares no schema.

        Args:
            tool: the tool called.
            args: the call's arguments (None is checked as ``{}``).
            key: the arguments' canonical text, to remember the answer by.
        """
        compiled = self._compiled.get(tool)
        if compiled is None:
            return None
        value = {} if args is None else args
        fast = compiled.fast
        if fast is not None and fast(value):
            return None
        cache = compiled.cache
        if key is not None:
            hit = cache.get(key, cache)
            if hit is not cache:
                return hit  # type: ignore[return-value]
        answer = self._answer(compiled, value)
        if key is not None:
            if len(cache) >= _CACHE:
                cache.clear()
            cache[key] = answer
        return answer

    def _answer(self, compiled: _Compiled, args: Any) -> SchemaProblem | None:
        if compiled.fast is not None:
            try:
                return subset_problem(compiled.schema, args)
            except TypeError:  # keys of several types side by side: jsonschema says
                pass
        return self._validate(compiled.validator, args)

    @staticmethod
    def _validate(validator: Any, args: Any) -> SchemaProblem | None:
        from jsonschema.exceptions import best_match

        errors = list(validator.iter_errors(args))
        if not errors:
            return None
        best = best_match(errors)
        return error_path(best.absolute_path), _problem(best), len(errors)
