"""What a tool schema may reach and run: where its ``$ref`` may lead, and its ``pattern``
and ``patternProperties`` on RE2.

``$ref``: a reference is resolved only inside the schema file and the JSON files beside it
(the same folder, after links are followed: no ``..``, no absolute path elsewhere, no
``file://`` outside it); ``http://`` and ``https://`` are never fetched. A rule file widens
that with ``"schema_refs"``: folders (relative to the rule file) and URL prefixes
(``https://schemas.example.com/``), fetched with a :data:`FETCH_TIMEOUT` second timeout and
at most :data:`MAX_SCHEMA_BYTES` bytes. Every reference is resolved when the schema is
compiled (:meth:`SchemaRefs.check`), so one that is refused or fails is a
:class:`~toolscore.errors.RuleFileError` naming the file and the reference before any trace
is read.

``pattern``: JSON Schema patterns run on RE2 with Python's meaning
(:class:`~toolscore.patterns.UserPattern`, the engine of ``$regex`` rules), in linear time;
one that needs backtracking is refused when the schema is compiled (naming the file, the
tool and the pattern). A match that stays undecided (the rare text RE2 cannot answer for
exactly, run on Python's ``re`` under its time bound, and out of time) fails the schema:
never a silent pass.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import RuleFileError
from ..jsonfile import check_depth, loads
from ..patterns import PatternError, PatternTimeout, UserPattern

__all__ = ["FETCH_TIMEOUT", "MAX_SCHEMA_BYTES", "SchemaRefs", "validator_class"]

FETCH_TIMEOUT = 10.0
"""Seconds an allowed ``http(s)://`` reference may take to fetch."""
MAX_SCHEMA_BYTES = 16 << 20
"""Bytes a referenced schema may have."""
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
"""Keys whose values are data, not schemas: never read for ``$ref`` or ``pattern``."""


class RefRefused(Exception):
    """A reference :class:`SchemaRefs` does not follow, and why."""


class SchemaRefs:
    """Where a schema's references may lead (see the module docstring).

    Args:
        path: the file the schema was read from (a rule file or a schema file), or a name
            in ``<...>`` for a schema given in Python (then the current folder).
        allowed: ``"schema_refs"``: more folders (relative to ``path``'s) and URL prefixes.
    """

    def __init__(self, path: str, allowed: Sequence[str] = ()) -> None:
        self.path = path
        folder = os.path.dirname(path) if path and not path.startswith("<") else ""
        self.folder = os.path.realpath(folder or ".")
        self.allowed = tuple(allowed)
        self._folders = [self.folder]
        self._urls: list[str] = []
        for item in self.allowed:
            if "://" in item and not item.startswith("file://"):
                self._urls.append(item)
            else:
                where = unquote(urlsplit(item).path) if item.startswith("file://") else item
                self._folders.append(os.path.realpath(os.path.join(self.folder, where)))
        self._read: dict[str, Any] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (SchemaRefs, (self.path, self.allowed))

    def registry(self) -> Any:
        """A ``referencing.Registry`` that retrieves through :meth:`retrieve`."""
        # jsonschema and referencing (a tenth of a second to import): only for tool schemas
        from referencing import Registry

        return Registry(retrieve=self.retrieve)  # type: ignore[call-arg]

    def retrieve(self, uri: str) -> Any:
        """The resource at ``uri``, where it may be read.

        Raises:
            RefRefused: outside the allowed places, unreadable, too large or not JSON.
        """
        # jsonschema and referencing (a tenth of a second to import): only for tool schemas
        from referencing.jsonschema import DRAFT202012

        if uri not in self._read:
            self._read[uri] = self._contents(uri)
        return DRAFT202012.create_resource(self._read[uri])

    def _contents(self, uri: str) -> Any:
        parts = urlsplit(uri)
        if parts.scheme in ("", "file"):
            name = os.path.join(self.folder, unquote(parts.path))
            real = os.path.realpath(name)
            beside = os.path.dirname(real) == self.folder
            if not beside and not any(real.startswith(f + os.sep) for f in self._folders[1:]):
                raise RefRefused("is outside the schema file's folder (see schema_refs)")
            try:
                with open(real, "rb") as f:
                    data = f.read(MAX_SCHEMA_BYTES + 1)
            except OSError as exc:
                raise RefRefused(f"cannot be read: {exc.strerror or exc}") from None
        elif parts.scheme in ("http", "https") and any(uri.startswith(u) for u in self._urls):
            import urllib.request  # ~15 ms (http.client, email): only for an allowed URL

            try:
                with urllib.request.urlopen(uri, timeout=FETCH_TIMEOUT) as response:
                    data = response.read(MAX_SCHEMA_BYTES + 1)
            except (OSError, ValueError) as exc:
                raise RefRefused(f"cannot be fetched: {exc}") from None
        else:
            raise RefRefused(f"is not fetched ({parts.scheme}://: see schema_refs)")
        if len(data) > MAX_SCHEMA_BYTES:
            raise RefRefused(f"is larger than {MAX_SCHEMA_BYTES:,} bytes")
        try:
            text = data.decode("utf-8-sig")
            check_depth(text, uri, RuleFileError)
            return loads(text)
        except (ValueError, RuleFileError) as exc:
            raise RefRefused(f"is not a JSON schema: {exc}") from None

    def check(self, tool: str, schema: Any, registry: Any) -> None:
        """Resolve every reference of ``schema`` (and of what they lead to) and compile every
        pattern, now.

        Raises:
            RuleFileError: a reference refused or failing, or a pattern RE2 cannot run,
                naming the file, the tool and the reference or pattern.
        """
        # jsonschema and referencing (a tenth of a second to import): only for tool schemas
        from referencing.exceptions import Unresolvable
        from referencing.jsonschema import DRAFT202012

        seen: set[int] = set()
        stack = [(schema, registry.resolver())]
        while stack:
            node, resolver = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for sub, ref, pattern in _walk(node):
                if pattern is not None:
                    _compiled(pattern, self.path, tool)
                    continue
                scoped = resolver
                if isinstance(sub, Mapping) and isinstance(sub.get("$id"), str) and sub is not node:
                    scoped = resolver.in_subresource(DRAFT202012.create_resource(sub))
                try:
                    resolved = scoped.lookup(ref)
                except Unresolvable as exc:
                    why = _refused(exc) or f"cannot be resolved ({type(exc).__name__})"
                    raise RuleFileError(
                        self.path, f"the schema of tool {tool!r}: $ref {ref!r} {why}"
                    ) from None
                stack.append((resolved.contents, resolved.resolver))


