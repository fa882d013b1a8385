"""Cutting a dataset into parts: batches of small files, byte ranges of a large multi-trace
file at trace boundaries, and for a file whose lines interleave, the ranges that scatter its
lines into partitions and the parts that gather them; the sniffing that decides (the trace
key, interleaving, OTLP)."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import IO, Any

from ..sources._drive import is_compressed
from ._files import Decompressed, Input, in_location, open_input, open_output
from ._reading import READ_BYTES, IdReader, trace_start
from .shape import ID_KEYS, first_record

GATHER_BYTES = 8 * 1024 * 1024
"""About the lines of a file whose lines interleave that one gather part groups in memory."""
PART_BYTES = 4 * 1024 * 1024
"""Target size of a byte-range part of a multi-trace file (from 8 MiB on, a file is cut).
Fixed, not a share of the dataset: a part's records are what the driver holds per part in
flight, so the driver's memory is the same at 10 thousand traces and at a million; 4 MiB is
about a thousand traces, a few ms of scheduling overhead per part on the pool or Dask."""
FILES_PER_PART = 64
"""Single-trace files evaluated in one part at most."""
SNIFF_BYTES = 1 << 20


@dataclass(frozen=True)
class Part:
    """A unit of work: whole files, or a byte range of one multi-trace file."""

    index: int
    inputs: tuple[Input, ...]
    start: int = 0
    end: int | None = None
    """With ``end``: a byte range of the one input, at trace boundaries (see :func:`plan_parts`)."""
    key: str | None = None
    """The trace key, for a byte range."""
    scatter: int = 0
    """For a byte range of a file whose lines interleave: write its lines, by trace id, into
    this many partitions (:func:`~.worker.run_part`), for the gather parts to group."""
    gather: tuple[tuple[str, int, int, int], ...] = ()
    """A partition of such a file, to group and evaluate: ``(spool file, start, end, lines
    before the range)`` for each range, in file order."""
    ship: bool = False
    """A part whose input only this machine reads, for workers that share no directory with
    it: a byte range of a decompressed copy here (from one trace boundary to the next,
    :func:`trace_start`) or a partition of scattered lines, whose bytes the engine sends
    with it (:attr:`data`); or a scatter range, which the engine runs here."""
    data: bytes | None = None
    """The bytes of a :attr:`ship` part, as its worker gets them: the range's, or the
    partition's sections of every range (in :attr:`gather` order)."""

    @property
    def size(self) -> int:
        if self.gather:
            return 0  # (its bytes were counted by the ranges)
        if self.end is not None:
            return self.end - self.start
        return sum(item.size for item in self.inputs)

    def describe(self) -> str:
        if self.end is not None:
            return f"{self.inputs[0].url} bytes {self.start}-{self.end}"
        if len(self.inputs) == 1:
            return self.inputs[0].url
        return f"{self.inputs[0].url} and {len(self.inputs) - 1} more file(s)"


def sniff(f: IO[bytes], limit: int = SNIFF_BYTES) -> bytes:
    head = f.read(limit)
    return head


def detect_key(head: bytes, key: str | None) -> str | None:
    """The trace key of a file starting with ``head``, from its first record
    (:func:`~.shape.first_record`: malformed lines before it are passed over): ``key`` when
    given and present (or ``None`` when absent), else the first of :data:`ID_KEYS` present."""
    found = first_record(head)
    if found is None:
        return None
    if key is not None and key != "auto":
        return key if key in found else None
    if "resourceSpans" in found:
        return None
    return next((name for name in ID_KEYS if name in found and found[name] is not None), None)


def is_otlp(head: bytes) -> bool:
    return b'"resourceSpans"' in head[:65536]


def gather_parts(scattered: list[tuple[Part, str, list[int], int]], first: int) -> list[Part]:
    """The parts that group a file's scattered lines, numbered from ``first``: one for each
    partition, given every range's ``(part, spool file, section offsets, lines before it)``
    in file order."""
    ranges = sorted(scattered, key=lambda s: s[0].index)
    item = ranges[0][0].inputs[0]
    count = len(ranges[0][2]) - 1
    return [
        Part(
            first + p,
            (item,),
            key=ranges[0][0].key,
            gather=tuple((path, cuts[p], cuts[p + 1], base) for _, path, cuts, base in ranges),
            ship=ranges[0][0].ship,
        )
        for p in range(count)
    ]


def unpack(
    item: Input,
    directory: str,
    number: int,
    key: str | None,
    storage_options: dict[str, Any] | None = None,
) -> Input:
    """``item`` (a compressed file) with a decompressed copy in ``directory`` (a path or a
    URL) when its head shows a multi-trace file; else ``item`` as it is (one trace: read
    decompressed as it is read). A stream that breaks off gives the copy of what came out,
    and :attr:`Input.broken`."""
    try:
        with Decompressed(item.url, storage_options) as f:
            head = f.read(SNIFF_BYTES)
            if detect_key(head, key) is None or f.error is not None:
                return item
            path = in_location(directory, f"unpacked-{number}.jsonl")
            with open_output(path, storage_options) as out:
                out.write(head)
                while piece := f.read(READ_BYTES):
                    out.write(piece)
            return replace(item, local=path, size=f.offset, broken=f.fault)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            raise  # (the run reports the full disk)
        return item  # the worker reports it, reading the file itself


