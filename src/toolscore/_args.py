"""Argument checks for the public Python API: a wrong type is a ``TypeError`` (a bad value a
``UsageError``) that says what the argument accepts, raised before anything is read.

A path may be given as ``str``, ``os.PathLike`` or ``bytes`` (decoded as the file system
does, :func:`os.fsdecode`), as :func:`open` accepts it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, Iterable, Mapping, Sequence
from typing import Any

from .errors import UsageError
from .hardrules.spec import RuleSet

__all__ = [
    "check_format",
    "check_gold",
    "check_rules",
    "check_stream_source",
    "check_trace_file",
    "check_workers",
]

_PATH = "a path (str, os.PathLike or bytes)"


def _path(value: Any) -> str | os.PathLike[str] | None:
    """``value`` as a path when it is one (bytes decoded), else None."""
    if isinstance(value, (bytes, bytearray)):
        return os.fsdecode(bytes(value))
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return os.fsdecode(path) if isinstance(path, bytes) else value
    return None


def check_trace_file(value: Any, name: str = "trace_file") -> Any:
    """A trace for :func:`~toolscore.evaluate_trace`: a path or a binary file.

    Raises:
        TypeError: anything else (calls in memory: say which function takes them).
    """
    path = _path(value)
    if path is not None:
        return path
    if hasattr(value, "read"):
        return value
    if isinstance(value, (Mapping, Iterable)) and not isinstance(value, (str, bytes)):
        raise TypeError(
            f"{name} must be {_PATH} or a binary file opened with 'rb', got "
            f"{type(value).__name__}; to score calls held in memory use "
            "evaluate(expected, actual) or await evaluate_stream(gold, calls)"
        )
    raise TypeError(
        f"{name} must be {_PATH} or a binary file opened with 'rb', got {type(value).__name__}"
    )


def check_stream_source(value: Any) -> Any:
    """A source for :func:`~toolscore.evaluate_stream` (see ``TraceSource``).

    Raises:
        TypeError: not a path, a binary file, an async byte stream or an (async) iterable of
            call dicts.
    """
    path = _path(value)
    if path is not None:
        return path
    if hasattr(value, "read") or isinstance(value, AsyncIterable):
        return value
    if isinstance(value, Iterable) and not isinstance(value, (Mapping, str)):
        return value
    raise TypeError(
        f"source must be {_PATH}, a binary file, an async byte stream, or an (async) iterable "
        f"of call dicts, got {type(value).__name__}"
    )


def check_gold(value: Any, name: str = "gold_file") -> Any:
    """A gold file's path (bytes decoded) or the expected calls (a list or tuple).

    Raises:
        TypeError: anything else.
    """
    if value is None:
        return None
    path = _path(value)
    if path is not None:
        return path
    if isinstance(value, Sequence) and not isinstance(value, str):
        return value
    raise TypeError(
        f"{name} must be {_PATH} of a gold file or a list of expected calls "
        f'(dicts such as {{"tool": "search", "args": {{...}}}} or ToolCall objects), '
        f"got {type(value).__name__}"
    )


def check_rules(value: Any, name: str) -> Any:
    """Rules: a rule file's path (bytes decoded), a list of rules, a rule object or None.

    Raises:
        TypeError: anything else.
    """
    if value is None:
        return None
    path = _path(value)
    if path is not None:
        return path
    if isinstance(value, (list, tuple, Mapping)):
        return value

    if isinstance(value, RuleSet):
        return value
    raise TypeError(
        f"{name} must be {_PATH} of a rule file, a list of rules, a rule object (dict or "
        f"RuleSet) or None, got {type(value).__name__}"
    )


def check_format(value: Any) -> str:
    """A format name.

    Raises:
        TypeError: not a string.
    """
    if not isinstance(value, str):
        raise TypeError(
            f'format must be a string ("auto" or a format name), got {type(value).__name__}'
        )
    return value


def check_workers(value: Any) -> int | None:
    """``workers``: None (one process per CPU) or a positive number of processes.

    Raises:
        TypeError: not an int or None.
        UsageError: zero or negative.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            "workers must be a positive int (processes) or None (one per CPU), got "
            f"{type(value).__name__}"
        )
    if value < 1:
        raise UsageError(
            f"workers must be at least 1 (or None for one process per CPU), got {value}"
        )
    return value
