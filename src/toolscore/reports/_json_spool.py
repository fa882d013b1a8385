"""Spools: temporary files of JSON records that a report takes in as they are, in the kernel
(:class:`CallSpool` for the calls a part read by another process, :class:`FindingSpool` for
findings beyond those the result keeps), and a finding's line (:func:`finding_line`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import IO

import orjson

from ..calls import Finding, ToolCall
from ..columns import Columns, call_json, write_joined
from ._json_io import BackgroundWriter, _Closing, _copy, dumps, joined


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


def findings_lines(found: Iterable[Finding], session: str | None = None) -> bytes:
    """The JSON lines a live door appends to ``--findings``: each finding's record
    (:func:`finding_line`) after ``time``, when it was written (ISO
    8601, UTC, to the millisecond), and ``session`` for a session's finding."""
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    head = b'{"time":"' + now.encode() + b'",'
    if session is not None:
        head += b'"session":' + orjson.dumps(session) + b","
    return b"".join(head + finding_line(f)[1:] + b"\n" for f in found)
