"""The credential scan: API keys, tokens and private keys passed in tool calls, and, when
asked, personal data.

Every string at any depth of a call's arguments (dict values, list items and dict keys) and
the call's tool name are scanned with the credential patterns of :mod:`toolscore.redact`
(and its personal-data patterns, with ``pii=``); each accepted match is one finding, reported
as soon as the call is read. A key's path reads ``<key> parent.key``, a tool name's
``<tool name>``. Order: by call, then the tool name, then by string (depth first, a dict key
before its value), then by pattern order, as Toolscore does.

The common case costs one regex pass over a whole batch: the canonical JSON text of a call's
arguments (which the errors check needs too, so it is made once) holds every string and key
of them, unescaped where the credential prefixes are concerned, so the calls whose text shows
no candidate prefix need no closer look. Tool names are few: each distinct one is scanned once.

Credentials go to ``security_metrics["secrets"]`` (Toolscore's layout) as findings of check
``secrets``; personal data to ``security_metrics["pii"]`` as findings of check ``pii``, both
of severity ``error``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import orjson

from ..calls import Batch, Finding, Location, ToolCall
from ..capped import MAX_RECORDS
from ..redact import (
    PII_KINDS,
    PREFILTER_SCAN,
    active_pii,
    iter_texts,
    may_contain_secret,
    pii_kinds,
    pii_prefilter,
    preview,
    redact_secrets,
    scan_text,
)
from ._base import BaseCheck, State

__all__ = [
    "TOOL_NAME_PATH",
    "SecretsCheck",
    "SecretsState",
    "ToolNames",
    "candidates",
    "find_secrets",
    "scan_call",
    "secrets_check",
]


def _candidate(args: Any, pii: frozenset[str] = frozenset()) -> bool:
    """False when no string in ``args`` can hold a credential (one dump, one search)."""
    try:
        raw = orjson.dumps(args, default=repr)
    except TypeError:
        return True  # values orjson cannot write (big ints, surrogates): walk them
    if pii:
        return pii_prefilter(pii).search(raw) is not None
    return may_contain_secret(raw)


_PLUS_ONE = (1).__add__


def candidates(sigs: list[bytes], scan: Any = PREFILTER_SCAN) -> list[int]:
    """The positions of the canonical argument texts in which a credential may start.

    The texts are searched as one, so a batch costs one regex pass in C; every string of an
    argument value is in its canonical text, with the credential prefixes' characters (ASCII
    letters, digits, ``-`` and ``_``) as they are.
    """
    text = b"\n".join(sigs)  # a canonical text never holds a raw newline
    first = scan.search(text)
    if first is None:
        return []
    ends = list(accumulate(map(_PLUS_ONE, map(len, sigs))))  # each text and its newline
    hits: list[int] = []
    for m in scan.finditer(text, first.start()):
        pos = bisect_right(ends, m.start())
        if not hits or hits[-1] != pos:
            hits.append(pos)
    return hits


TOOL_NAME_PATH = "<tool name>"
"""The path of a credential found in a call's tool name."""


def _record(index: int, tool: str, path: str, kind: str, secret: str) -> dict[str, Any]:
    return {
        "index": index,
        "tool": tool,
        "path": path,
        "kind": kind,
        "preview": preview(kind, secret),
    }


