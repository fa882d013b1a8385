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
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, Literal, cast

from ..errors import RuleFileError
from ..failed import FailureRules, failure_rules
from ..jsonfile import read_json, with_position
from ..rules import Rule, rules_from_json, rules_from_python

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

MatchMode = Literal["strict", "unordered", "subset", "superset"]
ArgMode = Literal["exact", "ignore", "subset", "superset"]
MATCH_MODES: tuple[MatchMode, ...] = ("strict", "unordered", "subset", "superset")
ARG_MODES: tuple[ArgMode, ...] = ("exact", "ignore", "subset", "superset")
KEYS = (
    "forbidden",
    "allow",
    "order",
    "counts",
    "max_calls",
    "schemas",
    "data_flow",
    "match",
    "arguments",
    "free",
    "failures",
)
_DEFAULT = "<rules>"


@dataclass(frozen=True)
class OrderRule:
    """``before`` must be called before any call to ``after`` (reported at the first call to
    ``after`` with no call to ``before`` ahead of it)."""

    id: str
    before: str
    after: str
    reason: str | None = None


@dataclass(frozen=True)
class CountRule:
    """Calls to ``tool`` (every call when ``tool`` is None: a step budget) must number at
    least ``min`` and at most ``max``. Too many is reported at the first call past ``max``;
    too few at the end of the trace."""

    id: str
    tool: str | None
    min: int | None = None
    max: int | None = None
    reason: str | None = None


@dataclass(frozen=True)
class DataFlowRule:
    """A call to a ``sinks`` tool after a *source*: a call whose result carried a credential
    (``credentials``) or a call matching one of ``sources`` (forbidden-rule form: a read of a
    private path). Reported at each sink call after the first source."""

    id: str
    sinks: frozenset[str]
    sources: tuple[Rule, ...] = ()
    credentials: bool = True
    reason: str | None = None


@dataclass(frozen=True)
class ArgumentModes:
    """How arguments are compared: a default mode, one per tool, and one per argument of a
    tool. ``exact``: same keys, every value matches; ``ignore``: not compared; ``subset``:
    every expected argument is there and matches, extra actual arguments do not cost;
    ``superset``: every actual argument was expected and matches, missing ones do not cost.
    A per-argument mode applies to that argument's value: ``ignore`` drops it; ``subset`` /
    ``superset`` compare a dict's keys or a list's items one way only.

    ``score``: the modes also change the graded argument F1 (opt-in; off by default, so
    existing scores stay as they were): ``ignore`` leaves arguments out, ``subset`` does not
    count actual arguments that no expected call of the tool has. ``superset`` decides the
    match modes only (the score's pairing counts matched arguments per expected call).
    Per-argument ``subset``/``superset`` modes decide the match modes only."""

    mode: ArgMode = "exact"
    tools: Mapping[str, ArgMode] = field(default_factory=dict)
    args: Mapping[str, Mapping[str, ArgMode]] = field(default_factory=dict)
    score: bool = False

    def tool_mode(self, tool: str) -> ArgMode:
        return self.tools.get(tool, self.mode)

    def arg_modes(self, tool: str) -> Mapping[str, ArgMode]:
        return self.args.get(tool, {})


@dataclass(frozen=True)
class RuleSet:
    """Forbidden rules and hard rules, validated (see the module docstring)."""

    forbidden: tuple[Rule, ...] = ()
    allow: frozenset[str] | None = None
    allow_id: str = "allow"
    allow_reason: str | None = None
    order: tuple[OrderRule, ...] = ()
    counts: tuple[CountRule, ...] = ()
    schemas: Any = None
    """A :class:`~toolscore.hardrules.schemas.ToolSchemas`, or None."""
    data_flow: tuple[DataFlowRule, ...] = ()
    match: tuple[MatchMode, ...] = ()
    arguments: ArgumentModes | None = None
    has_forbidden: bool = False
    """A forbidden list was given (even empty): the policy check runs."""
    failures: FailureRules | None = None
    """What counts as a failed call (None: the defaults of :mod:`toolscore.failed`)."""
    free: tuple[str, ...] = ()
    """Globs of tools the gold does not judge (see ``expected_check``'s ``free``)."""

    @property
    def hard(self) -> bool:
        """Any rule besides the forbidden ones (the hard-rules check runs)."""
        return bool(
            self.allow is not None
            or self.order
            or self.counts
            or self.schemas is not None
            or self.data_flow
            or self.match
        )

    def __getstate__(self) -> dict[str, Any]:  # compiled schemas go as their JSON
        return {**self.__dict__, "schemas": getattr(self.schemas, "schemas", None)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        from .schemas import ToolSchemas  # (a worker rebuilds them)

        schemas = state["schemas"]
        self.__dict__.update(state, schemas=None if schemas is None else ToolSchemas(schemas))

    def rule_count(self) -> int:
        """How many hard rules: each order, count and data-flow rule, the allowlist, each
        schema, each match mode."""
        schemas = 0 if self.schemas is None else len(self.schemas)
        allow = 0 if self.allow is None else 1
        return (
            len(self.order) + len(self.counts) + len(self.data_flow) + allow + schemas
            + len(self.match)
        )  # fmt: skip


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: Any, where: str, path: str, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty):
        raise RuleFileError(path, f"{where} must be a non-empty string, got {_short(value)}")
    return value


