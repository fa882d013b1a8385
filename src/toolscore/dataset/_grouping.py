"""Grouping the lines of a file whose lines interleave by trace id: in memory up to a
budget, past it partitioned on disk by a hash of the id, one partition at a time; the frame
a scattered line is written in; and an OpenTelemetry export's spans grouped by trace."""

from __future__ import annotations

import os
import struct
import tempfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

import ijson
import orjson

from ._reading import Trace, iter_lines
from .shape import first_line

GROUP_BUDGET = 64 * 1024 * 1024
"""Bytes of interleaved lines grouped in memory before they are partitioned on disk."""


_FRAME = struct.Struct("<IIQQ")


def partition(trace_id: str, count: int) -> int:
    """Which of ``count`` partitions the lines of ``trace_id`` go to."""
    return zlib.crc32(trace_id.encode("utf-8", "surrogatepass")) % count


def write_frame(
    out: IO[bytes], trace_id: str, task: str | None, line: bytes, lineno: int, offset: int
) -> None:
    """One line of a trace, framed for :func:`add_frames`."""
    head = orjson.dumps([trace_id, task])
    out.write(_FRAME.pack(len(head), len(line), lineno, offset))
    out.write(head)
    out.write(line)


def add_frames(groups: dict[str, Trace], f: IO[bytes], size: int | None, base: int) -> None:
    """Add the lines framed in ``f`` (its next ``size`` bytes; to its end for None) to their
    traces in ``groups``, a frame at a time (a trace new to it starts at its first line's
    offset; ``base`` is added to the line numbers)."""
    left = -1 if size is None else size
    while left:
        frame = f.read(_FRAME.size)
        if not frame:
            break
        head_len, line_len, lineno, offset = _FRAME.unpack(frame)
        trace_id, task = orjson.loads(f.read(head_len))
        line = f.read(line_len)
        group = groups.get(trace_id)
        if group is None:
            group = groups[trace_id] = Trace(trace_id, task, [], [], offset)
        group.keep(line, base + lineno)
        if size is not None:
            left -= _FRAME.size + head_len + line_len


class Grouper:
    """Groups ``(id, task, line, lineno, offset)`` items by id in bounded memory."""

    PARTS = 16

    def __init__(self, budget: int = GROUP_BUDGET, directory: str | None = None) -> None:
        self.budget = budget
        self.directory = directory
        self._groups: dict[str, Trace] = {}
        self._bytes = 0
        self._spill: list[IO[bytes]] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def add(self, trace_id: str, task: str | None, line: bytes, lineno: int, offset: int) -> None:
        if self._spill is not None:
            self._write(trace_id, task, line, lineno, offset)
            return
        group = self._groups.get(trace_id)
        if group is None:
            group = self._groups[trace_id] = Trace(trace_id, task, [], [], offset)
        group.keep(line, lineno)
        self._bytes += len(line) + 64
        if self._bytes > self.budget:
            self._start_spill()

    def _start_spill(self) -> None:
        # the run's directory may be another machine's (a Dask worker that does not share
        # the driver's disk): then the system's
        directory = self.directory
        if directory is not None and not os.path.isdir(directory):
            directory = None
        self._tmp = tempfile.TemporaryDirectory(prefix="toolscore-group-", dir=directory)
        self._spill = [
            open(os.path.join(self._tmp.name, f"{i}.bin"), "w+b") for i in range(self.PARTS)
        ]
        groups, self._groups = self._groups, {}
        for group in groups.values():
            for line, lineno in zip(group.lines, group.linenos, strict=True):
                assert group.trace_id is not None
                self._write(group.trace_id, group.task, line, lineno, group.offset)

    def _write(
        self, trace_id: str, task: str | None, line: bytes, lineno: int, offset: int
    ) -> None:
        assert self._spill is not None
        write_frame(
            self._spill[partition(trace_id, self.PARTS)], trace_id, task, line, lineno, offset
        )

    def traces(self) -> Iterator[Trace]:
        """The groups, in order of first appearance (per partition once spilled)."""
        if self._spill is None:
            yield from self._groups.values()
            self._groups = {}
            return
        try:
            for f in self._spill:
                f.seek(0)
                groups: dict[str, Trace] = {}
                add_frames(groups, f, None, 0)
                yield from sorted(groups.values(), key=lambda t: t.offset)
                f.close()
        finally:
            for f in self._spill:
                f.close()
            if self._tmp is not None:
                self._tmp.cleanup()


def otlp_items(f: IO[bytes], head: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(lineno, offset, ResourceSpans)`` of an OTLP JSON export or OTLP JSON Lines file."""
    line = first_line(head)
    try:
        orjson.loads(line)
        lines_layout = len(line) < len(head.strip())
    except orjson.JSONDecodeError:
        lines_layout = False
    f.seek(0)
    if lines_layout:
        lineno = 0
        for offset, raw in iter_lines(f):
            lineno += 1
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                yield lineno, offset, exc
                continue
            for rs in obj.get("resourceSpans") or () if isinstance(obj, dict) else ():
                yield lineno, offset, rs
        return

    try:
        for rs in ijson.items(f, "resourceSpans.item", use_float=True):
            yield 1, 0, rs
    except ijson.JSONError as exc:
        yield 1, 0, exc


def otlp_traces(rs: Any) -> Iterator[tuple[str, bytes]]:
    """``(traceId, one OTLP export line holding that trace's spans of ``rs``)``."""
    if not isinstance(rs, dict):
        return
    resource = rs.get("resource")
    for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or ():
        if not isinstance(ss, dict):
            continue
        by_trace: dict[str, list[Any]] = {}
        for span in ss.get("spans") or ():
            if isinstance(span, dict):
                by_trace.setdefault(str(span.get("traceId") or ""), []).append(span)
        for trace_id, spans in by_trace.items():
            scope: dict[str, Any] = {"spans": spans}
            if "scope" in ss:
                scope["scope"] = ss["scope"]
            out: dict[str, Any] = {"scopeSpans": [scope]}
            if resource is not None:
                out["resource"] = resource
            yield trace_id, orjson.dumps({"resourceSpans": [out]}) + b"\n"
