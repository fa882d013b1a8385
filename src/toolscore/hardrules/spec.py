"""The rule file: forbidden calls plus the hard rules, validated once.

A rule file is either a plain JSON list of forbidden rules (as before) or an object::

    {
      "forbidden": [{"tool": "run_shell", "args": {"command": {"$regex": "rm -rf"}}}],
      "allow": ["search", "fetch", "send_email"],
      "order": [{"before": "login", "after": "transfer"}, ["lint", "test", "deploy"]],
      "counts": [{"tool": "deploy", "max": 1}, {"tool": "search", "min": 1, "max": 3}],
      "max_calls": 20,
      "schemas": [ ...OpenAI, Anthropic or MCP tool definitions... ],
      "data_flow": {"sinks": ["http_post"], "sources": [{"tool": "read_file",
                    "args": {"path": {"$regex": "\\\\.ssh/|\\\\.env$"}}}]},
      "match": ["strict", "superset"],
      "arguments": {"mode": "exact", "tools": {"search": "subset",
                    "fetch": {"args": {"headers": "ignore"}}}, "score": false},
      "free": ["get_*", "think"],
      "failures": {"remove": ["result.traceback"], "add": [{"id": "timeout",
                   "match": {"$regex": "timed out"}}]}
    }

Every key is optional; an unknown key is an error naming the known ones. Each hard rule has an
id (``order[0]``, ``counts[1]``, ``allow``, ``max_calls``, ``schema:TOOL``, ``data_flow[0]``,
``match:strict``), or the ``"id"`` the file gives it, which its findings carry. A gold file
that is an object may hold the same keys under ``"rules"`` (and ``"match"``/``"arguments"``/
``"free"`` at its top level); :func:`combine` joins the two.

Python takes the same shapes (``evaluate(..., rules={...})``), with matchers where JSON has
``$`` operators.

Where things are: reading, merging and loading rules here; the rules and :class:`RuleSet` in
``_rule_types``; each section of a rule object, validated, in ``_rule_sections``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..errors import RuleFileError
from ..failed import failure_rules
from ..jsonfile import read_json, with_position
from ._rule_sections import (
    _allow,
    _arguments,
    _counts,
    _data_flow,
    _forbidden_form,
    _match,
    _max_calls,
    _order,
    _short,
    _tools,
)
from ._rule_types import (
    ARG_MODES,
    MATCH_MODES,
    ArgMode,
    ArgumentModes,
    CountRule,
    DataFlowRule,
    MatchMode,
    OrderRule,
    RuleSet,
)

__all__ = [
    "ARG_MODES",
    "MATCH_MODES",
    "ArgMode",
    "ArgumentModes",
    "CountRule",
    "DataFlowRule",
    "MatchMode",
    "OrderRule",
    "RuleSet",
    "combine",
    "gold_rule_spec",
    "load_gold_rules",
    "load_rules",
    "ruleset",
    "ruleset_from_json",
]

KEYS = (
    "forbidden",
    "allow",
    "order",
    "counts",
    "max_calls",
    "schemas",
    "schema_refs",
    "data_flow",
    "match",
    "arguments",
    "free",
    "failures",
)
_DEFAULT = "<rules>"


def ruleset(data: Any, path: str = _DEFAULT, *, python: bool = True) -> RuleSet:
    """Validate rules given as a forbidden list or a rule object (see the module docstring).

    Args:
        data: a list of forbidden rules, a rule object, or a :class:`RuleSet` (returned as is).
        path: the name used in error messages.
        python: values are Python (matchers allowed) rather than parsed JSON (``$`` operators).

    Raises:
        RuleFileError: what is wrong and which rule.
    """
    if isinstance(data, RuleSet):
        return data
    if not isinstance(data, Mapping):
        forbidden = _forbidden_form(data, "forbidden", path, python, ()) if data is not None else []
        return RuleSet(forbidden=tuple(forbidden), has_forbidden=data is not None)
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        raise RuleFileError(path, f"unknown rule key {unknown[0]!r} (known: {', '.join(KEYS)})")
    out = RuleSet()
    if "forbidden" in data:
        forbidden = _forbidden_form(data["forbidden"], "forbidden", path, python, ("forbidden",))
        out = replace(out, forbidden=tuple(forbidden), has_forbidden=True)
    try:
        out = _hard(out, data, path, python)
    except RuleFileError as exc:
        if exc.json_path is None:  # where in the file: the key, and the rule when named
            m = _RULE_INDEX.match(exc.problem)
            key = next((k for k in KEYS if exc.problem.startswith(k)), None)
            if m is not None:
                exc.json_path = (_SECTION[m.group(1)], int(m.group(2)))
            elif key is not None and key in data:
                exc.json_path = (key,)
        raise
    _unique_ids(out, path)
    return out


_RULE_INDEX = re.compile(r"(order|count|data_flow) rule (\d+)")
_SECTION = {"order": "order", "count": "counts", "data_flow": "data_flow"}


def _hard(out: RuleSet, data: Mapping[str, Any], path: str, python: bool) -> RuleSet:
    if data.get("allow") is not None:
        tools, rule_id, reason = _allow(data["allow"], path)
        out = replace(out, allow=tools, allow_id=rule_id, allow_reason=reason)
    if data.get("order"):
        out = replace(out, order=tuple(_order(data["order"], path)))
    counts = _counts(data["counts"], path) if data.get("counts") else []
    if data.get("max_calls") is not None:
        counts.append(_max_calls(data["max_calls"], path))
    out = replace(out, counts=tuple(counts))
    if data.get("schemas") is not None:
        # the schema machinery (~4 ms to import) loads only for rules that have schemas
        from .schemas import ToolSchemas

        refs = _schema_refs(data.get("schema_refs"), path)
        out = replace(out, schemas=ToolSchemas.from_definitions(data["schemas"], path, refs))
    if data.get("data_flow"):
        out = replace(out, data_flow=tuple(_data_flow(data["data_flow"], path, python)))
    if data.get("match"):
        out = replace(out, match=_match(data["match"], path))
    if data.get("arguments") is not None:
        out = replace(out, arguments=_arguments(data["arguments"], path))
    if data.get("failures") is not None:
        out = replace(out, failures=failure_rules(data["failures"], path))
    if data.get("free") is not None:
        out = replace(out, free=tuple(dict.fromkeys(_tools(data["free"], "free", path))))
    return out


def _schema_refs(value: Any, path: str) -> list[str]:
    """``schema_refs``: more places a schema's ``$ref`` may lead (folders relative to the
    rule file's, made absolute; URL prefixes as they are)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RuleFileError(path, "schema_refs must be a list of folders and URL prefixes")
    base = os.path.dirname(path) if path and not path.startswith("<") else ""
    return [v if "://" in v else os.path.abspath(os.path.join(base, v)) for v in value]


