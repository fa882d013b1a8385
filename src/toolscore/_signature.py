"""Call signatures and a compact exact set of their fingerprints.

A call's *signature* (Toolscore §3.6) is its tool name plus a canonical form of ``args or {}``:
keys sorted, key order irrelevant, ``None`` the same as ``{}``, and ``1`` different from ``1.0``.
Toolscore builds it with ``json.dumps(args, sort_keys=True, default=str)``; toolscore uses
orjson for speed and keeps the same equivalence:

* The fast path is ``orjson.dumps(args, default=str, option=OPT_SORT_KEYS)`` (datetimes and
  dataclasses are passed to ``str()`` as ``json`` does). Dicts with non-string keys are retried
  with ``OPT_NON_STR_KEYS``, which spells keys as ``json`` does (``1`` -> ``"1"``,
  ``True`` -> ``"true"``), so ``{1: "a"}`` and ``{"1": "a"}`` stay the same signature.
* orjson writes NaN and Infinity as ``null``, which would make ``{"x": nan}`` identical to
  ``{"x": None}``. Whenever the fast form contains ``null`` the value is checked for non-finite
  floats, and if there are any the ``json.dumps`` form (``NaN``, ``Infinity``) is used instead.
* Values orjson rejects (integers beyond 64 bits, strings with lone surrogates, nesting deeper
  than 255) use ``json.dumps(..., sort_keys=True, default=str)``; if that raises too (mixed-type
  keys, which crash Toolscore) the ``repr`` is used. These fallback forms carry a tag byte so
  they never equal a fast form.

Deliberate differences from Toolscore, all on values JSON cannot hold: an ``Enum`` member that
is not also an ``int``/``str`` canonicalizes by its value (orjson) instead of ``str()``; mixed-type
dict keys and values with only a ``repr`` give a signature instead of an exception.

:func:`fingerprint` hashes a signature to 64 bits (Python's SipHash: stable within a process,
which is all an evaluation needs); :class:`FingerprintSet` keeps those in a flat array so that
counting distinct signatures costs a few bytes per signature, not a Python object each.
"""

from __future__ import annotations

import json
import math
from array import array
from typing import Any

import orjson

__all__ = ["FingerprintSet", "canonical_args", "fingerprint", "signature"]

_FAST = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_NON_STR = _FAST | orjson.OPT_NON_STR_KEYS
_MASK = (1 << 64) - 1
_EMPTY: dict[str, Any] = {}
_ZERO = array("Q", [0])


def _has_non_finite(value: Any, keys: bool = False) -> bool:
    """True when a NaN or an infinity sits anywhere in ``value`` (dict values, list items, and
    dict keys when ``keys``: orjson spells a NaN key ``"null"`` too).

    Only called on values orjson dumped, so nesting is at most 255 deep and recursion is safe.
    """
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        if keys and any(isinstance(k, float) and not math.isfinite(k) for k in value):
            return True
        items: Any = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return False
    for item in items:
        kind = type(item)
        if kind is str or kind is int or item is None or kind is bool:
            continue
        if _has_non_finite(item, keys):
            return True
    return False


def _slow(value: Any) -> bytes:
    try:
        return b"\x00j" + json.dumps(value, sort_keys=True, default=str).encode(
            "utf-8", "surrogatepass"
        )
    except Exception:  # mixed-type keys, circular values, a str() that raises
        pass
    try:
        text = repr(value)
    except Exception:  # a broken __repr__: the type is all we can say
        text = f"<{type(value).__qualname__}>"
    return b"\x00r" + text.encode("utf-8", "surrogatepass")


def canonical_args(args: Any) -> bytes:
    """The canonical bytes of ``args or {}`` (see the module docstring); never raises.

    Args:
        args: a call's arguments, any value.

    Returns:
        Bytes that are equal for two argument values exactly when Toolscore's canonical JSON is.
    """
    value = args or _EMPTY
    try:
        out = orjson.dumps(value, default=str, option=_FAST)
    except TypeError as exc:
        if "key must be" not in str(exc):
            return _slow(value)
        try:
            out = orjson.dumps(value, default=str, option=_NON_STR)
        except Exception:
            return _slow(value)
        if b"null" in out and _has_non_finite(value, True):
            return _slow(value)
        return out
    except Exception:
        return _slow(value)
    if b"null" in out and _has_non_finite(value):
        return _slow(value)
    return out


def signature(tool: str, args: Any) -> tuple[str, bytes]:
    """A call's signature: ``(tool, canonical_args(args))``."""
    return (tool, canonical_args(args))


def fingerprint(tool: str, sig: bytes) -> int:
    """A 64-bit fingerprint of a signature, never 0; stable within one process.

    Args:
        tool: the tool name.
        sig: the canonical arguments from :func:`canonical_args`.
    """
    return (hash((tool, sig)) & _MASK) or 1


class FingerprintSet:
    """An exact set of 64-bit integers in one open-addressed ``array('Q')``.

    Linear probing, load factor at most 0.7, doubling when full: 11 to 23 bytes per entry
    (about 16.8 at one million). ``0`` marks an empty slot, so a 0 is stored as 1 (fingerprints
    from :func:`fingerprint` are never 0).
    """

    __slots__ = ("_count", "_limit", "_mask", "_slots")

    def __init__(self, capacity: int = 1024) -> None:
        size = 8
        while size * 7 < capacity * 10:
            size *= 2
        self._slots = _ZERO * size
        self._mask = size - 1
        self._limit = size * 7 // 10
        self._count = 0

    def add(self, fp: int) -> bool:
        """Add ``fp`` (taken modulo 2**64); return True when it was not already present."""
        fp &= _MASK
        if not fp:
            fp = 1
        slots = self._slots
        mask = self._mask
        i = fp & mask
        while True:
            cur = slots[i]
            if cur == fp:
                return False
            if not cur:
                break
            i = (i + 1) & mask
        slots[i] = fp
        self._count += 1
        if self._count > self._limit:
            self._grow()
        return True

    def __contains__(self, fp: object) -> bool:
        if not isinstance(fp, int):
            return False
        fp = (fp & _MASK) or 1
        slots = self._slots
        mask = self._mask
        i = fp & mask
        while True:
            cur = slots[i]
            if cur == fp:
                return True
            if not cur:
                return False
            i = (i + 1) & mask

    def _grow(self) -> None:
        old = self._slots
        size = 2 * len(old)
        slots = _ZERO * size
        mask = size - 1
        for fp in old:
            if fp:
                i = fp & mask
                while slots[i]:
                    i = (i + 1) & mask
                slots[i] = fp
        self._slots = slots
        self._mask = mask
        self._limit = size * 7 // 10

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Bytes held by the slot array."""
        return len(self._slots) * self._slots.itemsize

    def __repr__(self) -> str:
        return f"FingerprintSet({self._count} entries, {self.nbytes} bytes)"