def interleaved(head: bytes, ids: IdReader) -> bool:
    """Whether a trace id in ``head`` reappears after another one."""
    seen: set[str] = set()
    current = None
    for line in head.split(b"\n")[:-1]:
        got = ids.read(line) if line.strip() else None
        if got is None or got[0] is None:
            continue
        if got[0] != current:
            if got[0] in seen:
                return True
            seen.add(got[0])
            current = got[0]
    return False


def plan_parts(
    inputs: list[Input],
    *,
    key: str | None,
    task_key: str | None,
    force_interleaved: bool,
    storage_options: dict[str, Any] | None = None,
    part_bytes: int = PART_BYTES,
    unpack_dir: str | None = None,
    ship_dir: str | None = None,
) -> list[Part]:
    """Cut the dataset into parts: a large uncompressed multi-trace file whose traces are
    contiguous becomes byte ranges of about ``part_bytes``; small files are batched.

    With ``unpack_dir`` (a directory, local or a URL, that every worker reads and writes:
    the run's work directory when they share this machine's disk), a compressed
    multi-trace file of ``part_bytes`` or more, whose traces are contiguous, is first
    decompressed there (:func:`unpack`) and its copy cut the same way: read on every worker,
    its records come back a range at a time (memory stays flat). Otherwise a compressed
    file is read whole, by one worker. With it too, a large file whose lines interleave is
    cut into ranges that scatter its lines into partitions by trace id (:attr:`Part.scatter`,
    :data:`GATHER_BYTES` of lines each); the driver then plans the parts that group them
    (:func:`gather_parts`). Otherwise such a file is grouped whole, by one worker.

    With ``ship_dir`` instead (a directory on this machine only, for a cluster whose workers
    share no directory with it), such a compressed file is decompressed there all the same
    and cut at trace boundaries into :attr:`Part.ship` ranges, whose bytes the engine sends
    with each part; a large file whose lines interleave is cut into scatter ranges that this
    process runs itself (:attr:`Part.ship`), writing the partitions there, and the parts that
    group them get their partition's lines sent with them.
    """
    parts: list[Part] = []
    batch: list[Input] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch, batch_bytes
        if batch:
            parts.append(Part(len(parts), tuple(batch)))
            batch, batch_bytes = [], 0

    for item in inputs:
        compressed = is_compressed(item.url)
        original = item
        copy_dir = unpack_dir if unpack_dir is not None else ship_dir
        if copy_dir is not None and compressed and item.size >= part_bytes:
            item = unpack(item, copy_dir, len(parts), key, storage_options)
            compressed = item.local is None
        ship = unpack_dir is None and item.local is not None
        if item.size >= 2 * part_bytes and not compressed:
            try:
                with open_input(item.path, storage_options) as f:
                    head = sniff(f)
            except TimeoutError:  # a remote file that stopped answering: the worker says so
                head = b""
            found = detect_key(head, key)
            mixed = found is not None and (
                force_interleaved or interleaved(head, IdReader(found, task_key))
            )
            if found is not None and ship and not mixed:
                flush()
                parts += ship_parts(item, found, task_key, part_bytes, len(parts))
                continue
            if found is not None and (not mixed or unpack_dir is not None or ship_dir):
                flush()
                here = mixed and unpack_dir is None  # (scattered by this process)
                scatter = -(-item.size // GATHER_BYTES) + 1 if mixed else 0
                cuts = list(range(0, item.size, part_bytes))
                for i, start in enumerate(cuts):
                    end = cuts[i + 1] if i + 1 < len(cuts) else item.size
                    parts.append(Part(len(parts), (item,), start, end, found, scatter, ship=here))
                continue
        if ship:  # (the copy is this machine's: a worker reads the file itself)
            os.unlink(item.path)
            item = original
        if batch and (len(batch) >= FILES_PER_PART or batch_bytes + item.size > part_bytes):
            flush()
        batch.append(item)
        batch_bytes += item.size
    flush()
    return parts


def ship_parts(
    item: Input, key: str, task_key: str | None, part_bytes: int, first: int
) -> list[Part]:
    """A decompressed copy on this machine cut into :attr:`Part.ship` ranges of about
    ``part_bytes``, each from one trace boundary to the next (a trace longer than a range
    makes the ranges around it one)."""
    assert item.local is not None
    ids = IdReader(key, task_key)
    starts = [0]
    with open(item.local, "rb") as f:
        for cut in range(part_bytes, item.size, part_bytes):
            # (a cut before the last start found has that start: a long trace is read once)
            if cut > starts[-1]:
                starts.append(trace_start(f, ids, cut, item.size))
    bounds = sorted(set(starts) | {item.size})
    return [
        Part(first + i, (item,), start, end, key, ship=True)
        for i, (start, end) in enumerate(pairwise(bounds))
    ]
