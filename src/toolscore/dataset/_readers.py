"""Reading a part's inputs in a worker, a format at a time: a file of one trace (streamed,
as ``toolscore eval`` reads it), a multi-trace file or a byte range of it (trace by trace),
a file whose lines interleave (grouped by id: whole, or scattered into partitions by its
ranges and gathered a partition at a time), an OpenTelemetry export (spans grouped by
trace). Each trace's record is appended to the part's :class:`~.worker.Records`."""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import IO, TYPE_CHECKING, Any

from ..calls import ToolCall
from ..errors import InputError, ToolscoreError
from ..redact import redact_secrets
from ..sources._drive import decompressing, is_compressed
from ..sources.custom import CustomDialect
from ..sources.detect import detect, dialect_class
from ..sources.jsonl import JsonlDecoder
from ._feed import too_large
from ._files import shown_url, stalled
from ._scoring import GOLD_ERRORS, Config, _Tasks, evaluate_one, gold_error_record
from .inputs import (
    BLANK,
    SNIFF_BYTES,
    Decompressed,
    Grouper,
    IdReader,
    Input,
    Part,
    Trace,
    add_frames,
    contiguous_traces,
    count_line_starts,
    detect_key,
    id_before,
    id_chunks,
    in_location,
    interleaved,
    is_otlp,
    iter_lines,
    line_ids,
    next_line,
    open_input,
    open_lines,
    open_output,
    otlp_items,
    otlp_traces,
    partition,
    write_frame,
)
from .records import TraceRecord

if TYPE_CHECKING:
    from .worker import Records


def _run_stalling(
    part: Part, item: Input, cfg: Config, gold: Any, tasks: _Tasks, records: Records
) -> int:
    """:func:`_run_input`, where a remote input that stops answering (its ``--http-timeout``)
    ends as the input's error record: the traces read before it keep theirs, and the part's
    other inputs are read."""
    try:
        return _run_input(part, item, cfg, gold, tasks, records)
    except TimeoutError as exc:
        return _input_error(part, item, records, str(stalled(item.url, exc)))


def _input_error(part: Part, item: Input, records: Records, text: str) -> int:
    """The error record of an input that could not be read (``text``: what, and where); no
    line of it was read."""
    records.append(
        TraceRecord(
            trace_id=item.name,
            task=item.name,
            status="error",
            source=item.url,
            error=redact_secrets(text),
            order=(part.index, len(records)),
        )
    )
    return 0


def _run_input(
    part: Part, item: Input, cfg: Config, gold: Any, tasks: _Tasks, records: Records
) -> int:
    """Evaluate one input (or its range); returns the lines read."""
    source = item.url
    records.last_id = None

    def order() -> tuple[int, int]:
        return (part.index, len(records))

    try:
        # (a range sent with its bytes: its offsets are the file's, from part.start on)
        sent = part.data is not None
        f = (
            open_lines(item.path, cfg.storage_options)
            if part.data is None
            else io.BytesIO(part.data)
        )
    except (OSError, InputError) as exc:
        error = str(exc) if isinstance(exc, InputError) else f"{source}: cannot read: {exc}"
        return _input_error(part, item, records, error)
    with f:
        key = part.key
        head = b""
        if key is None:
            head = f.read(SNIFF_BYTES)
            f.seek(0)
            key = detect_key(head, cfg.trace_key)
            if key is None and is_otlp(head):
                return _run_otlp(f, head, item, cfg, gold, tasks, records, part)
        if key is None:
            # one trace: read as `toolscore eval` reads it, streaming
            f.close()
            name = item.name
            calls = _gold_or_error(gold, name, name, source, records, order)
            if calls is False:
                return 0
            with _remote(item, cfg) as data:
                records.append(
                    evaluate_one(
                        cfg,
                        name,
                        tasks.task(name, None),
                        data,
                        calls,  # type: ignore[arg-type]
                        source=source,
                        order=order(),
                    )
                )
            return 0
        ids = IdReader(key, cfg.task_key)
        if part.end is None:
            if not head:
                head = f.read(SNIFF_BYTES)
                f.seek(0)
            grouped = cfg.interleaved or interleaved(head, ids)
        else:
            grouped = False
        if grouped:
            lines_read = _run_grouped(f, ids, item, cfg, gold, tasks, records, part)
        else:
            lines_read = 0
            fmt = FileFormat(cfg, source)
            base = part.start if sent else 0
            span = (0, None) if sent else (part.start, part.end)
            for got in contiguous_traces(f, ids, *span):
                if isinstance(got, tuple):
                    lineno, offset, problem = got
                    if problem:
                        records.append(_line_error(source, lineno, base + offset, problem, order()))
                    else:
                        lines_read = lineno
                    continue
                got.offset += base
                _evaluate_trace(got, item, cfg, gold, tasks, records, part, fmt)
        _ended_early(f, item, part, records.last_id, records)
        _mixed_ids(ids, source, records)
    return lines_read


