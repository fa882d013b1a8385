"""Plain custom calls decoded a chunk at a time: the struct of a plain call, its decoders
(made once per process for each set of extra keys) and :class:`_FastReader`, which decodes
chunks into :class:`~toolscore.sources._custom_block.CustomBlock` objects and learns the
file's extra keys."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from ..limits import MARGIN, MAX_DEPTH, bounded_depth, decode_limit_exact
from ._custom_block import _RAW_NULL, _UNSET, CustomBlock
from ._depth import DepthGuard

# A chunk of plain calls (JSON Lines, or a run of a JSON array) is decoded by msgspec straight
# into small structs, in C: a call costs no Python bytecode to decode, and its result is kept
# as raw JSON bytes (``msgspec.Raw``), which the JSON report writes back as they are. "Plain"
# means: a dict whose keys are ``tool`` (a non-empty string), ``args`` (a dict), ``result``,
# ``timestamp``/``duration``/``cost`` (numbers or null), ``is_error``, ``error``, and any other
# key that goes to ``metadata`` unread. Anything else (a key Toolscore reads in place of
# another, such as ``name``, ``arguments`` or ``output``; a number where a string is due; NaN)
# fails the whole chunk, which is then read item by item as before. So both paths give the
# same calls.

_CONSUMED = frozenset(
    {
        "tool",
        "name",
        "function",
        "args",
        "arguments",
        "input",
        "result",
        "output",
        "timestamp",
        "time",
        "duration",
        "elapsed",
        "cost",
    }
)
"""The keys Toolscore reads from a call (every other key goes to ``metadata``)."""

Buffer = bytes | memoryview
"""What msgspec decodes: bytes or a view of them."""
_Number = int | float | None
_BASE_FIELDS: list[tuple[str, Any, Any]] = [
    ("tool", str, msgspec.NODEFAULT),
    ("args", dict[str, Any], {}),
    ("result", msgspec.Raw, _RAW_NULL),
    ("timestamp", _Number, None),
    ("duration", _Number, None),
    ("cost", _Number, None),
    ("is_error", Any, _UNSET),
    ("error", Any, _UNSET),
]
_ALIASES = frozenset(_CONSUMED | {"calls", "tool_calls"})
"""Keys that change how a call is read: their presence sends the chunk down the item path."""
_MAX_EXTRAS = 32
_UNKNOWN_FIELD = re.compile(r"unknown field `(.*)` - at `\$\[\d+\]`$", re.DOTALL)
_GIVE_UP_AFTER = 3
"""Consecutive chunks that fail the fast path before it is no longer tried."""


def _struct(extras: tuple[str, ...]) -> type[Any]:
    """The struct of a plain call that may also carry the keys ``extras``."""
    fields = list(_BASE_FIELDS) + [(f"x{i}", Any, _UNSET) for i in range(len(extras))]
    cls = msgspec.defstruct(
        "_PlainCall",
        fields,
        rename={f"x{i}": key for i, key in enumerate(extras)},
        forbid_unknown_fields=True,
        gc=False,
    )
    return cls


_DECODERS: dict[tuple[str, ...], tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]] = {}
_MAX_DECODERS = 256


def _decoders(
    extras: tuple[str, ...],
) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]:
    """The array and line decoders for ``extras``, made once per process: a dataset reads
    thousands of small traces with the same keys, and building a struct costs ~0.1 ms."""
    found = _DECODERS.get(extras)
    if found is None:
        cls = _struct(extras)
        found = (msgspec.json.Decoder(list[cls]), msgspec.json.Decoder(cls))  # type: ignore[valid-type]
        if len(_DECODERS) >= _MAX_DECODERS:
            _DECODERS.clear()
        _DECODERS[extras] = found
    return found


class _FastReader:
    """Decodes chunks into :class:`CustomBlock` objects, learning the file's extra keys."""

    def __init__(self) -> None:
        self.extras: tuple[str, ...] = ()
        self._shape(())
        self._failures = 0

    def _shape(self, extras: tuple[str, ...]) -> None:
        self.extras = extras
        self._array, self._line = _decoders(extras)

    def decode(
        self,
        pieces: Sequence[Buffer],
        lines: bool,
        count: int | None,
        start: int,
        source: str,
        first_line: int | None,
        levels: int = MAX_DEPTH,
    ) -> CustomBlock | None:
        """Decode ``pieces`` (JSON arrays, or JSON Lines when ``lines``) into one block;
        None when they do not decode as plain calls, or nest deeper than ``levels``."""
        if self._failures >= _GIVE_UP_AFTER:
            return None
        if not decode_limit_exact() and any(
            DepthGuard(levels).feed(bytes(piece)) is not None for piece in pieces
        ):
            return None  # too deep: the item path says where
        while True:
            try:
                items: list[Any] | None = []
                decode = self._line.decode_lines if lines else self._array.decode
                # A margin below the limit (msgspec's count can be off by a few levels; a
                # value this deep is rare): the item path the caller falls back to holds
                # the limit exactly.
                with bounded_depth(levels - MARGIN, within=pieces):
                    for piece in pieces:
                        items += decode(piece)  # type: ignore[operator]
            except RecursionError:  # the item path says which line or byte
                items = None
            except msgspec.ValidationError as exc:
                if self._learn(str(exc)):
                    continue
                items = None
            except msgspec.DecodeError:
                items = None
            break
        if items is None or (count is not None and len(items) != count):
            self._failures += 1  # (JSON Lines: a blank line is skipped, so one item less)
            return None
        block = CustomBlock(items, self.extras, start, source, first_line)
        if "" in block.tools:  # an empty name skips the call: the item path does that
            self._failures += 1
            return None
        self._failures = 0
        return block

    def _learn(self, message: str) -> bool:
        """Add the unknown key ``message`` names to the extras; False when it cannot be."""
        m = _UNKNOWN_FIELD.search(message)
        if m is None or len(self.extras) >= _MAX_EXTRAS:
            return False
        key = m.group(1)
        if key in _ALIASES or key in self.extras:
            return False
        self._shape((*self.extras, key))
        return True
