"""Each section of a rule object validated (``allow``, ``order``, ``counts``, ``max_calls``,
``data_flow``, ``match``, ``arguments``), with errors that name the rule and what is wrong
(see :mod:`toolscore.hardrules.spec`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any, cast

from ..errors import RuleFileError
from ..rules import Rule, rules_from_json, rules_from_python
from ._rule_types import (
    ARG_MODES,
    MATCH_MODES,
    ArgMode,
    ArgumentModes,
    CountRule,
    DataFlowRule,
    MatchMode,
    OrderRule,
)


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
