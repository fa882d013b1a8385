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
which is all an evaluation needs); :class:`~toolscore._distinct.DistinctCounter` counts the
distinct ones in bounded memory.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

import msgspec
import orjson

__all__ = [
    "Canonical",
    "canonical_args",
    "canonical_json",
    "canonical_many",
    "fingerprint",
    "signature",
]

_FAST = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_NON_STR = _FAST | orjson.OPT_NON_STR_KEYS
_EMPTY: dict[str, Any] = {}


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


_encode_sorted = msgspec.json.Encoder(order="sorted").encode


def canonical_json(args: Any) -> bytes:
    """The canonical bytes of ``args or {}`` for values decoded from a JSON trace.

    Such values are plain JSON (string keys, no datetimes or sets), so msgspec writes them,
    keys sorted, at about twice orjson's speed; NaN and infinities (which a lenient decoder
    admits and msgspec would write as ``null``) and anything else msgspec refuses go through
    :func:`canonical_args`. Equal exactly when Toolscore's canonical JSON is, like
    :func:`canonical_args`, but not byte for byte the same as it (``1e+16`` is ``1e16``): the
    calls of one trace all go through this one.
    """
    value = args or _EMPTY
    try:
        out = _encode_sorted(value)
    except (TypeError, ValueError):  # non-str keys, lone surrogates
        return canonical_args(value)
    if b"null" in out and _has_non_finite(value):
        return canonical_args(value)
    return out


Canonical = Literal["strict", "json", "any"]
"""Where argument values come from: ``strict``, a strict JSON decoder (no NaN, string keys);
``json``, a JSON trace; ``any``, Python code (datetimes, sets, objects...)."""


def canonical_many(args: list[Any], kind: Canonical = "any") -> list[bytes]:
    """The canonical bytes of every item of ``args``: :func:`canonical_json` for values from
    a trace (for ``strict`` ones, in one C-level pass), :func:`canonical_args` for any other.
    """
    if kind == "strict":
        try:
            return list(map(_encode_sorted, args))  # dicts from the decoder: never falsy-{}
        except (TypeError, ValueError):
            kind = "json"
    if kind == "json":
        return [canonical_json(a) for a in args]
    return [canonical_args(a) for a in args]


def signature(tool: str, args: Any) -> tuple[str, bytes]:
    """A call's signature: ``(tool, canonical_args(args))``."""
    return (tool, canonical_args(args))


def fingerprint(tool: str, sig: bytes) -> int:
    """A signed 64-bit fingerprint of a signature; stable within one process (and its forks).

    Args:
        tool: the tool name.
        sig: the canonical arguments from :func:`canonical_args`.
    """
    return hash((tool, sig))
