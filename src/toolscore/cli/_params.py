"""Typer's coercion of option values, built only for a value that needs it.

Typer (0.29 on) coerces every parameter's value, its default too, through a pydantic
``TypeAdapter`` it builds the first time the parameter is processed: ``toolscore eval`` on a
small trace imported pydantic and built some thirty adapters for values that come out as
they went in (a string, ``None``, the default ``0``), some 40% of the instructions of the whole
process. :func:`defer_coercion` gives each plain parameter (a ``str``, ``int``, ``float`` or
``list[str]``, no parser, path, file or choice) a coercion that returns those values as the
adapter returns them and hands anything else (a number written out, a value out of bounds, a
value of another type) to typer's own, built then. Any other parameter, or a typer without
this machinery, is left as it is.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["defer_coercion"]

_PASS: Final = object()
"""Not decided here: typer's own coercion decides."""

_MAX_DIGITS: Final = 18
"""A number written as at most this many ASCII digits is read here (``int``)."""


class _Deferred:
    """A parameter's coercion: plain values here, the rest through typer's, made once."""

    __slots__ = ("_build", "_kind", "_max", "_min", "_real")

    def __init__(self, kind: type, low: Any, high: Any, build: Any) -> None:
        self._kind = kind
        self._min = low
        self._max = high
        self._build = build
        self._real: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """As typer's ``RuntimeParam.coerce``: ``None`` is ``()`` for a parameter of many
        values, else ``None``; a plain value is returned as typer's adapter returns it."""
        multiple = bool(param.multiple) or param.nargs == -1
        if value is None:
            return () if multiple else None
        if multiple:
            if type(value) in (tuple, list) and all(type(item) is str for item in value):
                return list(value)
        else:
            plain = self._plain(value)
            if plain is not _PASS:
                return plain
        if self._real is None:
            self._real = self._build()
        return self._real.coerce(value, param=param, ctx=ctx)

    def _plain(self, value: Any) -> Any:
        kind = type(value)
        if self._kind is str:
            return value if kind is str else _PASS
        if self._kind is bool:
            return _PASS  # typer itself takes a bool as it is, and a text flag is typer's
        if self._kind is int:
            if kind is str and value.isascii() and value.isdigit() and len(value) <= _MAX_DIGITS:
                value = int(value)
            elif kind is not int:
                return _PASS
        elif kind is not float:  # self._kind is float
            return _PASS
        if (self._min is not None and not value >= self._min) or (
            self._max is not None and not value <= self._max
        ):
            return _PASS  # typer's message
        return value


def _deferred(param: Any) -> _Deferred | None:
    """The deferred coercion of ``param``, or None when typer's own is kept."""
    descriptor = getattr(param, "type_descriptor", None)
    build = getattr(param, "get_runtime_param", None)
    info = getattr(descriptor, "parameter_info", None)
    if descriptor is None or info is None or not callable(build):
        return None
    try:
        if info.parser is not None or descriptor.is_path or descriptor.is_file:
            return None
        if descriptor.is_choice or getattr(info, "click_type", None) is not None:
            return None
        annotation = descriptor.annotation
        low, high = info.min, info.max
        clamp = info.clamp
    except AttributeError:  # another typer
        return None
    if annotation == list[str]:
        return _Deferred(str, None, None, build)
    if annotation in (str, bool) or (annotation in (int, float) and not clamp):
        if annotation is float and (low is not None or high is not None):
            return None
        return _Deferred(annotation, low, high, build)
    return None


def _defer(param: Any) -> None:
    deferred = _deferred(param)
    if deferred is not None:
        param.get_runtime_param = lambda: deferred


def defer_coercion(command: Any) -> None:
    """Give ``command``'s parameters and its subcommands', ``--help`` included (made by the
    command for its first context), their deferred coercion."""
    for param in getattr(command, "params", ()):
        _defer(param)
    help_option = getattr(command, "get_help_option", None)
    if callable(help_option):
        made: list[Any] = []

        def get_help_option(ctx: Any) -> Any:
            option = help_option(ctx)
            if option is not None and all(option is not seen for seen in made):
                made.append(option)
                _defer(option)
            return option

        command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        defer_coercion(sub)
