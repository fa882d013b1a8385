"""The driver's loop: run the parts, shift their line numbers to the file's, regroup the
traces that came in pieces, mark duplicate ids, plan the parts that gather scattered lines,
score gold without a trace, and add every record up (and write it) as its part finishes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from typing import Any

from .._interrupt import Interrupted, active
from ..parts.engine import PartLost, run_parts
from ._dask import _scattered_here, with_data
from ._files import printable_name
from ._per_trace import _Writer
from ._result import DatasetResult, _dump_task
from ._seen import _Seen
from .aggregate import overall_pass
from .gold import GoldSpec, gold_lookup
from .groups import group_tables
from .inputs import Part, gather_parts, remove_location
from .records import TraceRecord
from .regroup import Regroup
from .tally import MAX_LISTED, Tally
from .worker import (
    GOLD_ERRORS,
    Config,
    PartResult,
    evaluate_absent,
    range_lines,
    records_progress,
    run_part,
)

WORKER_MODULES = ("toolscore.dataset.worker", "toolscore.api")
"""What a local pool's forkserver imports before it forks a worker."""


def _gold_or_none(lookup: Any, gold_id: str) -> list[Any] | None:
    """A gold entry's calls (a gold file named ``gold_id`` in a directory too), or None
    when it cannot be read (it is then reported as gold without a trace)."""
    try:
        found: list[Any] | None = lookup.get(gold_id, gold_id)
    except GOLD_ERRORS:
        return None
    return found


def _within(offset: int | None, spans: list[tuple[int, int]]) -> bool:
    return offset is not None and any(start <= offset < end for start, end in spans)


def _shift(result: PartResult, base: dict[str, int], part: Part) -> None:
    """Line numbers from the part's start to the file's."""
    if part.end is None and part.start == 0:
        return
    url = part.inputs[0].url
    shift = base.get(url, 0)
    if not shift:
        return
    for r in result.records:
        if r.ci is not None:
            r.ci = r.ci.shifted(shift)
        if r.line is not None:
            old = r.line
            r.line = old + shift
            if r.error and r.error.startswith(f"{url}:"):
                r.error = _shift_error(r.error, url, shift)


def _shift_error(text: str, url: str, shift: int) -> str:
    rest = text[len(url) + 1 :]
    number, sep, tail = rest.partition(":")
    if sep and number.isdigit():
        return f"{url}:{int(number) + shift}:{tail}"
    return text


def _printable(records: list[TraceRecord]) -> list[TraceRecord]:
    """``records`` with the file names in them as text a report can hold (a name that is not
    UTF-8, ``b\\xff.jsonl``, has its bytes written out: :func:`~._files.printable_name`)."""
    for r in records:
        if r.source is not None:
            r.source = printable_name(r.source)
        if r.error is not None:
            r.error = printable_name(r.error)
        r.trace_id = printable_name(r.trace_id)
        r.task = printable_name(r.task)
    return records


def _stopping() -> Callable[[], bool]:
    """Whether a signal asked the run to stop (the command line's handlers,
    :mod:`toolscore._interrupt`): the parts read so far are then the run's."""
    stop = active()

    def asked() -> bool:
        if stop is None:
            return False
        try:
            stop.check()  # (taken up: the signal is not sent again to end a read)
        except Interrupted:
            return True
        return False

    return asked