def _unique_ids(rules: RuleSet, path: str) -> None:
    seen: set[str] = set()
    ids = [r.id for r in rules.order] + [r.id for r in rules.counts]
    ids += [r.id for r in rules.data_flow]
    if rules.allow is not None:
        ids.append(rules.allow_id)
    for rule_id in ids:
        if rule_id in seen:
            raise RuleFileError(path, f"two rules have the id {rule_id!r}")
        seen.add(rule_id)


def ruleset_from_json(data: Any, path: str = _DEFAULT) -> RuleSet:
    """:func:`ruleset` for parsed JSON (``$regex``/``$contains``/``$one_of`` operators)."""
    return ruleset(data, path, python=False)


def load_rules(path: str | os.PathLike[str]) -> RuleSet:
    """Read a rule file: a list of forbidden rules, or a rule object.

    Raises:
        RuleFileError: unreadable, not UTF-8 JSON, or a bad rule (the message names the file,
            the rule and, for bad JSON, the line).
    """
    name = os.fspath(path)
    data, text = read_json(name, "rule file", RuleFileError)
    try:
        return ruleset_from_json(data, name)
    except RuleFileError as exc:  # a forbidden rule's error names its line
        if exc.json_path is None:
            raise
        raise with_position(exc, text, exc.json_path) from exc


def gold_rule_spec(data: Any, name: str) -> dict[str, Any] | None:
    """The rule object a gold holds, unparsed: its ``"rules"`` object with its top-level
    ``"match"`` and ``"arguments"`` (a gold file that is an object, or a keyed gold line);
    None for a plain list or an object without them.

    Raises:
        RuleFileError: ``"rules"`` is not an object (the error names ``name``).
    """
    if not isinstance(data, Mapping):
        return None
    spec: dict[str, Any] = {}
    inner = data.get("rules")
    if inner is not None:
        if not isinstance(inner, Mapping):
            raise RuleFileError(
                name, f"the gold file's 'rules' must be an object, got {_short(inner)}"
            )
        spec.update(inner)
    for key in ("match", "arguments", "free"):
        if key in data:
            spec[key] = data[key]
    return spec or None


def load_gold_rules(path: str | os.PathLike[str]) -> RuleSet | None:
    """The rules a gold file holds (see :func:`gold_rule_spec`), parsed; None without them.

    The gold file has been read by :func:`~toolscore.gold.load_gold` already, so read errors
    do not happen here; a bad rule is a :class:`RuleFileError` naming the gold file.
    """
    name = os.fspath(path)
    try:
        data = read_json(name, "gold file", RuleFileError)[0]
    except RuleFileError:
        return None
    spec = gold_rule_spec(data, name)
    return None if spec is None else ruleset_from_json(spec, name)


def combine(first: RuleSet | None, second: RuleSet | None) -> RuleSet | None:
    """Both rule sets as one: lists joined (an id of ``second``'s that ``first`` has too
    gets ``#2``), the allowlists intersected (least privilege), match modes joined;
    ``second``'s argument modes win."""
    if first is None:
        return second
    if second is None:
        return first
    if first.allow is None:
        allow, allow_id, reason = second.allow, second.allow_id, second.allow_reason
    elif second.allow is None:
        allow, allow_id, reason = first.allow, first.allow_id, first.allow_reason
    else:
        allow, allow_id, reason = first.allow & second.allow, second.allow_id, second.allow_reason
    schemas = first.schemas
    if schemas is None:
        schemas = second.schemas
    elif second.schemas is not None:
        schemas = schemas.combined(second.schemas)
    taken = {r.id for r in first.order} | {r.id for r in first.counts}
    taken |= {r.id for r in first.data_flow}
    if first.allow is not None:
        taken.add(first.allow_id)

    def fresh(rule: Any) -> Any:  # the same default id in both: the second's gets a suffix
        return replace(rule, id=f"{rule.id}#2") if rule.id in taken else rule

    out = RuleSet(
        forbidden=first.forbidden + second.forbidden,
        allow=allow,
        allow_id=allow_id,
        allow_reason=reason,
        order=first.order + tuple(fresh(r) for r in second.order),
        counts=first.counts + tuple(fresh(r) for r in second.counts),
        schemas=schemas,
        data_flow=first.data_flow + tuple(fresh(r) for r in second.data_flow),
        match=first.match + tuple(m for m in second.match if m not in first.match),
        arguments=second.arguments if second.arguments is not None else first.arguments,
        has_forbidden=first.has_forbidden or second.has_forbidden,
        free=first.free + tuple(t for t in second.free if t not in first.free),
        failures=second.failures if second.failures is not None else first.failures,
    )
    _unique_ids(out, "<rules>")
    return out