def _mixed_ids(ids: IdReader, source: str, records: Records) -> None:
    """Say so when the ids read were strings and numbers alike (:meth:`IdReader.mixed`)."""
    note = ids.mixed(shown_url(source))
    if note is not None:
        records.notes.append(redact_secrets(note))


def _ended_early(f: IO[bytes], item: Input, part: Part, last: str | None, records: Records) -> None:
    """When the compressed input read broke off (``f`` as it is read, or the decompressed
    copy ``item`` is, at its end: the last range tells), its error record: the traces read
    before it, the last one ``last``, are evaluated with the lines they had (the last may
    have had more)."""
    if isinstance(f, Decompressed) and f.fault is not None:
        problem, offset = f.fault, f.offset
    elif item.broken is not None and (part.end is None or part.end >= item.size):
        problem, offset = item.broken, item.size
    else:
        return
    after = f"; the last trace read: {last!r}" if last is not None else ""
    records.append(
        TraceRecord(
            trace_id="",
            task="",
            status="error",
            source=item.url,
            offset=offset,
            error=redact_secrets(f"{item.url}: {problem}{after}"),
            order=(part.index, len(records)),
        )
    )


def _is_remote(item: Input) -> bool:
    return "://" in item.url


@contextmanager
def _remote(item: Input, cfg: Config) -> Iterator[IO[bytes] | str]:
    """A single trace's input for :func:`evaluate_one`: a local path (read, and decompressed,
    by the trace readers), or a remote file opened here, decompressed when its name says so
    (a damaged stream raises as it is read, and is reported as the trace's error)."""
    if not _is_remote(item):
        yield item.url
        return
    with open_input(item.url, cfg.storage_options) as f:
        if is_compressed(item.url):
            with closing(decompressing(item.url, f)) as stream:
                yield stream
        else:
            yield f


def _line_error(
    source: str, lineno: int, offset: int, problem: str, order: tuple[int, int]
) -> TraceRecord:
    return TraceRecord(
        trace_id="",
        task="",
        status="error",
        source=source,
        line=lineno,
        offset=offset,
        error=f"{source}:{lineno}: {problem}",
        order=order,
    )


def _gold_or_error(
    gold: Any,
    trace_id: str,
    name: str | None,
    source: str,
    records: Records,
    order: Any,
    line: int | None = None,
) -> list[ToolCall] | bool | None:
    try:
        calls: list[ToolCall] | None = gold.get(trace_id, name)
    except GOLD_ERRORS as exc:
        records.append(gold_error_record(trace_id, source, exc, line=line, order=order()))
        return False
    return calls


class FileFormat:
    """A multi-trace file's format, detected on its first trace and reused for the others
    (detection samples the whole of a small trace: most of its cost when paid per trace)."""

    def __init__(self, cfg: Config, source: str) -> None:
        self.cfg = cfg
        self.source = source
        self.factory: Callable[[], Any] | None = None
        self.decided = False

    def decoder(self, data: bytes) -> Callable[[], Any] | None:
        if self.decided:
            return self.factory
        if data.count(b"\n") < 2:
            return None  # one line is read as a document: decide on a longer trace
        self.decided = True
        try:
            found = detect(data, format=self.cfg.format, final=True, source=self.source)
        except ToolscoreError:
            return None  # each trace says what is wrong with it, through evaluate_trace
        if found.layout != "jsonl":
            return None
        dialect = dialect_class(found.dialect)
        source, description = self.source, found.description
        named = self.cfg.format != "auto"
        last: list[Any] = []

        def make() -> Any:
            made = dialect(source)
            if last and isinstance(made, CustomDialect):
                # the keys the file's traces carried so far, known from the start
                made.expect_keys(last[0].extra_keys)
            last[:] = [made]
            decoder = JsonlDecoder(made, source, description)
            decoder.empty_is_error = not named
            return decoder

        self.factory = make
        return make