def _scan(
    args: Any, tool: str, index: int, pii: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for path, text, known in iter_texts(args):
        if known is not None:
            records.append(_record(index, tool, path, known, text))
            continue
        for _start, _end, kind, secret in scan_text(text, pii):
            records.append(_record(index, tool, path, kind, secret))
    return records


def _scan_tool(tool: str, pii: frozenset[str]) -> list[tuple[str, str]]:
    """``(kind, preview)`` of what a tool name holds."""
    return [(kind, preview(kind, secret)) for _s, _e, kind, secret in scan_text(tool, pii)]


def scan_call(
    call: ToolCall, index: int | None = None, pii: bool | Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """The credential records of one call: ``{"index", "tool", "path", "kind", "preview"}``.

    Args:
        call: the call whose tool name and arguments are scanned.
        index: the index to record; ``call.index`` by default.
        pii: personal-data kinds to look for too (``True``: every kind).
    """
    kinds = pii_kinds(pii)
    at = call.index if index is None else index
    records = [
        {"index": at, "tool": call.tool, "path": TOOL_NAME_PATH, "kind": kind, "preview": shown}
        for kind, shown in _scan_tool(call.tool, kinds)
    ]
    args = call.args
    if not args or not isinstance(args, (dict, list, tuple, str)) or not _candidate(args, kinds):
        return records
    return records + _scan(args, call.tool, at, kinds)


def find_secrets(calls: Iterable[ToolCall]) -> dict[str, Any]:
    """Toolscore's ``find_secrets``: scan every call (indexed by position) in one go.

    Returns:
        ``{"secret_count": n, "secrets": [records]}``.
    """
    secrets: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        secrets.extend(scan_call(call, i))
    return {"secret_count": len(secrets), "secrets": secrets}


_PII = frozenset(PII_KINDS)
_PASSES = "call {call} {tool} passes a credential ({kind}) in '{path}': {preview}"
_PASSES_PII = "call {call} {tool} passes personal data ({kind}) in '{path}': {preview}"


def _finding(record: dict[str, Any], location: Location | None) -> Finding:
    personal = record["kind"] in _PII
    return Finding(
        "pii" if personal else "secrets",
        record["kind"],
        "error",
        None,
        record["index"],
        redact_secrets(record["tool"]),
        location,
        record["preview"],
        path=redact_secrets(record["path"]),
        template=_PASSES_PII if personal else _PASSES,
    )


_TOOL_CACHE = 4096
"""Distinct tool names whose scan is remembered (then the memory starts afresh)."""


class ToolNames:
    """What each tool name holds (``(kind, preview)`` pairs; personal data too with ``pii``),
    scanned once per distinct name: a check's own memory, or one shared by the checks of many
    traces (a dataset's worker). Each lookup keeps what it read, so a shared memory starting
    afresh meanwhile (past :data:`_TOOL_CACHE` names) never loses a hit."""

    def __init__(self, pii: frozenset[str]) -> None:
        self.pii = pii
        self._known: dict[str, list[tuple[str, str]]] = {}

    def hits(self, tools: list[str]) -> dict[str, list[tuple[str, str]]]:
        """The names among ``tools`` that hold something, with what they hold."""
        known = self._known
        out: dict[str, list[tuple[str, str]]] = {}
        for tool in set(tools):
            found = known.get(tool)
            if found is None:
                if len(known) > _TOOL_CACHE:
                    known.clear()
                found = known[tool] = _scan_tool(tool, self.pii)
            if found:
                out[tool] = found
        return out


_NAMES: dict[frozenset[str], ToolNames] = {}
"""The process's memory of scanned tool names, per set of personal-data kinds."""


def _process_names(pii: frozenset[str]) -> ToolNames:
    """The process's :class:`ToolNames` for ``pii`` (the checks of every trace share it:
    ``evaluate()`` in a loop scans each distinct tool name once, not once per trace)."""
    names = _NAMES.get(pii)
    if names is None:
        names = _NAMES[pii] = ToolNames(pii)
    return names


@dataclass(frozen=True)
class SecretsState(State):
    """The credentials found, in call order (``{"index", "tool", "path", "kind", "preview"}``),
    the personal data found (same records) and the kinds looked for, and the calls scanned."""

    check: str = field(default="secrets", kw_only=True)
    calls: int = 0
    secrets: tuple[dict[str, Any], ...] = ()
    pii: tuple[dict[str, Any], ...] = ()
    pii_kinds: frozenset[str] = frozenset()
    counts: tuple[int, int] = (-1, -1)
    """Every credential and every piece of personal data found, counted; the records keep the
    first :data:`~toolscore.capped.MAX_RECORDS` of each (``-1``: the records' length)."""

    @property
    def secret_count(self) -> int:
        return len(self.secrets) if self.counts[0] < 0 else self.counts[0]

    @property
    def pii_count(self) -> int:
        return len(self.pii) if self.counts[1] < 0 else self.counts[1]

    def merge(self, later: SecretsState) -> SecretsState:
        if not later.calls:
            return self
        shift = self.calls
        room_s = max(MAX_RECORDS - len(self.secrets), 0)
        room_p = max(MAX_RECORDS - len(self.pii), 0)
        return SecretsState(
            calls=self.calls + later.calls,
            secrets=(
                *self.secrets,
                *({**r, "index": r["index"] + shift} for r in later.secrets[:room_s]),
            ),
            pii=(*self.pii, *({**r, "index": r["index"] + shift} for r in later.pii[:room_p])),
            pii_kinds=self.pii_kinds | later.pii_kinds,
            counts=(
                self.secret_count + later.secret_count,
                self.pii_count + later.pii_count,
            ),
        )

    def metrics(self) -> dict[str, Any]:
        """``{"security_metrics": {"secret_count", "secrets"}}``, with ``pii_kinds``,
        ``pii_count`` and ``pii`` when personal data was looked for (``secrets_omitted``,
        ``pii_omitted`` past :data:`~toolscore.capped.MAX_RECORDS` records)."""
        secrets = list(self.secrets)
        security: dict[str, Any] = {"secret_count": self.secret_count, "secrets": secrets}
        if self.secret_count > len(secrets):  # the JSON report's findings have every one
            security["secrets_omitted"] = self.secret_count - len(secrets)
        if self.pii_kinds:
            security["pii_kinds"] = [k for k in PII_KINDS if k in self.pii_kinds]
            security["pii_count"] = self.pii_count
            security["pii"] = list(self.pii)
            if self.pii_count > len(self.pii):
                security["pii_omitted"] = self.pii_count - len(self.pii)
        return {"security_metrics": security}


class SecretsCheck(BaseCheck):
    """Scans each new call's tool name and arguments for credentials (and personal data, with
    ``pii``); see the module docstring."""

    name = "secrets"
    mergeable = True

    def __init__(
        self, pii: bool | Iterable[str] | None = None, tool_names: ToolNames | None = None
    ) -> None:
        self.pii_kinds = active_pii() if pii is None else pii_kinds(pii)
        """The personal-data kinds looked for (empty: none; by default those of the enclosing
        :func:`~toolscore.redact.pii_redaction` block)."""
        self.secrets: list[dict[str, Any]] = []
        self.pii: list[dict[str, Any]] = []
        """The first :data:`~toolscore.capped.MAX_RECORDS` records of each (each is a finding)."""
        self.secret_count = 0
        self.pii_count = 0
        """Every record, counted."""
        self.calls = 0
        self._scan = pii_prefilter(self.pii_kinds)
        self._names = (
            tool_names
            if tool_names is not None and tool_names.pii == self.pii_kinds
            else _process_names(self.pii_kinds)
        )
        """The tool names scanned so far (``tool_names`` when it looks for the same kinds;
        else the process's memory for these kinds: a name's scan depends on the name and the
        kinds only)."""

    def state(self) -> SecretsState:
        return SecretsState(
            calls=self.calls,
            secrets=tuple(self.secrets),
            pii=tuple(self.pii),
            pii_kinds=self.pii_kinds,
            counts=(self.secret_count, self.pii_count),
        )

    def _keep(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            if record["kind"] in _PII:
                self.pii_count += 1
                if len(self.pii) < MAX_RECORDS:
                    self.pii.append(record)
            else:
                self.secret_count += 1
                if len(self.secrets) < MAX_RECORDS:
                    self.secrets.append(record)

    def feed(self, batch: Batch) -> list[Finding]:
        cols = batch.columns()
        if not cols.n:
            return []
        self.calls += cols.n
        findings: list[Finding] = []
        tools = cols.tools
        named = self._names.hits(tools)
        hits = candidates(cols.sigs(), self._scan)
        if named:
            hits = sorted(set(hits).union(i for i, tool in enumerate(tools) if tool in named))
        all_args = cols.args
        for i in hits:
            tool = tools[i]
            index = cols.index(i)
            records = [
                {"index": index, "tool": tool, "path": TOOL_NAME_PATH, "kind": k, "preview": p}
                for k, p in named.get(tool, ())
            ]
            args = all_args[i]
            if args and isinstance(args, (dict, list, tuple, str)):
                records.extend(_scan(args, tool, index, self.pii_kinds))
            if records:
                self._keep(records)
                location = cols.location(i)
                findings.extend(_finding(r, location) for r in records)
        return findings

    def metrics(self) -> dict[str, Any]:
        """:meth:`SecretsState.metrics` of the calls so far."""
        return self.state().metrics()


def secrets_check(
    pii: bool | Iterable[str] | None = None, tool_names: ToolNames | None = None
) -> SecretsCheck:
    """A fresh credential scan (looking for the personal-data kinds ``pii`` too); with
    ``tool_names``, the tool names already scanned by other checks are not scanned again."""
    return SecretsCheck(pii, tool_names)
