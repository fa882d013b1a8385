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
"""

from __future__ import annotations

import contextlib
import json as _stdlib_json
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import IO, Any, TypeVar

import orjson

from ..calls import Finding, ToolCall
from ..columns import Columns, call_json, record_bytes, write_joined
from ..outputs import file_mode, open_stream, resolve_output, user_os_error
from ..result import expected_record, json_safe
from ..verdict import judge
from . import ReportResult, failed_calls, rule_violation_count, secret_count, violation_count

__all__ = [
    "MAX_QUEUED",
    "BackgroundWriter",
    "CallSpool",
    "FindingSpool",
    "JsonReport",
    "dumps",
    "finding_line",
    "joined",
    "summary",
    "write_json_report",
]

_Self = TypeVar("_Self", bound="_Closing")
_OPTIONS = orjson.OPT_NON_STR_KEYS
_CHUNK = 1 << 20
MAX_QUEUED = 4
"""Writes queued for a :class:`BackgroundWriter` at most (a batch makes two: its records and a
separator; a batch's records are a few hundred KB)."""
_OWN_KEYS = frozenset({"timestamp", "summary", "findings"})


def _default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return repr(obj)


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """``value`` as JSON bytes; what JSON cannot hold is stored as its ``repr``.

    orjson does the work; values it refuses outright (integers beyond 64 bits) go through
    ``json_safe`` and, failing that, the standard library.
    """
    option = _OPTIONS | orjson.OPT_INDENT_2 if indent else _OPTIONS
    try:
        return orjson.dumps(value, default=_default, option=option)
    except TypeError:
        safe = json_safe(value)
        try:
            return orjson.dumps(safe, default=_default, option=option)
        except TypeError:
            text = _stdlib_json.dumps(safe, default=repr, indent=2 if indent else None)
            return text.encode("utf-8", "surrogatepass")


class _Closing:
    """``with`` closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def joined(texts: Iterable[bytes], separator: bytes) -> tuple[memoryview, int]:
    """Records made one at a time (JSON texts), each followed by ``separator``, in one
    buffer; and how many. Each text is copied in as soon as it is made, never held in a
    list: orjson's result takes at least 4 KiB of memory whatever its length, so a batch of
    4,000 findings held as a list took 16 MB."""
    out = bytearray()
    n = 0
    for text in texts:
        out += text
        out += separator
        n += 1
    return memoryview(out), n


class BackgroundWriter:
    """Appends to a file from a thread of its own, so that the kernel's share of a write
    (copying into the page cache, faulting its pages in) runs beside the reading instead of
    after it: ``write()`` waits only when :data:`MAX_QUEUED` writes are already queued, which
    bounds the memory held.

    The thread starts at the first write, not before: a trace read in parts forks its
    processes first, and a process that forks should have no other thread. Before anyone
    else touches the file (seek, tell, copy), :meth:`drain` waits for the queued writes and
    raises the first error one of them met.
    """

    def __init__(self, file: IO[bytes], name: str | None = None) -> None:
        self.file = file
        self.name = name
        """The path an error names (the user's report, not the temporary file)."""
        self._queue: queue.Queue[bytes | memoryview | None] = queue.Queue(MAX_QUEUED)
        self._thread: threading.Thread | None = None
        self._error: Exception | None = None

    @property
    def running(self) -> bool:
        """Whether the thread is running (it starts at the first write, ends at :meth:`stop`)."""
        return self._thread is not None

    def write(self, data: bytes | memoryview) -> None:
        if self._error is not None:
            raise self._error
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="toolscore-writer")
            self._thread.daemon = True
            self._thread.start()
        self._queue.put(data)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            try:
                if data is None:
                    return
                if self._error is None:
                    self.file.write(data)
            except OSError as exc:  # kept for the caller; the thread must live on to drain
                self._error = exc if self.name is None else user_os_error(exc, self.name)
            except Exception as exc:
                self._error = exc
            finally:
                self._queue.task_done()

    def drain(self) -> None:
        """Wait for every queued write; raise the first error met."""
        if self._thread is not None:
            self._queue.join()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """End the thread (queued writes are done first); errors are not raised here."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None


class _LineSpool(_Closing):
    """A temporary file of JSON records, each written with the separator that follows it in
    the report, so that the report takes the file as it is (in the kernel, with
    ``copy_file_range``, where the system has it) instead of reading and rewriting it.

    Memory use is one batch. A spool may also hold other spools' files, appended in order
    (the parts of a trace read by several processes).
    """

    separator = b",\n"

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        self._file: IO[bytes] = (
            tempfile.TemporaryFile(dir=directory) if path is None else open(path, "w+b")
        )
        self._writer = BackgroundWriter(self._file)
        self._files_in_order: list[IO[bytes]] = [self._file]
        """The spool's own files and the adopted ones, in record order."""
        self._adopted = False
        """Whether the last file is an adopted one (the next write starts a new file)."""
        self.count = 0
        self.directory: str | None = None if directory is None else os.fspath(directory)
        """Where the spool file lives. Put it next to the report: the report takes it in the
        kernel only within one mounted file system."""

    def _write(self, data: bytes | memoryview) -> None:
        """Append to the spool, after any adopted file."""
        if self._adopted:
            self._writer.stop()
            self._file = tempfile.TemporaryFile(dir=self.directory)
            self._writer = BackgroundWriter(self._file)
            self._files_in_order.append(self._file)
            self._adopted = False
        self._writer.write(data)

    def _write_records(self, records: list[bytes]) -> None:
        """Spool records given as JSON texts (no newline inside), each followed by the
        separator."""
        self.count += write_joined(self._write, records, self.separator)

    def _append(self, records: list[Any]) -> None:
        self._write_each(map(dumps, records))

    def _write_each(self, texts: Iterable[bytes]) -> None:
        """Spool records made one at a time, each followed by the separator."""
        out, n = joined(texts, self.separator)
        if n:
            self._write(out)
            self.count += n

    def flush(self) -> None:
        """Flush the spool file (for another process to adopt it by path)."""
        self._writer.drain()
        self._file.flush()

    def adopt(self, path: str | os.PathLike[str], count: int) -> None:
        """Append ``count`` records spooled by another spool to ``path`` (given as its
        ``path``, or written by :meth:`save`), after these."""
        if count:
            self._writer.drain()
            self._files_in_order.append(open(path, "rb"))
            self._adopted = True
            self.count += count

    def save(self, path: str | os.PathLike[str]) -> None:
        """Copy the spooled records to ``path``, for another process's spool to adopt."""
        with open(path, "wb") as out:
            for fh, size in self._files():
                _copy(fh, out, size)

    def _files(self) -> list[tuple[IO[bytes], int]]:
        self._writer.drain()
        files = []
        for fh in self._files_in_order:
            fh.flush()
            size = os.fstat(fh.fileno()).st_size
            if size:
                files.append((fh, size))
        return files

    def copy_to(self, out: IO[bytes]) -> None:
        """Write the spooled records to ``out``, separated (no separator after the last)."""
        files = self._files()
        for i, (fh, size) in enumerate(files):
            last = i == len(files) - 1
            _copy(fh, out, size - len(self.separator) if last else size)

    def close(self) -> None:
        """Delete the temporary file."""
        self._writer.stop()
        for fh in self._files_in_order:
            fh.close()
        self._files_in_order = []


def _copy_range(src: int, dst: int, size: int, offset: int) -> None:
    """Copy the first ``size`` bytes of file descriptor ``src`` to ``dst`` at ``offset``,
    neither descriptor's position used (in the kernel where the system can)."""
    done = 0
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        with contextlib.suppress(OSError):  # another file system: copy through memory
            while done < size:
                n = copy_range(src, dst, size - done, done, offset + done)
                if n == 0:
                    break
                done += n
    while done < size:
        chunk = os.pread(src, min(_CHUNK, size - done), done)
        if not chunk:
            raise OSError(f"a spooled part ended {size - done} bytes early")
        os.pwrite(dst, chunk, offset + done)
        done += len(chunk)


def _copy(src: IO[bytes], out: IO[bytes], size: int, *, start: int = 0) -> None:
    """Copy ``size`` bytes of ``src`` from offset ``start`` to the end of ``out``."""
    out.flush()
    out.seek(0, os.SEEK_END)
    copy_range = getattr(os, "copy_file_range", None)
    size += start
    offset = start
    if copy_range is not None:
        try:
            while offset < size:
                done = copy_range(src.fileno(), out.fileno(), size - offset, offset)
                if done == 0:
                    break
                offset += done
        except OSError:  # another file system, or no support: copy through memory
            pass
        out.seek(0, os.SEEK_END)
    src.seek(offset)
    while offset < size:
        chunk = src.read(min(_CHUNK, size - offset))
        if not chunk:
            break
        out.write(chunk)
        offset += len(chunk)
    src.seek(0, os.SEEK_END)


class CallSpool(_LineSpool):
    """Receives completed calls in batches (``on_calls=``) and keeps their records on disk.

    Example::

        with CallSpool() as spool:
            result = evaluate_trace(gold, trace, on_calls=spool)
            write_json_report(result, "toolscore.json", spool)
    """

    separator = b",\n      "

    def __call__(self, calls: list[ToolCall]) -> None:
        self._write_each(map(call_json, calls))

    def take_columns(self, columns: Columns) -> None:
        """Spool a batch given as columns (a decoded block writes its records in one C call)."""
        self.count += columns.write_records(self._write, self.separator)


class FindingSpool(_LineSpool):
    """Receives findings in batches (``on_finding=``): every finding, beyond the cap the
    result keeps in memory."""

    separator = b",\n    "

    def __call__(self, findings: list[Finding]) -> None:
        self._write_each(map(finding_line, findings))


def finding_line(finding: Finding) -> bytes:
    """A finding's line (in the report's findings, and in ``toolscore watch``'s findings
    stream): its fields are strings, numbers and None under string keys, which
    orjson writes without the options :func:`dumps` passes for any value (half the time)."""
    record = finding.to_json()
    try:
        return orjson.dumps(record)
    except TypeError:  # a user's check may have put anything in a field
        return dumps(record)


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
        self._target = resolve_output(self.path)
        # beside the report (renamed onto it at the end), or in the temporary directory for a
        # device, FIFO or socket (copied into it at the end): see toolscore.outputs
        self.directory = self._target.temp_directory
        try:
            fd, self._temp = tempfile.mkstemp(
                prefix=".toolscore-", suffix=".json.part", dir=self.directory
            )
        except OSError as exc:
            raise user_os_error(exc, self.path) from None
        self._out: IO[bytes] = os.fdopen(fd, "w+b")
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
            out.close()
        else:
            self._compact(head)
        if self._target.stream:
            self._write_through()
        else:
            os.chmod(self._temp, file_mode())  # mkstemp's 0600 -> what open() would give
            os.replace(self._temp, self._target.real)
        self._done = True

    def _write_through(self) -> None:
        """Copy the finished report into a device, FIFO or socket, opened like ``>`` does."""
        with open(self._temp, "rb") as src, open_stream(self.path) as dst:
            shutil.copyfileobj(src, dst, _CHUNK)  # no seek: a FIFO or a terminal has none
        os.unlink(self._temp)

    def _compact(self, head: bytes) -> None:
        """Rewrite the report with ``head`` in place of the room."""
        out = self._out
        size = out.seek(0, os.SEEK_END)
        fd, temp = tempfile.mkstemp(prefix=".toolscore-", suffix=".json.part", dir=self.directory)
        with os.fdopen(fd, "w+b") as new:
            new.write(b"{" + head)
            out.seek(1 + ROOM)
            _copy(out, new, size - 1 - ROOM, start=1 + ROOM)
        out.close()
        os.unlink(self._temp)
        self._temp = temp

    def close(self) -> None:
        """Delete the unfinished report (after :meth:`finish`, nothing to do)."""
        if not self._done:
            self._writer.stop()
            for thread in self._copies:
                thread.join()
            self._out.close()
            with contextlib.suppress(OSError):
                os.unlink(self._temp)
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
