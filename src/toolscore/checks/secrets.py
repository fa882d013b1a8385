"""The credential scan: API keys, tokens and private keys passed in tool arguments.

Every string at any depth of a call's arguments (dict values and list items, never keys) is
scanned with the ten patterns of :mod:`toolscore.redact`; each accepted match is one finding,
reported as soon as the call is read. Order: by call, then by string (depth first), then by
pattern order, as Toolscore does.

The common case costs one regex pass over a whole batch: the canonical JSON text of a call's
arguments (which the errors check needs too, so it is made once) holds every string of them,
unescaped where the credential prefixes are concerned, so the calls whose text shows no
candidate prefix need no closer look.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import orjson

from ..calls import Batch, Finding, Location, ToolCall
from ..redact import (
    _PREFILTER_BYTES,
    PREFILTER_SCAN,
    iter_strings,
    preview,
    redact_secrets,
    scan_text,
)
from ._base import BaseCheck, State

__all__ = ["SecretsCheck", "SecretsState", "find_secrets", "scan_call", "secrets_check"]


def _candidate(args: Any) -> bool:
    """False when no string in ``args`` can hold a credential (one dump, one search)."""
    try:
        raw = orjson.dumps(args, default=repr)
    except TypeError:
        return True  # values orjson cannot write (big ints, surrogates): walk them
    return _PREFILTER_BYTES.search(raw) is not None


_PLUS_ONE = (1).__add__


def _candidates(sigs: list[bytes]) -> list[int]:
    """The positions of the canonical argument texts in which a credential may start.

    The texts are searched as one, so a batch costs one regex pass in C; every string of an
    argument value is in its canonical text, with the credential prefixes' characters (ASCII
    letters, digits, ``-`` and ``_``) as they are.
    """
    text = b"\n".join(sigs)  # a canonical text never holds a raw newline
    first = PREFILTER_SCAN.search(text)
    if first is None:
        return []
    ends = list(accumulate(map(_PLUS_ONE, map(len, sigs))))  # each text and its newline
    hits: list[int] = []
    for m in PREFILTER_SCAN.finditer(text, first.start()):
        pos = bisect_right(ends, m.start())
        if not hits or hits[-1] != pos:
            hits.append(pos)
    return hits


def _scan(args: Any, tool: str, index: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for path, text in iter_strings(args):
        for _start, _end, kind, secret in scan_text(text):
            records.append(
                {
                    "index": index,
                    "tool": tool,
                    "path": path,
                    "kind": kind,
                    "preview": preview(kind, secret),
                }
            )
    return records


def scan_call(call: ToolCall, index: int | None = None) -> list[dict[str, Any]]:
    """The credential records of one call: ``{"index", "tool", "path", "kind", "preview"}``.

    Args:
        call: the call whose arguments are scanned.
        index: the index to record; ``call.index`` by default.
    """
    args = call.args
    if not args or not isinstance(args, (dict, list, tuple, str)) or not _candidate(args):
        return []
    return _scan(args, call.tool, call.index if index is None else index)


def find_secrets(calls: Iterable[ToolCall]) -> dict[str, Any]:
    """Toolscore's ``find_secrets``: scan every call (indexed by position) in one go.

    Returns:
        ``{"secret_count": n, "secrets": [records]}``.
    """
    secrets: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        secrets.extend(scan_call(call, i))
    return {"secret_count": len(secrets), "secrets": secrets}


_PASSES = "call {call} {tool} passes a credential ({kind}) in '{path}': {preview}"


def _finding(record: dict[str, Any], location: Location | None) -> Finding:
    return Finding(
        "secrets",
        record["kind"],
        "error",
        None,
        record["index"],
        record["tool"],
        location,
        record["preview"],
        path=redact_secrets(record["path"]),
        template=_PASSES,
    )


@dataclass(frozen=True)
class SecretsState(State):
    """The credentials found, in call order (``{"index", "tool", "path", "kind", "preview"}``),
    and the calls scanned."""

    check: str = field(default="secrets", kw_only=True)
    calls: int = 0
    secrets: tuple[dict[str, Any], ...] = ()

    def merge(self, later: SecretsState) -> SecretsState:
        if not later.calls:
            return self
        moved = [{**r, "index": r["index"] + self.calls} for r in later.secrets]
        return SecretsState(calls=self.calls + later.calls, secrets=(*self.secrets, *moved))

    def metrics(self) -> dict[str, Any]:
        """``{"security_metrics": {"secret_count", "secrets"}}``."""
        secrets = list(self.secrets)
        return {"security_metrics": {"secret_count": len(secrets), "secrets": secrets}}


class SecretsCheck(BaseCheck):
    """Scans each new call's arguments for credentials; see the module docstring."""

    name = "secrets"
    mergeable = True

    def __init__(self) -> None:
        self.secrets: list[dict[str, Any]] = []
        self.calls = 0

    def state(self) -> SecretsState:
        return SecretsState(calls=self.calls, secrets=tuple(self.secrets))

    def feed(self, batch: Batch) -> list[Finding]:
        cols = batch.columns()
        if not cols.n:
            return []
        self.calls += cols.n
        findings: list[Finding] = []
        all_args = cols.args
        for i in _candidates(cols.sigs()):
            args = all_args[i]
            if not args or not isinstance(args, (dict, list, tuple, str)):
                continue
            records = _scan(args, cols.tools[i], cols.index(i))
            if records:
                self.secrets.extend(records)
                location = cols.location(i)
                findings.extend(_finding(r, location) for r in records)
        return findings

    def metrics(self) -> dict[str, Any]:
        """:meth:`SecretsState.metrics` of the calls so far."""
        return self.state().metrics()


def secrets_check() -> SecretsCheck:
    """A fresh credential scan."""
    return SecretsCheck()
