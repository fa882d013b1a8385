"""A package's public names imported the first time they are used (PEP 562).

``toolscore eval`` on a small trace spends most of its time starting up; a package whose
``__init__`` imported every submodule made each run pay for the ones it never uses. Such a
package lists its names here instead, and imports them for type checkers only::

    if TYPE_CHECKING:
        from .spec import RuleSet as RuleSet

    __getattr__, __dir__ = lazy_names(__name__, {"RuleSet": ".spec"}, __all__)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, exports: Mapping[str, str], public: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps a name to the
    (relative) module it comes from, imported and bound in the package at first use;
    ``public`` (the ``__all__``) is listed by ``dir()`` with what is bound already."""
    names = dict(exports)
    listed = frozenset(public)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | listed)

    return __getattr__, __dir__
