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

Where things are: the fast and column tests in ``_schema_tests``, the description of a
failure (with or without ``jsonschema``) in ``_schema_problems``; reading definitions and
:class:`ToolSchemas` here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import RuleFileError
from ..jsonfile import read_json
from ._schema_problems import SchemaProblem, _problem, error_path, subset_problem
from ._schema_refs import SchemaRefs, validator_class
from ._schema_tests import Test, column_test, fast_test

__all__ = [
    "SchemaProblem",
    "ToolSchemas",
    "error_path",
    "fast_test",
    "schema_file",
    "subset_problem",
    "tool_definitions",
]

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
            # jsonschema takes a tenth of a second to import: only for a call the fast test fails
            from jsonschema.validators import Draft202012Validator

            self._validator = Draft202012Validator(self.schema)
        return self._validator


def _rebuild(groups: list[tuple[SchemaRefs, dict[str, Any]]]) -> ToolSchemas:
    """A pickled :class:`ToolSchemas` compiled again: each group where it was read."""
    out = ToolSchemas({})
    for where, schemas in groups:
        out = out.combined(ToolSchemas(schemas, where.path, where.allowed))
    return out


def schema_file(rule_file: str, named: str | os.PathLike[str]) -> str:
    """The schema file a rule file's ``schemas`` names: relative to the rule file's folder."""
    base = os.path.dirname(rule_file) if rule_file and not rule_file.startswith("<") else ""
    return os.path.join(base, os.fspath(named))


class ToolSchemas:
    """Compiled argument validators by tool name (see the module docstring).

    Args:
        schemas: ``{tool: JSON Schema}``.
        path: the file they were read from (a rule or schema file), for error messages and
            to resolve their ``$ref`` (see :mod:`~toolscore.hardrules._schema_refs`).
        refs: the rule file's ``schema_refs``: more places a ``$ref`` may lead (absolute
            folders and URL prefixes).

    Raises:
        RuleFileError: a schema that is not a valid JSON Schema, a ``$ref`` refused or
            failing, a ``pattern`` RE2 cannot run.
    """

    def __init__(
        self, schemas: Mapping[str, Any], path: str = "<rules>", refs: Sequence[str] = ()
    ) -> None:
        self.schemas = dict(schemas)
        self.path = path
        self._compiled: dict[str, _Compiled] = {}
        self._refs: dict[str, SchemaRefs] = {}
        where = SchemaRefs(path, refs)
        for name, schema in self.schemas.items():
            self._refs[name] = where
            fast = fast_test(schema)
            if fast is not None:
                # a simple schema of the default draft, well formed (fast_test checked every
                # keyword it has): jsonschema is loaded only for a call that fails it
                self._compiled[name] = _Compiled(schema, fast)
                continue
            # jsonschema (a tenth of a second to import) only for a schema fast_test cannot do
            from jsonschema.exceptions import SchemaError
            from jsonschema.validators import Draft202012Validator, validator_for

            cls = validator_class(validator_for(schema, default=Draft202012Validator))
            try:
                cls.check_schema(schema)
            except SchemaError as exc:
                raise RuleFileError(
                    path,
                    f"the schema of tool {name!r} is not a valid JSON Schema at "
                    f"'{error_path(exc.absolute_path) or '(root)'}': {exc.message}",
                ) from exc
            registry = where.registry()
            where.check(name, schema, registry)
            self._compiled[name] = _Compiled(schema, None, cls(schema, registry=registry))
        self.tools = frozenset(self._compiled)

    def __reduce__(self) -> tuple[Any, ...]:
        groups: dict[int, tuple[SchemaRefs, dict[str, Any]]] = {}
        for name, schema in self.schemas.items():
            where = self._refs[name]
            groups.setdefault(id(where), (where, {}))[1][name] = schema
        return (_rebuild, (list(groups.values()),))

    @classmethod
    def from_definitions(
        cls, data: Any, path: str = "<rules>", refs: Sequence[str] = ()
    ) -> ToolSchemas:
        """From any of the definition shapes in the module docstring; a string is a JSON file
        of them, relative to the rule file's folder.

        Raises:
            RuleFileError: an unreadable file, an unknown shape, a tool defined twice, or an
                invalid schema.
        """
        if isinstance(data, ToolSchemas):
            return data
        if isinstance(data, (str, os.PathLike)):
            name = schema_file(path, data)
            definitions = read_json(name, "schema file", RuleFileError)[0]
            return cls.from_definitions(definitions, name, refs)
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
        return cls(schemas, path, refs)

    def __len__(self) -> int:
        return len(self._compiled)

    def combined(self, other: ToolSchemas) -> ToolSchemas:
        """Both sets (each as compiled, its references where it was read); ``other`` wins
        for a tool both define."""
        out = ToolSchemas({})
        out.schemas = {**self.schemas, **other.schemas}
        out._compiled = {**self._compiled, **other._compiled}
        out._refs = {**self._refs, **other._refs}
        out.tools = frozenset(out._compiled)
        return out

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

    def _validate(self, validator: Any, args: Any) -> SchemaProblem | None:
        # jsonschema (a tenth of a second to import) only once a call has failed its schema
        from jsonschema.exceptions import best_match
        from referencing.exceptions import Unresolvable

        try:
            errors = list(validator.iter_errors(args))
        except Unresolvable as exc:  # a reference only a call's arguments reach
            raise RuleFileError(self.path, f"a schema's $ref cannot be resolved: {exc}") from None
        if not errors:
            return None
        best = best_match(errors)
        return error_path(best.absolute_path), _problem(best), len(errors)
