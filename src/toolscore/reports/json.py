"""The JSON report, written in pieces so that memory stays flat however long the trace.

The content is Toolscore's record (``EvaluationResult.to_dict()``) with a ``timestamp``, a
``summary`` (the verdict for scripts) and every ``findings`` line; the order is timestamp,
summary, calls, findings, then the rest of the record, so that the calls can go into the
file as they are read (:class:`JsonReport`, the CLI's ``on_calls`` sink). A part of a trace
read by another process spools its calls to a file (:class:`CallSpool`) that the report then
takes in, in the kernel; findings beyond those the result keeps are spooled the same way
(:class:`FindingSpool`). :func:`write_json_report` writes the report of an evaluation done
already, from such spools or from the result's own calls.

The record keeps arguments as recorded, credentials included (treat it like the trace).

Where things are: writing bytes (``dumps``, the background writer, kernel copies) in
``_json_io``; the spools and a finding's line in ``_json_spool``; the report here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import IO, Any

from ..calls import ToolCall
from ..columns import Columns, call_json, record_bytes, write_joined
from ..outputs import AtomicOutput, user_os_error
from ..result import expected_record
from ..verdict import judge
from . import ReportResult, failed_calls, rule_violation_count, secret_count, violation_count
from ._json_io import (
    MAX_QUEUED,
    BackgroundWriter,
    _Closing,
    _copy,
    _copy_range,
    dumps,
    joined,
)
from ._json_spool import CallSpool, FindingSpool, finding_line, findings_lines

__all__ = [
    "MAX_QUEUED",
    "BackgroundWriter",
    "CallSpool",
    "FindingSpool",
    "JsonReport",
    "dumps",
    "finding_line",
    "findings_lines",
    "joined",
    "summary",
    "write_json_report",
]

_OWN_KEYS = frozenset({"timestamp", "summary", "findings"})


def summary(result: ReportResult, record: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict for scripts: counts, score, grade, weights and the safety totals."""
    error = result.input_error
    verdict = judge(result)
    out = {
        "gold_calls_count": record.get("gold_calls_count", len(result.gold_calls)),
        "trace_calls_count": record.get("trace_calls_count", result.trace_calls_count),
        "score": record.get("score", result.score),
        "grade": record.get("grade", result.grade),
        "weights": record.get("weights"),
        "required_call_recall": result.required_call_recall,
        "failed_calls": failed_calls(result),
        "policy_violations": violation_count(result),
        "secrets": secret_count(result),
        "violations": verdict.violations.total,
        "violations_by_kind": verdict.violations.to_json(),
        "passed": verdict.passed,
        "pass_criterion": verdict.criterion.describe(),
        "complete": error is None,
        "input_error": None if error is None else error.to_json(),
        "input_problems": result.input_problems,
    }
    rules = result.metrics.get("rule_metrics")
    if isinstance(rules, Mapping):  # hard rules were given
        out["rule_violations"] = rule_violation_count(result)
        if rules.get("match"):
            out["match"] = {mode: v.get("passed") for mode, v in rules["match"].items()}
    return out


def _indented(value: Any, level: int) -> bytes:
    # JSON strings never hold a raw newline, so re-indenting the lines is safe
    return dumps(value, indent=True).replace(b"\n", b"\n" + b"  " * level)


ROOM = 4096
"""Bytes kept at the top of a report for its timestamp and summary, known only at the end."""
_SMALL = 1 << 20
"""A report whose calls take less than this is rewritten without the room's padding."""