def _evaluate_trace(
    trace: Trace,
    item: Input,
    cfg: Config,
    gold: Any,
    tasks: _Tasks,
    records: Records,
    part: Part,
    fmt: FileFormat | None = None,
) -> None:
    trace_id = trace.trace_id or ""

    def order() -> tuple[int, int]:
        return (part.index, len(records))

    first = trace.linenos[0] if trace.linenos else None
    # with its line, the record of a piece of a scattered trace is regrouped (regroup.py)
    calls = _gold_or_error(gold, trace_id, None, item.url, records, order, first)
    if calls is False:
        return
    refused = too_large(trace, item.url, order())
    if refused is not None:
        records.append(refused)
        return
    head = trace.lines[0] if trace.lines else b""
    data = b"".join(trace.lines)  # (one piece: that piece itself, not a copy)
    trace.lines.clear()  # (its bytes are held once: in ``data``)
    record = evaluate_one(
        cfg,
        trace_id,
        tasks.task(trace_id, trace.task),
        io.BytesIO(data),
        calls,  # type: ignore[arg-type]
        source=item.url,
        linenos=trace.linenos,
        line=first,
        offset=trace.offset,
        order=order(),
        decoder=None if fmt is None else fmt.decoder(data),
    )
    if cfg.group_by is not None and cfg.group_by.line_fields and head:
        record.fields = cfg.group_by.read_line(head)  # (its first line is first)
    records.append(record)


def _run_grouped(
    f: IO[bytes],
    ids: IdReader,
    item: Input,
    cfg: Config,
    gold: Any,
    tasks: _Tasks,
    records: Records,
    part: Part,
) -> int:
    if len(part.inputs) == 1:
        # the file's traces are grouped whole (the driver has no pieces to join): its
        # records may go to the driver a batch at a time, however many there are
        records.spill()
    grouper = Grouper(directory=cfg.spill_dir)
    lineno = 0
    last: str | None = None
    for offset, line in iter_lines(f):
        lineno += 1
        if not line.strip():
            continue
        placed = _place(ids.read(line), last, ids)
        if isinstance(placed, str):
            records.append(
                _line_error(item.url, lineno, offset, placed, (part.index, len(records)))
            )
            continue
        last = placed[0]
        grouper.add(last, placed[1], line, lineno, offset)
    fmt = FileFormat(cfg, item.url)
    for trace in grouper.traces():
        _evaluate_trace(trace, item, cfg, gold, tasks, records, part, fmt)
    return lineno


def range_lines(part: Part, cfg: Config) -> int:
    """The lines a byte range's worker reads (what its result's ``lines`` says), found again
    without evaluating anything: for the line numbers of the ranges after it when its
    result is lost."""
    assert part.end is not None and part.key is not None
    ids = IdReader(part.key, cfg.task_key)
    with open_lines(part.inputs[0].path, cfg.storage_options) as f:
        if part.scatter:  # the lines that start in it
            begin = next_line(f, part.start, part.end) if part.start else 0
            f.seek(begin)
            return count_line_starts(f, begin, part.end)
        lines = 0
        for got in contiguous_traces(f, ids, part.start, part.end):
            if isinstance(got, tuple) and not got[2]:
                lines = got[0]
        return lines


def _place(
    got: tuple[str | None, str | None] | None, last: str | None, ids: IdReader
) -> tuple[str, str | None] | str:
    """Where a line of a file whose lines interleave goes, given what :meth:`IdReader.read`
    gave for it (``got``) and the id of the last line before it that has one: its trace's
    ``(id, task)`` (a malformed line goes with that last trace), or the problem that makes
    it an error record."""
    if got is None:
        return (last, None) if last is not None else "malformed JSON line (not a JSON object)"
    trace_id, task = got
    if trace_id is None:
        return f"the line has no {ids.key!r}"
    return trace_id, task


