"""The ``file_exists`` side-effect validator: did a tool call leave a file behind?

Toolscore 1.10's ``toolscore.validators.filesystem``. It looks at the **local file system**,
relative to the working directory (or ``base_path``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..calls import ToolCall

__all__ = ["FileSystemValidator"]

_PATH_KEYS = ("path", "file", "filename", "filepath", "file_path", "output")


def _path(call: ToolCall, expected: Any) -> str | None:
    if isinstance(expected, str):
        return expected
    if isinstance(call.args, Mapping):
        for key in _PATH_KEYS:
            if key in call.args:
                value = call.args[key]
                return value if isinstance(value, str) else None
    result = call.result
    if isinstance(result, str):
        return result
    if isinstance(result, Mapping) and isinstance(result.get("path"), str):
        return str(result["path"])
    return None


class FileSystemValidator:
    """Checks that the file a call wrote exists (and holds what it should).

    Args:
        base_path: the directory relative paths are read from (default: the working one).
        contains: text (or texts) the file must contain.
        min_size, max_size: bounds on the file's size in bytes.
    """

    def __init__(
        self,
        base_path: str | None = None,
        contains: str | list[str] | None = None,
        min_size: int | None = None,
        max_size: int | None = None,
    ) -> None:
        self.base_path = base_path
        self.contains = [contains] if isinstance(contains, str) else list(contains or ())
        self.min_size = min_size
        self.max_size = max_size

    def validate(self, call: ToolCall, expected: Any) -> bool:
        """The path is ``expected`` when it is a string, else the call's ``path``, ``file``,
        ``filename``, ``filepath``, ``file_path`` or ``output`` argument, else its result (a
        string, or a dict's ``path``). Any other ``expected`` only asks that the file exist."""
        name = _path(call, expected)
        if name is None:
            return False
        path = Path(self.base_path) / name if self.base_path else Path(name)
        if not path.is_file():
            return False
        size = path.stat().st_size
        if self.min_size is not None and size < self.min_size:
            return False
        if self.max_size is not None and size > self.max_size:
            return False
        if self.contains:
            text = path.read_text(encoding="utf-8", errors="replace")
            return all(part in text for part in self.contains)
        return True