class JsonReport(_Closing):
    """The JSON report, written while the trace is read: its calls go straight into it.

    The layout is ``timestamp`` and ``summary`` (the verdict, first, for scripts and readers
    that stop early), ``calls`` (``expected``, then ``actual`` as they are read), every
    ``findings`` line, then the rest of :meth:`EvaluationResult.to_dict` (``schema_version``,
    ``score``, ``grade``, ``weights``, ``required_call_recall``, ``metrics``, the counts).
    The timestamp and summary go into room left at the top (padded with JSON whitespace); a
    small report is rewritten without the padding, a big one keeps it rather than copying its
    calls once more. The file is written next to ``path`` and renamed onto it at the end.

    Use it as the ``on_calls`` sink of an evaluation::

        with JsonReport("toolscore.json", gold) as report:
            result = evaluate_trace(gold, trace, on_calls=report)
            report.finish(result)

    Args:
        path: where the report goes.
        gold: the expected calls, for ``calls.expected``.
    """

    separator = CallSpool.separator

    def __init__(self, path: str | os.PathLike[str], gold: Sequence[ToolCall] = ()) -> None:
        self.path = os.fspath(path)
        # beside the report (renamed onto it at the end), or in the temporary directory for a
        # device, FIFO or socket (copied into it at the end): see toolscore.outputs
        self._output = AtomicOutput(self.path, suffix=".json.part")
        self.directory = self._output.directory
        self._out: IO[bytes] = self._output.file
        self.count = 0
        expected = _indented([expected_record(g) for g in gold], 2)
        self._out.write(b"{" + b" " * ROOM + b'\n  "calls": {\n    "expected": ' + expected)
        self._out.write(b',\n    "actual": [\n      ')
        self._start = self._out.tell()
        """Where the calls begin."""
        self._writer = BackgroundWriter(self._out, self.path)
        """Writes the calls' records; :meth:`_wait` drains it before the file is touched."""
        self._done = False
        self._copies: list[threading.Thread] = []
        self._copy_error: OSError | None = None

    def _write_records(self, records: list[bytes]) -> None:
        self.count += write_joined(self._writer.write, records, self.separator)

    def __call__(self, calls: list[ToolCall]) -> None:
        out, n = joined(map(call_json, calls), self.separator)
        if n:
            self._writer.write(out)
            self.count += n

    def take_columns(self, columns: Columns) -> None:
        """Write a batch given as columns (a decoded block encodes its records in C)."""
        self.count += columns.write_records(self._writer.write, self.separator)

    def adopt(self, path: str | os.PathLike[str], count: int) -> None:
        """Append ``count`` records spooled elsewhere (a part read by another process).

        The copy runs in the kernel, in a thread of its own, into room reserved for it at
        the end of the report, while the caller goes on (merging the part's findings, say);
        :meth:`finish` waits for it.
        """
        if not count:
            return
        self._writer.drain()
        src = os.open(path, os.O_RDONLY)
        size = os.fstat(src).st_size
        out = self._out
        out.flush()
        offset = out.seek(0, os.SEEK_END)
        os.ftruncate(out.fileno(), offset + size)  # the room; the copy fills it
        out.seek(0, os.SEEK_END)
        thread = threading.Thread(
            target=self._copy_part, args=(src, out.fileno(), size, offset), daemon=True
        )
        thread.start()
        self._copies.append(thread)
        self.count += count

    def _copy_part(self, src: int, dst: int, size: int, offset: int) -> None:
        try:
            _copy_range(src, dst, size, offset)
        except OSError as exc:
            self._copy_error = exc
        finally:
            os.close(src)

    def _wait(self) -> None:
        self._writer.drain()
        for thread in self._copies:
            thread.join()
        self._copies = []
        if self._copy_error is not None:
            raise self._copy_error

    def finish(
        self,
        result: ReportResult,
        *,
        findings: FindingSpool | None = None,
        now: datetime | None = None,
    ) -> None:
        """Write the rest of the report and put it at :attr:`path`.

        Args:
            result: the evaluation result.
            findings: every finding as spooled; without it, ``result.findings``.
            now: the timestamp (default: now, local time, ISO 8601).

        Raises:
            OSError: the report could not be written; it names :attr:`path`.
        """
        try:
            self._finish(result, findings, now)
        except OSError as exc:
            raise user_os_error(exc, self.path) from None

    def _finish(
        self, result: ReportResult, findings: FindingSpool | None, now: datetime | None
    ) -> None:
        self._wait()
        out = self._out
        record = result.to_dict()
        if not self.count:  # the result's own calls: all of them for an in-memory result
            calls = record.get("calls")
            if isinstance(calls, Mapping):
                self._write_records([record_bytes(c) for c in calls.get("actual", [])])
        self._writer.drain()
        self._writer.stop()
        if self.count:
            out.seek(-len(self.separator), os.SEEK_END)
            out.truncate()
            out.write(b"\n    ]\n  }")
        else:
            out.seek(self._start - len(b"[\n      "))
            out.truncate()
            out.write(b"[]\n  }")
        out.write(b',\n  "findings": ')
        if findings is not None and findings.count:
            out.write(b"[\n    ")
            findings.copy_to(out)
            out.write(b"\n  ]")
        else:
            out.write(_indented([f.to_json() for f in result.findings], 1))
        for key, value in record.items():
            if key not in _OWN_KEYS and key != "calls":
                out.write(b",\n  " + dumps(key) + b": " + _indented(value, 1))
        out.write(b"\n}\n")
        head = b'\n  "timestamp": ' + dumps((now or datetime.now()).isoformat())
        head += b',\n  "summary": ' + _indented(summary(result, record), 1) + b","
        out.flush()
        if len(head) <= ROOM and out.tell() - self._start >= _SMALL:
            out.seek(1)
            out.write(head.ljust(ROOM))  # JSON whitespace pads the room
        else:
            self._compact(head)
        self._output.commit()
        self._done = True

    def _compact(self, head: bytes) -> None:
        """Rewrite the report with ``head`` in place of the room."""
        out = self._out
        size = out.seek(0, os.SEEK_END)
        new = self._output.sibling()
        try:
            new.file.write(b"{" + head)
            out.seek(1 + ROOM)
            _copy(out, new.file, size - 1 - ROOM, start=1 + ROOM)
        except BaseException:
            new.discard()
            raise
        self._output.discard()
        self._output = new
        self._out = new.file

    def close(self) -> None:
        """Delete the unfinished report (after :meth:`finish`, nothing to do)."""
        if not self._done:
            self._writer.stop()
            for thread in self._copies:
                thread.join()
            self._output.discard()
            self._done = True


def write_json_report(
    result: ReportResult,
    path: str | os.PathLike[str],
    spool: CallSpool | None = None,
    *,
    findings: FindingSpool | None = None,
    now: datetime | None = None,
) -> None:
    """Write the JSON report (see :class:`JsonReport`) of an evaluation done already.

    Args:
        result: the evaluation result.
        path: where to write.
        spool: the calls as spooled during the evaluation; without it the calls are those
            ``result.to_dict()`` lists (all of them for in-memory results).
        findings: every finding as spooled; without it, ``result.findings``.
        now: the timestamp (default: now, local time, ISO 8601).
    """
    with JsonReport(path, result.gold_calls) as report:
        if spool is not None and spool.count:
            for fh, size in spool._files():
                _copy(fh, report._out, size)
            report.count += spool.count
        report.finish(result, findings=findings, now=now)
