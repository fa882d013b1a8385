"""The ``$`` operators of gold and rule files: the JSON spelling of the matchers.

One table (:data:`OPERATORS`) turns a JSON object whose keys start with ``$`` into the
matcher objects of :mod:`toolscore.matchers`, at any depth of an argument, for a gold file,
a keyed gold line and a rule file alike; Python code writes the same matchers directly.

=================  ===========================  ==========================================
JSON               Python                       matches
=================  ===========================  ==========================================
``$one_of``,       ``OneOf(a, b)``              equal to one of the values (each may be
``$any_of``                                     an operator itself)
``$regex``         ``Search(p)``                the pattern found anywhere (RE2)
``$contains``      ``Contains(x)``              ``x in value`` (substring, item, key)
``$gte``/``$lte``  ``AtLeast(n)``/``AtMost(n)`` a number on that side of ``n``
``$approx``        ``Approx(v, rel, abs)``      ``n`` or ``{"value", "abs", "rel"}``
``$type``          ``IsType(str, ...)``         a JSON type name or a list of them
``$loose``         ``Loose(s)``                 equal ignoring case, spaces, punctuation
``$any``           ``ANY``                      anything (the key must be there)
``$optional``      ``OptionalArg(v)``           absent, or given and matching ``v``
``$literal``       the value itself             the operand as a plain value
=================  ===========================  ==========================================

Several operators in one object must all match (``{"$gte": 1, "$lte": 5}``). An object that
mixes ``$`` keys and plain keys, or names an operator not in the table (``$regx``), is an
error naming it (:class:`OperatorError`; the loaders add the file and line). A dict that
holds an optional key becomes a :class:`~toolscore.matchers.Fields`, so optional keys work
inside nested arguments too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .matchers import (
    ANY,
    AllOf,
    Approx,
    AtLeast,
    AtMost,
    Contains,
    Fields,
    IsType,
    Loose,
    Matcher,
    OneOf,
    OptionalArg,
    Search,
)
from .patterns import PatternError

__all__ = ["OPERATORS", "OperatorError", "args_from_json", "from_json"]

Where = tuple[str | int, ...]


class OperatorError(ValueError):
    """A bad ``$`` operator: ``problem`` and ``json_path`` (where in the value it is)."""

    def __init__(self, problem: str, json_path: Where = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.json_path = json_path


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list, tuple),
    "null": (type(None),),
}


def _number(op: str, operand: Any, at: Where) -> float:
    if isinstance(operand, bool) or not isinstance(operand, (int, float)):
        raise OperatorError(f"{op} needs a number, got {operand!r}", at)
    return operand


def _regex(operand: Any, at: Where) -> Matcher:
    if not isinstance(operand, str):
        raise OperatorError(f"$regex needs a pattern string, got {operand!r}", at)
    try:
        return Search(operand)
    except PatternError as exc:
        what = "unsupported" if exc.refused else "invalid"
        raise OperatorError(f"{what} $regex pattern {operand!r}: {exc}", at) from exc


def _one_of(operand: Any, at: Where) -> Matcher:
    if not isinstance(operand, list):
        raise OperatorError(f"$one_of needs a list, got {operand!r}", at)
    return OneOf(*(from_json(v, (*at, i)) for i, v in enumerate(operand)))


def _approx(operand: Any, at: Where) -> Matcher:
    if isinstance(operand, Mapping):
        unknown = [k for k in operand if k not in ("value", "abs", "rel")]
        if unknown or "value" not in operand:
            raise OperatorError(
                f'$approx needs a number or {{"value": n, "abs": tolerance, "rel": '
                f"tolerance}}, got {operand!r}",
                at,
            )
        value = _number("$approx", operand["value"], at)
        rel = _number("$approx 'rel'", operand.get("rel", 1e-6), at)
        tol = _number("$approx 'abs'", operand.get("abs", 0.0), at)
        return Approx(value, rel=rel, abs=tol)
    return Approx(_number("$approx", operand, at))


def _type(operand: Any, at: Where) -> Matcher:
    names = [operand] if isinstance(operand, str) else operand
    if not isinstance(names, list) or not names or any(n not in _JSON_TYPES for n in names):
        raise OperatorError(
            f"$type needs a JSON type name or a list of them ({', '.join(_JSON_TYPES)}), "
            f"got {operand!r}",
            at,
        )
    return IsType(*(t for n in names for t in _JSON_TYPES[n]))


def _loose(operand: Any, at: Where) -> Matcher:
    if not isinstance(operand, str):
        raise OperatorError(f"$loose needs a string, got {operand!r}", at)
    return Loose(operand)


OPERATORS: dict[str, Callable[[Any, Where], Any]] = {
    "$one_of": _one_of,
    "$any_of": _one_of,
    "$regex": _regex,
    "$contains": lambda operand, at: Contains(operand),
    "$gte": lambda operand, at: AtLeast(_number("$gte", operand, at)),
    "$lte": lambda operand, at: AtMost(_number("$lte", operand, at)),
    "$approx": _approx,
    "$type": _type,
    "$loose": _loose,
    "$any": lambda operand, at: ANY,
    "$optional": lambda operand, at: OptionalArg(from_json(operand, at)),
    "$literal": lambda operand, at: operand,
}
"""Each operator's builder: ``(operand, where) -> matcher``."""