def _run_scatter(part: Part, cfg: Config, records: Records) -> tuple[int, tuple[str, list[int]]]:
    """A byte range of a file whose lines interleave: each line that starts in it is written
    to its trace's partition (:func:`~.inputs.partition`), framed with its line number in the
    range and its offset; a malformed line goes with the trace of the line with an id before
    it (in an earlier range, maybe), as :func:`_run_grouped` has it. Lines without an id are
    error records here. Returns the lines read and ``(file, partition offsets)``."""
    assert part.end is not None and part.key is not None and cfg.scatter_dir is not None
    item = part.inputs[0]
    source = item.url
    ids = IdReader(part.key, cfg.task_key)
    buckets = [io.BytesIO() for _ in range(part.scatter)]
    lineno = 0
    with open_lines(item.path, cfg.storage_options) as f:
        begin = next_line(f, part.start, part.end) if part.start else 0
        last = id_before(f, begin, ids, named=True) if 0 < begin < part.end else None
        f.seek(begin)
        for pos, _, lines, got in id_chunks(f, ids, begin):
            for line, one in zip(lines, line_ids(got), strict=True):
                offset = pos
                pos += len(line) + 1
                if offset >= part.end:
                    break
                lineno += 1
                if one is BLANK:
                    continue
                placed = _place(one, last, ids)
                if isinstance(placed, str):
                    records.append(
                        _line_error(source, lineno, offset, placed, (part.index, len(records)))
                    )
                    continue
                last = placed[0]
                bucket = buckets[partition(last, part.scatter)]
                write_frame(bucket, last, placed[1], line + b"\n", lineno, offset)
            else:
                continue
            break
        _ended_early(f, item, part, last, records)
    _mixed_ids(ids, source, records)
    # (a part run again writes a file of its own)
    path = in_location(cfg.scatter_dir, f"scatter-{part.index}-{uuid.uuid4().hex}")
    cuts = [0]
    with open_output(path, cfg.storage_options) as out:
        for bucket in buckets:
            out.write(bucket.getbuffer())
            cuts.append(cuts[-1] + bucket.tell())
    return lineno, (path, cuts)


def _run_gather(part: Part, cfg: Config, gold: Any, tasks: _Tasks, records: Records) -> None:
    """One partition of a file whose lines interleave: its lines from every range, grouped
    by trace id and evaluated, a trace at a time in order of its first line."""
    item = part.inputs[0]
    groups: dict[str, Trace] = {}
    sent = None if part.data is None else io.BytesIO(part.data)  # (the sections, in order)
    for path, start, end, base in part.gather:
        if sent is not None:
            add_frames(groups, sent, end - start, base)
            continue
        with open_input(path, cfg.storage_options) as f:
            f.seek(start)
            add_frames(groups, f, end - start, base)
    records.spill()  # (its traces are whole: the driver joins none)
    fmt = FileFormat(cfg, item.url)
    for trace in sorted(groups.values(), key=lambda t: t.offset):
        _evaluate_trace(trace, item, cfg, gold, tasks, records, part, fmt)


def _run_otlp(
    f: IO[bytes],
    head: bytes,
    item: Input,
    cfg: Config,
    gold: Any,
    tasks: _Tasks,
    records: Records,
    part: Part,
) -> int:
    if len(part.inputs) == 1:
        records.spill()  # (its traces are grouped whole: the driver joins none)
    grouper = Grouper(directory=cfg.spill_dir)
    lines = 0
    for lineno, offset, rs in otlp_items(f, head):
        lines = max(lines, lineno)
        if isinstance(rs, Exception):
            records.append(
                _line_error(
                    item.url, lineno, offset, f"malformed JSON: {rs}", (part.index, len(records))
                )
            )
            continue
        for trace_id, export in otlp_traces(rs):
            grouper.add(trace_id, None, export, lineno, offset)
    for trace in grouper.traces():
        _evaluate_trace(trace, item, cfg, gold, tasks, records, part)
    return lines
