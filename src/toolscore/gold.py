"""Gold (expected) calls from a file or from dicts, and actual calls from dicts.

:func:`load_gold` reads a gold file as Toolscore 1.10 does (a JSON array of calls, or an object
whose ``calls`` is one), with what Toolscore lacks: ``$`` operators at any depth of an argument
(:mod:`toolscore.operators`; Toolscore compared them as literals) and items listing alternative
calls (``{"$one_of": [call, call]}``, :func:`gold_choices`). It validates it: an item that
is not a call object, has no ``tool`` string, or whose ``args`` is not an object (or null) is a
:class:`~toolscore.errors.GoldFileError` naming the file, the line and byte offset and the
item's JSON path (Toolscore skipped such items silently, and ``[1, 2]`` scored as an empty
gold). :func:`gold_from_dicts` and :func:`calls_from_dicts` are the in-memory path of
``evaluate()``: a bad item is a :class:`~toolscore.errors.UsageError` (a ``ValueError``)
naming its index.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import orjson

from .calls import ToolCall
from .errors import GoldFileError, UsageError
from .failed import keep_failure_fields
from .hardrules.spec import load_gold_rules
from .jsonfile import read_json, with_position
from .matchers import OneOf
from .operators import OperatorError, args_from_json

__all__ = [
    "Gold",
    "calls_from_dicts",
    "gold_choices",
    "gold_from_dicts",
    "gold_of_json",
    "load_gold",
    "read_gold_file",
    "side_effect_note",
]

_SHAPE = 'Gold standard must be a JSON array of tool calls (or an object whose "calls" is one)'


def load_gold(path: str | os.PathLike[str]) -> list[ToolCall]:
    """Read a gold file.

    Each kept item gives a call with its ``args`` (``None`` when absent or null: "don't
    check"), and ``metadata`` holding ``side_effects`` (default ``{}``) and, when present,
    ``description``. Every other key (``result``, ``error``, ``required``, ``schema``...) is
    ignored, as in Toolscore.

    Args:
        path: the gold file (JSON, UTF-8).

    Returns:
        The gold calls, indexed from 0.

    Raises:
        GoldFileError: the file is missing or unreadable, not JSON, nested deeper than
            :data:`~toolscore.limits.MAX_DEPTH`, or not of the gold shape (an item that is
            not a call object, without a non-empty ``tool`` string, or whose ``args`` is
            neither an object nor null); the message names the line and the JSON path.
    """
    name = os.fspath(path)
    data, text = read_json(name, "gold file", GoldFileError)
    at: tuple[str | int, ...] = ()
    if isinstance(data, dict) and isinstance(data.get("calls"), list):
        data = data["calls"]
        at = ("calls",)
    if not isinstance(data, list):
        raise GoldFileError(str(name), _SHAPE)
    try:
        return _gold_calls(data, str(name), at)
    except GoldFileError as exc:
        raise with_position(exc, text, exc.json_path) from None


_CALL = 'an object like {"tool": "name", "args": {...}}'
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number"}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return _JSON_TYPES.get(type(value), "number" if isinstance(value, float) else "value")


def _short(value: object, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _gold_calls(data: list[Any], name: str, at: tuple[str | int, ...]) -> list[ToolCall]:
    def fail(problem: str, where: tuple[str | int, ...]) -> GoldFileError:
        error = GoldFileError(name, problem)
        error.json_path = at + where
        return error

    calls: list[ToolCall] = []
    for i, item in enumerate(data):
        choices = alternatives_of(item)
        if choices is None:
            calls.append(_file_call(item, i, (i,), fail, len(calls)))
            continue
        where = (i, next(iter(item)))
        if not isinstance(choices, list) or not choices:
            raise fail(f"item {i}: alternatives must be a non-empty list of calls", where)
        alts = [_file_call(c, i, (*where, j), fail, len(calls)) for j, c in enumerate(choices)]
        calls.append(with_alternatives(alts))
    return calls


def _file_call(item: Any, i: int, where: tuple[str | int, ...], fail: Any, index: int) -> ToolCall:
    if not isinstance(item, dict):
        raise fail(
            f"item {i} is not a call: expected {_CALL}, got a JSON {_json_type(item)} "
            f"{_short(item)}",
            where,
        )
    if "tool" not in item:
        raise fail(f"item {i} has no 'tool': expected {_CALL}", where)
    tool = item["tool"]
    if not isinstance(tool, str) or not tool:
        raise fail(
            f"item {i}: 'tool' must be a non-empty string naming the tool, got a JSON "
            f"{_json_type(tool)} {_short(tool)}",
            (*where, "tool"),
        )
    args = item.get("args")
    if args is not None and not isinstance(args, dict):
        raise fail(
            f"item {i}: 'args' must be an object of argument names and values (or null: "
            f"any arguments), got a JSON {_json_type(args)} {_short(args)}",
            (*where, "args"),
        )
    try:
        args = args_from_json(args)
    except OperatorError as exc:
        raise fail(f"item {i}: {exc.problem}", (*where, "args", *exc.json_path)) from None
    metadata: dict[str, Any] = {"side_effects": item.get("side_effects") or {}}
    if "description" in item:
        metadata["description"] = item["description"]
    return ToolCall(tool=tool, args=args, metadata=metadata, index=index)


ALTERNATIVES = ("$one_of", "$any_of")
"""The keys of a gold item that lists alternative calls: ``{"$one_of": [call, call]}``."""


def alternatives_of(item: Any) -> Any:
    """The alternatives a gold item lists (``{"$one_of": [...]}``, or a Python
    :class:`~toolscore.matchers.OneOf` of call dicts), or None for a plain call."""
    if isinstance(item, OneOf):
        return list(item.values)
    if isinstance(item, dict) and len(item) == 1:
        key = next(iter(item))
        if key in ALTERNATIVES:
            return item[key]
    return None


def with_alternatives(alts: list[ToolCall]) -> ToolCall:
    """One gold position that any of ``alts`` satisfies: the first alternative, carrying
    all of them in ``metadata["alternatives"]`` (see :func:`gold_choices`)."""
    first = alts[0]
    if len(alts) == 1:
        return first
    metadata = {**first.metadata, "alternatives": tuple(alts)}
    return ToolCall(tool=first.tool, args=first.args, metadata=metadata, index=first.index)


MAX_GOLD_CHOICES = 256
"""The most concrete golds a gold with alternatives may stand for (the product of its
alternatives' counts): each is scored, and the best counts."""


def gold_choices(gold: Sequence[ToolCall]) -> list[list[ToolCall]] | None:
    """Every concrete gold a gold with alternatives stands for (one alternative chosen at
    each position, the first choice first), or None when it has no alternatives.

    Raises:
        UsageError: more than :data:`MAX_GOLD_CHOICES` of them.
    """
    options = [call.metadata.get("alternatives") or (call,) for call in gold]
    if all(len(o) == 1 for o in options):
        return None
    total = math.prod(len(o) for o in options)
    if total > MAX_GOLD_CHOICES:
        raise UsageError(
            f"the gold's alternatives stand for {total} golds, more than "
            f"{MAX_GOLD_CHOICES}: list fewer alternatives"
        )
    return [
        [replace(call, index=i) for i, call in enumerate(choice)]
        for choice in itertools.product(*options)
    ]


def side_effect_note(gold: Iterable[ToolCall], validated: Any = None) -> str | None:
    """The note shown when gold calls carry ``side_effects``.

    Args:
        gold: the gold calls.
        validated: the result's ``side_effect_metrics`` when the validators ran (see
            :mod:`toolscore.side_effects`); otherwise the note says they were not run.

    Returns:
        One line naming the checks and their calls (the failed ones when they ran), or
        ``None`` when no gold call has any.
    """
    if isinstance(validated, dict) and validated.get("total_checks"):
        failed = [d for d in validated.get("details", ()) if not d.get("passed")]
        text = (
            f"{validated.get('passed_checks', 0)} of {validated['total_checks']} side-effect "
            "checks passed"
        )
        if failed:
            text += " (failed: " + ", ".join(
                f"{d.get('check')} on {d.get('tool')}: {d.get('reason')}" for d in failed[:5]
            )
            text += f", and {len(failed) - 5} more)" if len(failed) > 5 else ")"
        return text
    checks: dict[str, list[str]] = {}
    total = 0
    for call in gold:
        effects = call.metadata.get("side_effects") if call.metadata else None
        if not isinstance(effects, dict) or not effects:
            continue
        for name in effects:
            total += 1
            checks.setdefault(str(name), []).append(call.tool)
    if not total:
        return None
    named = ", ".join(
        f"{name} on {', '.join(dict.fromkeys(tools))}" for name, tools in sorted(checks.items())
    )
    noun = "check was" if total == 1 else "checks were"
    return (
        f"{total} side-effect {noun} not run ({named}): side-effect validation was turned off "
        "(validate_side_effects=False); they are not part of the score"
    )


def _metadata(item: dict[str, Any]) -> dict[str, Any]:
    """A call dict's ``metadata``, then its ``id``, ``error`` and ``is_error`` as the dict gives
    them: read by the failure rules as a trace file's fields are (:mod:`toolscore.failed`)."""
    metadata: dict[str, Any] = {}
    extra = item.get("metadata")
    if isinstance(extra, dict):
        metadata.update(extra)
    if item.get("id") is not None:
        metadata["id"] = item["id"]
    keep_failure_fields(item, metadata)
    return metadata


def _from_dicts(items: Iterable[Any], start: int, gold: bool = False) -> list[ToolCall]:
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        raise TypeError(
            f"calls must be a list of call dicts like {{'tool': 'name', 'args': {{...}}}}, "
            f"got {type(items).__name__}"
        )
    calls: list[ToolCall] = []
    for i, item in enumerate(items):
        choices = alternatives_of(item) if gold else None
        if choices is not None:
            if not isinstance(choices, list) or not choices:
                raise UsageError(
                    f"Item at index {start + i}: alternatives must be a non-empty list of calls"
                )
            alts = [_from_dicts([c], start + i, gold=True)[0] for c in choices]
            calls.append(with_alternatives(alts))
            continue
        if not isinstance(item, dict):
            raise UsageError(
                f"Item at index {start + i} is not a dict: expected a call like "
                f"{{'tool': 'name', 'args': {{...}}}}, got {type(item).__name__} {_short(item)}"
            )
        tool = item.get("tool")
        if not tool:
            raise UsageError(
                f"Item at index {start + i} is missing 'tool' key (a non-empty string naming "
                "the tool)"
            )
        if not isinstance(tool, str):
            raise UsageError(
                f"Item at index {start + i}: 'tool' must be a string naming the tool, got "
                f"{type(tool).__name__} {_short(tool)}"
            )
        if gold and item.get("args") is not None and not isinstance(item["args"], dict):
            raise UsageError(
                f"Item at index {start + i}: 'args' must be a dict of argument names and "
                f"values (or None: any arguments), got {type(item['args']).__name__}"
            )
        args = item.get("args")
        if gold:
            try:
                args = args_from_json(args)
            except OperatorError as exc:
                where = ".".join(map(str, exc.json_path))
                raise UsageError(
                    f"Item at index {start + i}: {exc.problem}"
                    + (f" (at args.{where})" if where else "")
                ) from None
        calls.append(
            ToolCall(
                tool=tool,
                args=args,
                result=item.get("result"),
                timestamp=item.get("timestamp"),
                duration=item.get("duration"),
                cost=item.get("cost"),
                metadata=_metadata(item),
                index=start + i,
            )
        )
    return calls


def gold_from_dicts(items: Iterable[Any]) -> list[ToolCall]:
    """The expected calls of ``evaluate(expected=...)``: one list per distinct gold
    (:func:`gold_of_json`) when ``items`` is plain JSON data (dicts, lists, strings, numbers,
    booleans, None), so a loop over trials of one gold reads it once; its calls then hold a
    copy of ``items``, not ``items`` itself. The list is shared: read it, never change it.

    Copies ``tool``, ``args`` (``None`` kept), ``result``, ``timestamp``, ``duration`` and
    ``cost``; ``metadata`` holds the dict's ``metadata``, ``id``, ``error`` and ``is_error``.

    Raises:
        UsageError: (a ``ValueError``) ``Item at index {i} is not a dict`` / ``... is missing
            'tool' key`` / a ``tool`` that is not a string / ``args`` that is not a dict.
        TypeError: ``items`` is not a list (or other iterable) of dicts.
    """
    key = _json_key(items)
    if key is None:
        return _from_dicts(items, 0, gold=True)
    return gold_of_json(key, lambda: _from_dicts(orjson.loads(key), 0, gold=True))


GOLDS_KEPT = 256
"""The most golds :func:`gold_of_json` keeps."""

_GOLDS: OrderedDict[bytes, list[ToolCall]] = OrderedDict()


def gold_of_json(body: bytes, read: Callable[[], list[ToolCall]]) -> list[ToolCall]:
    """The gold whose JSON text is ``body``: the list read before for the same text, else
    ``read()``'s, kept (the last :data:`GOLDS_KEPT` golds). Every door that reads a gold from
    JSON text asks here, so one gold is one list, whose plan the expected-calls check builds
    once (:mod:`toolscore.checks.expected.plans`)."""
    gold = _GOLDS.get(body)
    if gold is not None:
        _GOLDS.move_to_end(body)
        return gold
    gold = _GOLDS[body] = read()
    if len(_GOLDS) > GOLDS_KEPT:
        _GOLDS.popitem(last=False)
    return gold


_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_PASSTHROUGH |= orjson.OPT_PASSTHROUGH_SUBCLASS


def _not_json(value: Any) -> Any:
    raise TypeError


def _json_key(items: Any) -> bytes | None:
    """``items`` as JSON text when it reads back as the same plain data (no tuple, matcher,
    subclass, NaN...), else None."""
    if not isinstance(items, list):
        return None
    try:
        key = orjson.dumps(items, default=_not_json, option=_PASSTHROUGH)
    except TypeError:
        return None
    return key if orjson.loads(key) == items else None


def calls_from_dicts(items: Iterable[Any], *, start: int = 0) -> list[ToolCall]:
    """Actual calls given as dicts; their ``error`` and ``is_error`` are read as a trace
    file's are (a truthy ``error`` or ``is_error: true`` fails the call, each by its own rule).

    Args:
        items: the call dicts.
        start: the index of the first call (for calls that arrive one at a time).

    Raises:
        UsageError: (a ``ValueError``) ``Item at index {i} is not a dict`` / ``... is missing
            'tool' key`` / a ``tool`` that is not a string.
        TypeError: ``items`` is not a list (or other iterable) of dicts.
    """
    return _from_dicts(items, start)


class Gold(list[ToolCall]):
    """Expected calls together with the rules their gold holds (a gold file that is an object
    with ``"rules"``, ``"match"`` or ``"arguments"``, or a keyed gold line with them): a list
    of calls wherever calls are read, whose :attr:`rules` every door merges with the rule
    file and the Python arguments (:func:`toolscore.api.read_rules`)."""

    def __init__(self, calls: Iterable[ToolCall] = (), rules: Any = None) -> None:
        super().__init__(calls)
        self.rules = rules
        """The gold's own :class:`~toolscore.hardrules.spec.RuleSet`, or None."""


def read_gold_file(path: str | os.PathLike[str]) -> Gold:
    """A gold file's calls (:func:`load_gold`) with its own rules.

    Raises:
        GoldFileError: as :func:`load_gold`.
        RuleFileError: the gold's rules are malformed (naming the gold file).
    """
    return Gold(load_gold(path), load_gold_rules(path))
