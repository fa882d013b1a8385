"""The per-trace record a dataset run produces, and what counts as a pass.

A :class:`TraceRecord` is small (a few hundred bytes) and plain: it crosses process and
cluster boundaries, is written to ``--per-trace`` as one JSON line (or one Parquet row), and
is all the dataset aggregate sees of a trace.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import IO, Any, Literal

import msgspec

from ..redact import redact_each
from ..verdict import PassCriterion
from .ci import TraceView

__all__ = [
    "STATUSES",
    "PassCriterion",
    "Status",
    "TraceRecord",
    "pack_records",
    "read_records",
    "record_fields",
    "record_line",
    "record_lines",
    "unpack_records",
    "write_records",
]

Status = Literal["ok", "error", "no_gold", "no_trace"]
STATUSES: tuple[str, ...] = ("ok", "error", "no_gold", "no_trace")
"""``ok``: evaluated; ``error``: evaluated as far as it could be read (the calls before a fault
are scored) or not at all (``score`` is then ``None``), with ``error`` saying what and where;
``no_gold``: a trace without gold (its calls were checked, but it has no score); ``no_trace``:
gold without a trace."""


class TraceRecord(msgspec.Struct, kw_only=True, omit_defaults=False):
    """One trace's outcome."""

    trace_id: str
    task: str
    status: Status = "ok"
    score: float | None = None
    grade: str | None = None
    passed: bool | None = None
    """Whether the trace passed (see :class:`PassCriterion`); ``None`` without a score."""
    calls: int = 0
    expected_calls: int = 0
    selection_accuracy: float | None = None
    argument_f1: float | None = None
    sequence_accuracy: float | None = None
    required_call_recall: float | None = None
    failed_calls: int = 0
    retries: int = 0
    violations: int = 0
    """Violations of every kind (forbidden calls, credentials, broken rules, personal data)."""
    matches: dict[str, bool] = msgspec.field(default_factory=dict)
    """The trajectory match modes the rules asked for, each with whether it passed."""
    findings: dict[str, int] = msgspec.field(default_factory=dict)
    """Findings by ``check/kind``."""
    tools: dict[str, list[int]] = msgspec.field(default_factory=dict)
    """Per tool: ``[calls, failed, retries]``."""
    source: str | None = None
    """The file the trace was read from."""
    line: int | None = None
    """Its first line (JSON Lines) in ``source``."""
    offset: int | None = None
    """Or its byte offset, for a JSON document."""
    error: str | None = None
    """What went wrong and where (file, line or byte offset), already redacted."""
    order: tuple[int, int] = (0, 0)
    """(part, position): where the trace sits in the dataset's reading order."""
    ci: TraceView | None = None
    """What the CI outputs need of the trace (``details=True`` only; never written out)."""
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    """The fields ``--group-by`` names that were read from the trace's first line (written
    out only when there are some)."""


_ENCODER = msgspec.json.Encoder()
_PACK = msgspec.msgpack.Encoder()
_UNPACK = msgspec.msgpack.Decoder(list[TraceRecord])


def pack_records(records: list[TraceRecord]) -> bytes:
    """Records as one MessagePack buffer, encoded in C (a quarter of pickling them one object
    at a time): how they cross to the driver and wait on disk."""
    return _PACK.encode(records)


def unpack_records(data: bytes) -> list[TraceRecord]:
    """What :func:`pack_records` packed."""
    return _UNPACK.decode(data)


def write_records(f: IO[bytes], records: list[TraceRecord]) -> None:
    """Append records to a spool file as one frame (its length, then :func:`pack_records`)."""
    data = pack_records(records)
    f.write(len(data).to_bytes(8, "little") + data)


def read_records(f: IO[bytes]) -> Iterator[list[TraceRecord]]:
    """The frames of a spool file from where ``f`` is, one list of records each."""
    while size := int.from_bytes(f.read(8), "little"):
        yield unpack_records(f.read(size))


def record_fields(record: TraceRecord, *, clean: bool = False) -> dict[str, Any]:
    """The record as written out (without ``order`` and ``ci``), with every credential in its
    trace id, task, source file and tool names redacted: ids, names and file names are not
    arguments (only arguments stay raw, in the single-trace JSON report). ``clean``: these
    texts are known to hold nothing to redact (:func:`record_lines` searched them)."""
    data = msgspec.structs.asdict(record)
    del data["order"], data["ci"]
    if not data["fields"]:
        del data["fields"]
    if clean:
        return data
    texts = _texts(record)
    shown = redact_each(texts)
    if shown is not texts:
        data["trace_id"], data["task"] = shown[0], shown[1]
        data["source"] = shown[2] if record.source is not None else None
        tools: dict[str, list[int]] = {}
        for name, counts in zip(shown[3:], record.tools.values(), strict=True):
            before = tools.get(name)  # two names alike once redacted: one row, summed
            tools[name] = (
                counts if before is None else [a + b for a, b in zip(before, counts, strict=True)]
            )
        data["tools"] = tools
    return data


def _texts(record: TraceRecord) -> list[str]:
    return [record.trace_id, record.task, record.source or "", *record.tools]


def record_line(record: TraceRecord) -> bytes:
    """The record as one JSON line (:func:`record_fields`), newline included."""
    return _ENCODER.encode(record_fields(record)) + b"\n"


def record_lines(records: Sequence[TraceRecord]) -> bytes:
    """The records' JSON lines (:func:`record_line` of each): one credential prefilter
    search for all their ids, names and files (usually finding none), not one a record."""
    texts = [text for record in records for text in _texts(record)]
    clean = redact_each(texts) is texts
    encode = _ENCODER.encode
    return b"".join([encode(record_fields(r, clean=clean)) + b"\n" for r in records])


def finite(value: Any) -> float | None:
    """``value`` as a float, or ``None`` when absent or not finite."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None