def _operator_object(value: Mapping[str, Any], at: Where) -> Any:
    built: list[Any] = []
    for op, operand in value.items():
        if not isinstance(op, str) or not op.startswith("$"):
            raise OperatorError(
                f"an object with $ operators holds the plain key {op!r}: write a literal "
                'object holding $ keys as {"$literal": {...}}',
                at,
            )
        make = OPERATORS.get(op)
        if make is None:
            raise OperatorError(f"unknown operator {op!r} (known: {', '.join(OPERATORS)})", at)
        built.append(make(operand, (*at, op)))
    if len(built) == 1:
        return built[0]
    if any(m.__class__ is OptionalArg for m in built):
        raise OperatorError("$optional cannot be combined with other operators", at)
    return AllOf(*built)


def _has_operator(value: Mapping[Any, Any]) -> bool:
    return any(isinstance(k, str) and k.startswith("$") for k in value)


def from_json(value: Any, at: Where = ()) -> Any:
    """``value`` (parsed JSON, or Python values with matchers in it) with every ``$`` object
    turned into its matcher, at any depth, and every dict holding an optional key into a
    :class:`~toolscore.matchers.Fields`.

    Returns ``value`` itself when nothing changes (plain gold costs one walk, no copy).

    Raises:
        OperatorError: an unknown operator, a bad operand, or an object mixing ``$`` keys
            with plain ones; ``json_path`` says where, below ``at``.
    """
    if isinstance(value, dict):
        if _has_operator(value):
            return _operator_object(value, at)
        out = {k: from_json(v, (*at, k)) for k, v in value.items()}
        return _wrap(value, out)
    if isinstance(value, list):
        items = [from_json(v, (*at, i)) for i, v in enumerate(value)]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if value.__class__ is OptionalArg:  # a Python matcher around a dict with optional keys
        inner = from_json(value.value, at)
        return value if inner is value.value else OptionalArg(inner)
    if value.__class__ is OneOf:
        options = [from_json(v, at) for v in value.values]
        unchanged = all(a is b for a, b in zip(options, value.values, strict=True))
        return value if unchanged else OneOf(*options)
    return value


def _changed(before: dict[Any, Any], after: dict[Any, Any]) -> bool:
    return any(after[k] is not v for k, v in before.items())


def _wrap(before: dict[Any, Any], after: dict[Any, Any]) -> Any:
    if any(v.__class__ is OptionalArg for v in after.values()):
        return Fields(after)
    return after if _changed(before, after) else before


def args_from_json(args: Any, at: Where = ()) -> Any:
    """A call's ``args`` from JSON: its values through :func:`from_json`, the dict itself
    kept a dict (optional keys stay :class:`~toolscore.matchers.OptionalArg` values)."""
    if not isinstance(args, dict) or _has_operator(args):
        return from_json(args, at)
    out = {k: from_json(v, (*at, k)) for k, v in args.items()}
    return out if _changed(args, out) else args
