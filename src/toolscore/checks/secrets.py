"""The credential scan: API keys, tokens and private keys passed in tool arguments.

Every string at any depth of a call's arguments (dict values and list items, never keys) is
scanned with the ten patterns of :mod:`toolscore.redact`; each accepted match is one finding,
reported as soon as the call is read. Order: by call, then by string (depth first), then by
pattern order, as Toolscore does.

The common case costs one orjson dump and one prefilter search per call: the arguments'
JSON bytes hold every string (unescaped where the prefixes are concerned), so when the
prefilter finds no candidate prefix there, no string of the call needs a look.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..calls import Batch, Finding, ToolCall
from ..redact import _PREFILTER_BYTES, iter_strings, preview, redact_secrets, scan_text
from ._base import BaseCheck

__all__ = ["SecretsCheck", "find_secrets", "scan_call", "secrets_check"]


def _candidate(args: Any) -> bool:
    """False when no string in ``args`` can hold a credential (one dump, one search)."""
    try:
        raw = orjson.dumps(args, default=repr)
    except TypeError:
        return True  # values orjson cannot write (big ints, surrogates): walk them
    return _PREFILTER_BYTES.search(raw) is not None


def scan_call(call: ToolCall, index: int | None = None) -> list[dict[str, Any]]:
    """The credential records of one call: ``{"index", "tool", "path", "kind", "preview"}``.

    Args:
        call: the call whose arguments are scanned.
        index: the index to record; ``call.index`` by default.
    """
    args = call.args
    if not args or not isinstance(args, (dict, list, tuple, str)) or not _candidate(args):
        return []
    at = call.index if index is None else index
    records: list[dict[str, Any]] = []
    for path, text in iter_strings(args):
        for _start, _end, kind, secret in scan_text(text):
            records.append(
                {
                    "index": at,
                    "tool": call.tool,
                    "path": path,
                    "kind": kind,
                    "preview": preview(kind, secret),
                }
            )
    return records


def find_secrets(calls: Iterable[ToolCall]) -> dict[str, Any]:
    """Toolscore's ``find_secrets``: scan every call (indexed by position) in one go.

    Returns:
        ``{"secret_count": n, "secrets": [records]}``.
    """
    secrets: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        secrets.extend(scan_call(call, i))
    return {"secret_count": len(secrets), "secrets": secrets}


def _finding(call: ToolCall, record: dict[str, Any]) -> Finding:
    i = record["index"]
    path = redact_secrets(record["path"])
    return Finding(
        check="secrets",
        kind=record["kind"],
        severity="error",
        message=(
            f"call {i + 1} {call.tool} passes a credential ({record['kind']}) "
            f"in '{path}': {record['preview']}"
        ),
        call_index=i,
        tool=call.tool,
        location=call.location,
        preview=record["preview"],
    )


class SecretsCheck(BaseCheck):
    """Scans each new call's arguments for credentials; see the module docstring."""

    name = "secrets"

    def __init__(self) -> None:
        self.secrets: list[dict[str, Any]] = []

    def feed(self, batch: Batch) -> list[Finding]:
        findings: list[Finding] = []
        for call in batch.calls:
            args = call.args
            if not args or not isinstance(args, (dict, list, tuple, str)):
                continue
            records = scan_call(call)
            if records:
                self.secrets.extend(records)
                findings.extend(_finding(call, r) for r in records)
        return findings

    def metrics(self) -> dict[str, Any]:
        """``{"security_metrics": {"secret_count", "secrets"}}``."""
        return {"security_metrics": {"secret_count": len(self.secrets), "secrets": self.secrets}}


def secrets_check() -> SecretsCheck:
    """A fresh credential scan."""
    return SecretsCheck()