def _leave_signals_to_the_driver() -> None:
    """In a pool's worker: Ctrl-C (sent to the whole process group by a terminal) is the
    driver's to handle; it ends the workers itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _drive(
    parts: list[Part],
    cfg: Config,
    spec: GoldSpec,
    work: str,
    *,
    started: float,
    per_trace: str | None,
    engine: str,
    workers: int | None,
    client: Any,
    scheduler: str | None,
    on_record: Callable[[TraceRecord], None] | None,
    on_progress: Callable[[int, int | None, int, int], None] | None,
    on_problem: Callable[[str], None] | None,
    ks: tuple[int, ...] | None = None,
    notes: Iterable[str] = (),
) -> DatasetResult:
    tally = Tally(work, group_by=cfg.group_by)
    seen = _Seen(os.path.join(work, "seen.sqlite"), spec.by_base_name)
    writer = _Writer(per_trace) if per_trace else None
    stopping = _stopping()
    stopped = False
    """A signal stopped the run: what was read is the result."""
    ended = False
    problems: list[str] = list(spec.problems)
    missing_trace: list[str] = []
    base: dict[str, int] = {}
    done_bytes = 0
    early: Tally | None = None
    """The provisional tally of the cut file held now (:mod:`.tally`)."""
    can_early = on_record is None and (writer is None or not writer.parquet)
    """(a record handed on, or a Parquet row, cannot be taken back)"""
    total_bytes = sum(part.size for part in parts)

    def problem(text: str) -> None:
        problems.append(text)
        if on_problem is not None:
            on_problem(text)

    for note in notes:  # (found before the run: links not followed)
        problem(note)
    said: set[str] = set()
    """The parts' notes said so far (:attr:`~.worker.PartResult.notes`)."""

    def retried(part: Part, reason: str) -> None:
        problem(f"{reason} while evaluating {part.describe()}; its traces are evaluated again")

    def take(records: list[TraceRecord]) -> None:
        for r in _printable(records):
            if on_record is not None:
                on_record(r)
            r.ci = None
        lines = tally.take(records)
        if writer is not None:
            writer.write(records, lines)

    regroup = Regroup(parts, cfg, work)

    def mark_duplicates(records: list[TraceRecord]) -> None:
        # pieces of one trace in one file were regrouped: a second sighting is another file
        duplicated(seen.add(_printable(records)))

    def duplicated(records: list[TraceRecord]) -> None:
        for r in records:
            r.status = "error"
            r.error = (
                f"{r.source}:{r.line}: trace {r.trace_id!r} was already read earlier: "
                "two files hold the same id"
                if r.line is not None
                else f"{r.source}: trace {r.trace_id!r} was already read earlier: "
                "two files hold the same id"
            )
            r.score = None
            r.passed = None
            r.grade = None
            r.ci = None

    def hold(part: Part, batches: Iterable[list[TraceRecord]]) -> None:
        """A byte range of a cut file: its records held, and taken into the provisional tally
        (until a trace comes as pieces); after the file's last range, the tally is absorbed,
        or dropped and the held records taken."""
        nonlocal early
        for records in batches:
            regroup.hold(part, _printable(records))
            if not can_early or regroup.scattered:
                continue
            if early is None:
                early = Tally(work, ".held", cfg.group_by)
            duplicated(seen.held_duplicates(records))
            for r in records:
                r.ci = None
            early.take(records)
        if regroup.last(part):
            settle()

    def settle() -> None:
        nonlocal early
        if early is not None and not regroup.scattered and not early.agg.capped:
            seen.add_held(regroup.index())
            tally.absorb(early, [writer.file] if writer is not None and writer.file else [])
            regroup.drop()
        else:
            if early is not None:
                early.discard()
            for batch in regroup.release():
                mark_duplicates(batch)
                take(batch)
        early = None

    scattered: dict[str, list[tuple[Part, str, list[int], int]]] = {}
    """Per file whose lines interleave: its scatter ranges' files (``Part.scatter``)."""
    lost_ranges: dict[str, Part] = {}
    """Per file: a scatter range of it that was lost."""
    share: dict[int, int] = {}
    """The progress's bytes of each gather part."""
    reported: dict[int, list[tuple[int, int]]] = {}
    """Per part grouping a file whole after a scatter range was lost: the byte ranges whose
    lines' errors the file's other scatter ranges have reported already."""

    def handle(outcome: PartResult | PartLost) -> None:
        nonlocal done_bytes
        if isinstance(outcome, PartLost):
            part = outcome.part
            problem(f"{part.describe()}: not evaluated: {outcome.reason}")
            lost = TraceRecord(
                trace_id="",
                task="",
                status="error",
                source=part.inputs[0].url,
                offset=part.start,
                error=f"{part.describe()}: not evaluated: {outcome.reason}",
                order=(part.index, 0),
            )
            if part.scatter:
                lost_ranges[part.inputs[0].url] = part
            if part.end is not None:  # the ranges after it number their lines from its end
                url = part.inputs[0].url
                try:
                    base[url] = base.get(url, 0) + range_lines(part, cfg)
                except (OSError, ValueError) as exc:
                    problem(
                        f"{part.describe()}: its lines could not be counted ({exc}); the "
                        "line numbers of the records after it are too small"
                    )
            if regroup.holds(part):
                hold(part, [[lost]])
            else:
                take([lost])
            done_bytes += part.size
            return
        part = parts[outcome.index]
        for note in outcome.notes:  # (each range of a file may say it: once)
            if note not in said:
                said.add(note)
                problem(note)
        if outcome.scattered is not None:
            url = part.inputs[0].url
            scattered.setdefault(url, []).append((part, *outcome.scattered, base.get(url, 0)))
        _shift(outcome, base, part)
        for item, lines in zip(part.inputs, outcome.lines, strict=True):
            base[item.url] = base.get(item.url, 0) + lines
        spans = reported.pop(part.index, None)
        if regroup.holds(part):
            hold(part, outcome.batches())
        else:
            for records in outcome.batches():
                if spans:  # (a line's error is reported once)
                    records = [r for r in records if r.trace_id or not _within(r.offset, spans)]
                batch = regroup.whole(records)
                mark_duplicates(batch)
                take(batch)
        done_bytes += outcome.bytes_read + share.pop(part.index, 0)
        running[0] = 0
        if on_progress is not None:
            held = tally.count + regroup.held
            on_progress(held, spec.count or None, done_bytes, total_bytes)

    running = [0]
    """Records made so far by the part running in this process (not yet handed over)."""

    def in_process(records: int) -> None:
        running[0] += records
        if on_progress is not None:
            held = tally.count + regroup.held + running[0]
            on_progress(held, spec.count or None, done_bytes, total_bytes)

    effective = "dask" if (client is not None or scheduler is not None) else engine
    count = workers or os.cpu_count() or 1
    run = partial(
        run_parts,
        run=run_part,
        cfg=cfg,
        engine=effective,
        workers=workers,
        client=client,
        scheduler=scheduler,
        on_retry=retried,
        here=_scattered_here(cfg),
        send=with_data,
        preload=WORKER_MODULES,
        setup=_leave_signals_to_the_driver,
        stop=stopping,
    )

    def taken(outcomes: Iterable[PartResult | PartLost]) -> bool:
        """Handle each outcome; False when a signal stopped the run on the way."""
        with records_progress(in_process if on_progress is not None else None):
            for outcome in outcomes:
                if isinstance(outcome, PartLost) and stopping():
                    break  # (ended by the signal: not lost, not read)
                handle(outcome)
        if not stopping():
            return True
        problem(f"{active_description()}: the traces read before it are the result")
        if regroup.held:
            settle()
        return False

    try:
        stopped = not taken(run(list(parts)))
        # then the parts that group the scattered lines of each file whose lines interleave
        # (a file whose scatter range was lost is grouped whole, by one worker, instead)
        grouping: list[Part] = []
        for url in {**scattered, **lost_ranges}:
            ranges = scattered.get(url, [])
            first = len(parts) + len(grouping)
            if url in lost_ranges:
                lost = lost_ranges[url]
                # (a copy only this machine has: the worker reads the file itself)
                inputs = lost.inputs
                if lost.ship:
                    inputs = tuple(replace(i, local=None) for i in inputs)
                grouping.append(Part(first, inputs))
                size = lost_ranges[url].inputs[0].size  # (the last range: its end too)
                reported[first] = [
                    (r[0].start, (r[0].end or 0) + (r[0].end == size)) for r in ranges
                ]
            else:
                gathering = gather_parts(ranges, first)
                # each gather part counts its share of the file's other half in the progress
                size = sum(r[0].size - r[0].size // 2 for r in ranges)
                framed = sum(r[2][-1] for r in ranges) or 1
                for g in gathering:
                    mine = sum(end - start for _, start, end, _ in g.gather)
                    share[g.index] = size * mine // framed
                grouping += gathering
        parts.extend(grouping)
        if not stopped and grouping:
            stopped = not taken(run(grouping))
        for ranges in scattered.values():
            for _, path, _, _ in ranges:
                remove_location(path, cfg.storage_options)
        no_trace: list[TraceRecord] = []
        empty = cfg.missing_trace == "empty"
        for gold_id in () if stopped else seen.missing(spec):
            if len(missing_trace) < MAX_LISTED:
                missing_trace.append(gold_id)
            order = (len(parts), len(no_trace))
            # (the lookup reads the whole gold: only once a gold without a trace needs it)
            expected = _gold_or_none(gold_lookup(spec), gold_id) if empty else None
            no_trace.append(
                evaluate_absent(cfg, gold_id, expected, order)
                if expected is not None
                else TraceRecord(
                    trace_id=gold_id,
                    task=gold_id,
                    status="no_trace",
                    error=f"gold {gold_id!r} has no trace",
                    order=order,
                )
            )
            if len(no_trace) >= 10_000:
                take(no_trace)
                no_trace = []
        take(no_trace)
        ended = True
    finally:
        seen.close()
        if early is not None:
            early.discard()
        tally.close()
        if writer is not None:
            writer.close() if ended else writer.discard()
    tasks_path = os.path.join(work, "tasks.jsonl")
    tasks_count = 0
    with open(tasks_path, "wb") as f:
        for outcome_ in tally.tasks.outcomes():
            f.write(_dump_task(outcome_))
            tasks_count += 1
    agg, scores = tally.agg, tally.scores
    lo, hi = agg.score_min, agg.score_max
    median = scores.quantile(0.5, lo, hi) if agg.scored else None
    p10 = scores.quantile(0.1, lo, hi) if agg.scored else None
    pass_k = overall_pass(tally.tasks.by_counts or {}, ks)
    return DatasetResult(
        aggregate=agg,
        criterion=cfg.criterion,
        median=median,
        p10=p10,
        pass_k=pass_k,
        tasks_count=tasks_count,
        errors=tally.errors,
        missing_gold=tally.missing_gold,
        missing_trace=missing_trace,
        problems=problems,
        elapsed=time.perf_counter() - started,
        bytes_read=done_bytes,
        engine="inline" if effective == "local" and (count == 1 or len(parts) <= 1) else effective,
        workers=count,
        _spool=tally.spool_path,
        _tasks=tasks_path,
        _workdir=work,
        gold_problems=spec.problem_count,
        checks_only=spec.kind == "none",
        groups=group_tables(agg.groups, tally.tasks.by_group, [k for k, *_ in pass_k]),
        ks=ks,
        interrupted=stopped,
    )


def active_description() -> str:
    """``"interrupted by SIGINT (Ctrl-C)"`` (or SIGTERM)."""
    stop = active()
    return stop.describe() if stop is not None else "interrupted"