def _reason(item: Mapping[str, Any], where: str, path: str) -> str | None:
    reason = item.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise RuleFileError(path, f"{where} 'reason' must be a string, got {_short(reason)}")
    return reason


def _rule_id(item: Mapping[str, Any], default: str, where: str, path: str) -> str:
    value = item.get("id", default)
    return _text(value, f"{where} 'id'", path)


def _only(item: Mapping[str, Any], keys: Iterable[str], where: str, path: str) -> None:
    allowed = set(keys)
    unknown = [k for k in item if k not in allowed]
    if unknown:
        raise RuleFileError(
            path,
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})",
        )


def _tools(value: Any, where: str, path: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise RuleFileError(path, f"{where} must be a list of tool names, got {_short(value)}")
    return [_text(v, f"{where} item {i}", path) for i, v in enumerate(value)]


def _allow(value: Any, path: str) -> tuple[frozenset[str], str, str | None]:
    if isinstance(value, Mapping):
        _only(value, ("tools", "id", "reason"), "allow", path)
        tools = _tools(value.get("tools"), "allow 'tools'", path)
        return (
            frozenset(tools),
            _rule_id(value, "allow", "allow", path),
            _reason(value, "allow", path),
        )
    return frozenset(_tools(value, "allow", path)), "allow", None


def _order(value: Any, path: str) -> list[OrderRule]:
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
        raise RuleFileError(path, f"order must be a list of rules, got {_short(value)}")
    out: list[OrderRule] = []
    for i, item in enumerate(value):
        where = f"order rule {i}"
        default = f"order[{i}]"
        if isinstance(item, Mapping):
            _only(item, ("before", "after", "id", "reason"), where, path)
            before = _text(item.get("before"), f"{where} 'before'", path)
            after = _text(item.get("after"), f"{where} 'after'", path)
            if before == after:
                raise RuleFileError(path, f"{where}: 'before' and 'after' name the same tool")
            out.append(
                OrderRule(_rule_id(item, default, where, path), before, after,
                          _reason(item, where, path))
            )  # fmt: skip
            continue
        chain = _tools(item, where, path)
        if len(chain) < 2:
            raise RuleFileError(path, f"{where}: a chain needs at least two tools")
        for j, (a, b) in enumerate(pairwise(chain)):
            if a == b:
                raise RuleFileError(path, f"{where}: {a!r} follows itself in the chain")
            suffix = "" if len(chain) == 2 else f".{j}"
            out.append(OrderRule(default + suffix, a, b))
    return out


def _bound(item: Mapping[str, Any], key: str, where: str, path: str) -> int | None:
    value = item.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RuleFileError(
            path, f"{where} {key!r} must be a non-negative integer, got {_short(value)}"
        )
    return value


def _counts(value: Any, path: str) -> list[CountRule]:
    if isinstance(value, (str, Mapping)) or not isinstance(value, Sequence):
        raise RuleFileError(path, f"counts must be a list of rules, got {_short(value)}")
    out: list[CountRule] = []
    for i, item in enumerate(value):
        where = f"count rule {i}"
        if not isinstance(item, Mapping):
            raise RuleFileError(path, f"{where} must be an object, got {_short(item)}")
        _only(item, ("tool", "min", "max", "id", "reason"), where, path)
        tool = item.get("tool")
        tool = None if tool in (None, "*") else _text(tool, f"{where} 'tool'", path)
        low, high = _bound(item, "min", where, path), _bound(item, "max", where, path)
        if low is None and high is None:
            raise RuleFileError(path, f"{where} needs 'min', 'max' or both")
        if low is not None and high is not None and low > high:
            raise RuleFileError(path, f"{where}: 'min' {low} is above 'max' {high}")
        out.append(
            CountRule(_rule_id(item, f"counts[{i}]", where, path), tool, low, high,
                      _reason(item, where, path))
        )  # fmt: skip
    return out


def _max_calls(value: Any, path: str) -> CountRule:
    if isinstance(value, Mapping):
        _only(value, ("max", "id", "reason"), "max_calls", path)
        high = _bound(value, "max", "max_calls", path)
        if high is None:
            raise RuleFileError(path, "max_calls needs 'max'")
        return CountRule(
            _rule_id(value, "max_calls", "max_calls", path), None, None, high,
            _reason(value, "max_calls", path),
        )  # fmt: skip
    high = _bound({"max_calls": value}, "max_calls", "the step budget", path)
    assert high is not None
    return CountRule("max_calls", None, None, high)


def _forbidden_form(
    value: Any, where: str, path: str, python: bool, at: tuple[str | int, ...] | None = None
) -> list[Rule]:
    try:
        return rules_from_python(value, path) if python else rules_from_json(value, path)
    except RuleFileError as exc:
        error = RuleFileError(path, f"{where}: {exc.problem}")
        if at is not None and exc.json_path is not None:
            error.json_path = at + exc.json_path  # where the list is in the file
        raise error from exc


def _data_flow(value: Any, path: str, python: bool) -> list[DataFlowRule]:
    items = [value] if isinstance(value, Mapping) else value
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise RuleFileError(path, f"data_flow must be an object or a list, got {_short(value)}")
    out: list[DataFlowRule] = []
    for i, item in enumerate(items):
        where = f"data_flow rule {i}"
        if not isinstance(item, Mapping):
            raise RuleFileError(path, f"{where} must be an object, got {_short(item)}")
        _only(item, ("sinks", "sources", "credentials", "id", "reason"), where, path)
        sinks = _tools(item.get("sinks"), f"{where} 'sinks'", path)
        if not sinks:
            raise RuleFileError(path, f"{where} 'sinks' must name at least one tool")
        sources = item.get("sources") or []
        converted = _forbidden_form(sources, f"{where} 'sources'", path, python)
        credentials = item.get("credentials", True)
        if not isinstance(credentials, bool):
            raise RuleFileError(path, f"{where} 'credentials' must be true or false")
        if not converted and not credentials:
            raise RuleFileError(path, f"{where} has no source: give 'sources' or credentials")
        default = "data_flow" if isinstance(value, Mapping) else f"data_flow[{i}]"
        out.append(
            DataFlowRule(_rule_id(item, default, where, path), frozenset(sinks),
                         tuple(converted), credentials, _reason(item, where, path))
        )  # fmt: skip
    return out


def _match(value: Any, path: str) -> tuple[MatchMode, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence):
        raise RuleFileError(path, f"match must be a mode or a list of modes, got {_short(value)}")
    out: list[MatchMode] = []
    for item in items:
        if item not in MATCH_MODES:
            raise RuleFileError(
                path, f"unknown match mode {item!r} (known: {', '.join(MATCH_MODES)})"
            )
        if item not in out:
            out.append(cast(MatchMode, item))
    return tuple(out)


def _arg_mode(value: Any, where: str, path: str) -> ArgMode:
    if value not in ARG_MODES:
        raise RuleFileError(
            path, f"{where}: unknown argument mode {value!r} (known: {', '.join(ARG_MODES)})"
        )
    return cast(ArgMode, value)


def _arguments(value: Any, path: str) -> ArgumentModes:
    if isinstance(value, str):
        return ArgumentModes(_arg_mode(value, "arguments", path))
    if not isinstance(value, Mapping):
        raise RuleFileError(path, f"arguments must be a mode or an object, got {_short(value)}")
    _only(value, ("mode", "tools", "score"), "arguments", path)
    mode = _arg_mode(value.get("mode", "exact"), "arguments 'mode'", path)
    score = value.get("score", False)
    if not isinstance(score, bool):
        raise RuleFileError(path, "arguments 'score' must be true or false")
    tools = value.get("tools") or {}
    if not isinstance(tools, Mapping):
        raise RuleFileError(path, f"arguments 'tools' must be an object, got {_short(tools)}")
    tool_modes: dict[str, ArgMode] = {}
    arg_modes: dict[str, dict[str, ArgMode]] = {}
    for tool, spec in tools.items():
        where = f"arguments of {tool!r}"
        if isinstance(spec, str):
            tool_modes[tool] = _arg_mode(spec, where, path)
            continue
        if not isinstance(spec, Mapping):
            raise RuleFileError(path, f"{where} must be a mode or an object")
        _only(spec, ("mode", "args"), where, path)
        if "mode" in spec:
            tool_modes[tool] = _arg_mode(spec["mode"], where, path)
        per_arg = spec.get("args") or {}
        if not isinstance(per_arg, Mapping):
            raise RuleFileError(path, f"{where} 'args' must be an object")
        arg_modes[tool] = {
            str(k): _arg_mode(v, f"{where} argument {k!r}", path) for k, v in per_arg.items()
        }
    if score and "superset" in (mode, *tool_modes.values()):
        raise RuleFileError(
            path,
            "arguments: a 'superset' mode cannot change the graded score (it decides the "
            "match modes only); drop 'score' or the 'superset' mode",
        )
    return ArgumentModes(mode, tool_modes, arg_modes, score)


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
        from .schemas import ToolSchemas

        out = replace(out, schemas=ToolSchemas.from_definitions(data["schemas"], path))
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
