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
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import RuleFileError

__all__ = ["SchemaProblem", "ToolSchemas", "error_path", "tool_definitions"]

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
    keyword = error.validator
    expected = error.validator_value
    if keyword == "required":
        return str(error.message)  # "'q' is a required property": names from the schema
    if keyword == "type":
        return f"expected {_short(expected)}, got {_json_type(error.instance)}"
    if keyword == "additionalProperties":
        allowed = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
        extra = sorted(
            str(k) for k in (error.instance if isinstance(error.instance, Mapping) else {})
            if k not in allowed
        )  # fmt: skip
        return f"unexpected argument {_short(extra[0]) if extra else ''}".rstrip()
    if keyword in ("enum", "const"):
        return f"not {'one of ' if keyword == 'enum' else ''}{_short(expected)}"
    return f"fails {keyword} {_short(expected)}"


class _Compiled:
    __slots__ = ("cache", "validator")

    def __init__(self, validator: Any) -> None:
        self.validator = validator
        self.cache: dict[bytes, SchemaProblem | None] = {}


class ToolSchemas:
    """Compiled argument validators by tool name (see the module docstring).

    Args:
        schemas: ``{tool: JSON Schema}``.
        path: the rule file, for error messages.

    Raises:
        RuleFileError: a schema that is not a valid JSON Schema.
    """

    def __init__(self, schemas: Mapping[str, Any], path: str = "<rules>") -> None:
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import Draft202012Validator, validator_for

        self.schemas = dict(schemas)
        self._compiled: dict[str, _Compiled] = {}
        for name, schema in self.schemas.items():
            cls = validator_for(schema, default=Draft202012Validator)
            try:
                cls.check_schema(schema)
            except SchemaError as exc:
                raise RuleFileError(
                    path,
                    f"the schema of tool {name!r} is not a valid JSON Schema at "
                    f"'{error_path(exc.absolute_path) or '(root)'}': {exc.message}",
                ) from exc
            self._compiled[name] = _Compiled(cls(schema))
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
            from .spec import _read_json

            base = os.path.dirname(path) if path and not path.startswith("<") else ""
            name = os.path.join(base, os.fspath(data))
            return cls.from_definitions(_read_json(name, "schema file"), name)
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
        cache = compiled.cache
        if key is not None:
            hit = cache.get(key, cache)
            if hit is not cache:
                return hit  # type: ignore[return-value]
        answer = self._validate(compiled.validator, {} if args is None else args)
        if key is not None:
            if len(cache) >= _CACHE:
                cache.clear()
            cache[key] = answer
        return answer

    @staticmethod
    def _validate(validator: Any, args: Any) -> SchemaProblem | None:
        from jsonschema.exceptions import best_match

        errors = list(validator.iter_errors(args))
        if not errors:
            return None
        best = best_match(errors)
        return error_path(best.absolute_path), _problem(best), len(errors)