def _refused(exc: BaseException) -> str | None:
    """Why :meth:`SchemaRefs.retrieve` refused, found among ``exc``'s causes."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, RefRefused):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _walk(node: Any) -> Iterator[tuple[Any, str, str | None]]:
    """``(subschema, $ref, None)`` for each reference and ``(subschema, "", pattern)`` for
    each pattern in ``node``, data values (``enum``, ``const``...) left out."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                if key in _DATA_KEYS:
                    continue
                if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                    yield item, value, None
                elif key == "pattern" and isinstance(value, str):
                    yield item, "", value
                elif key == "patternProperties" and isinstance(value, Mapping):
                    for pattern in value:
                        yield item, "", str(pattern)
                    stack.extend(value.values())
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


@functools.lru_cache(maxsize=1024)
def _pattern(pattern: str) -> UserPattern:
    return UserPattern(pattern, allow_backtracking=False)


def _compiled(pattern: str, path: str, tool: str) -> UserPattern:
    try:
        return _pattern(pattern)
    except PatternError as exc:
        raise RuleFileError(
            path, f"the schema of tool {tool!r}: pattern {pattern!r}: {exc} (see docs/limits.md)"
        ) from None


def _found(pattern: str, text: str) -> bool | None:
    """Whether ``pattern`` is found in ``text``; None when that cannot be told (a pattern
    RE2 cannot run, or a match out of time)."""
    try:
        return _pattern(pattern).search(text)
    except (PatternError, PatternTimeout):
        return None


def _pattern_keyword(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    # jsonschema and referencing (a tenth of a second to import): only for tool schemas
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string"):
        found = _found(pattern, instance)
        if found is None:
            yield ValidationError(f"undecided whether it matches {pattern!r} (counted as not)")
        elif not found:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    # jsonschema and referencing (a tenth of a second to import): only for tool schemas
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            found = _found(pattern, key)
            if found is None:
                yield ValidationError(f"undecided whether a key matches {pattern!r}")
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


@functools.lru_cache(maxsize=16)
def validator_class(cls: Any) -> Any:
    """``cls`` (a ``jsonschema`` validator class) with ``pattern`` and ``patternProperties``
    on RE2."""
    # jsonschema and referencing (a tenth of a second to import): only for tool schemas
    from jsonschema.validators import extend

    keywords = {"pattern": _pattern_keyword, "patternProperties": _pattern_properties}
    return extend(cls, keywords)  # type: ignore[no-untyped-call]
