"""The driver: plan the parts, run them, shift their line numbers, check ids, aggregate.

Memory in the driver does not grow with the number of traces: records go to a spool file (and
``per_trace``) as their part finishes, scores and task outcomes to their spills, seen trace ids
to an SQLite file (duplicates and gold without a trace are found there); only the mergeable
:class:`~.aggregate.Aggregate` stays in memory.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import IO, Any

import msgspec

from ..api import read_rules
from ..parts.engine import PartLost, caught, run_parts
from .aggregate import Aggregate, TaskOutcome, overall_pass, pass_k_json
from .gold import GoldSpec, base_name, build_gold, gold_ids, gold_lookup
from .groups import GroupBy, GroupRow, group_tables, parse_ks
from .inputs import (
    PART_BYTES,
    Part,
    gather_parts,
    in_location,
    list_inputs,
    make_location,
    plan_parts,
    remove_location,
)
from .records import PassCriterion, TraceRecord, record_fields
from .regroup import Regroup, ids_in
from .tally import MAX_LISTED, Tally
from .worker import (
    GOLD_ERRORS,
    Config,
    PartResult,
    evaluate_absent,
    fewer_collections,
    range_lines,
    run_part,
)

__all__ = ["DatasetResult", "aevaluate_dataset", "evaluate_dataset"]


@dataclass
class DatasetResult:
    """A dataset run: iterate it for the per-trace records; ``aggregate`` holds the totals."""

    aggregate: Aggregate
    criterion: PassCriterion
    median: float | None
    p10: float | None
    pass_k: list[tuple[int, int, float | None, float | None]]
    """``(k, tasks with >= k trials, pass@k, pass^k)`` for each k asked for (``--k``; by
    default 1..max trials)."""
    tasks_count: int
    errors: list[TraceRecord]
    missing_gold: list[str]
    missing_trace: list[str]
    problems: list[str]
    """Run-level problems: lost parts, retried workers, unusable gold lines."""
    elapsed: float
    bytes_read: int
    engine: str
    workers: int
    _spool: str
    _tasks: str
    _workdir: str | None = field(default=None, repr=False)
    gold_problems: int = 0
    """Lines of a keyed gold file that could not be used (bad lines, lines without an id or
    expected calls, duplicate ids): an input error, as a broken trace is; the first 100 are
    described in :attr:`problems`."""
    checks_only: bool = False
    """No gold was given: every trace was checked, none scored."""
    groups: dict[str, list[GroupRow]] = field(default_factory=dict)
    """Per breakdown dimension (``group_by``), its groups, failing ones first."""
    ks: tuple[int, ...] | None = None
    """The k of the pass@k / pass^k columns (``None``: 1..max trials)."""

    def __post_init__(self) -> None:
        # the temporary files go with the result (or with close())
        self._finalizer = weakref.finalize(
            self, shutil.rmtree, self._workdir or "", ignore_errors=True
        )

    def __iter__(self) -> Iterator[TraceRecord]:
        """Every record (traces in reading order, then gold without a trace)."""
        decoder = msgspec.json.Decoder(TraceRecord)
        with open(self._spool, "rb") as f:
            for line in f:
                yield decoder.decode(line)

    @property
    def tasks(self) -> Iterator[TaskOutcome]:
        """Each task's trials with pass@k and pass^k (sorted by task within hash partitions)."""
        decoder = msgspec.json.Decoder(TaskOutcome)
        with open(self._tasks, "rb") as f:
            for line in f:
                yield decoder.decode(line)

    @property
    def traces(self) -> int:
        return self.aggregate.traces

    @property
    def mean(self) -> float | None:
        return self.aggregate.mean

    @property
    def pass_rate(self) -> float | None:
        return self.aggregate.pass_rate

    @property
    def input_errors(self) -> int:
        """Error records (broken traces, unreadable lines, lost parts)."""
        return self.aggregate.statuses.get("error", 0)

    def close(self) -> None:
        """Remove the temporary files (also done when the result is collected)."""
        self._finalizer()

    def summary(self) -> dict[str, Any]:
        """The aggregate as JSON data."""
        agg = self.aggregate
        return {
            "traces": agg.traces,
            "statuses": dict(agg.statuses),
            "scored": agg.scored,
            "mean_score": agg.mean,
            "median_score": self.median,
            "p10_score": self.p10,
            "min_score": agg.score_min if agg.scored else None,
            "max_score": agg.score_max if agg.scored else None,
            "grades": {g: agg.grades.get(g, 0) for g in ("A", "B", "C", "D", "F")},
            "score_histogram": agg.histogram,
            "pass_criterion": self.criterion.to_json(),
            "passed": agg.passed,
            "judged": agg.judged,
            "pass_rate": agg.pass_rate,
            "tasks": self.tasks_count,
            **pass_k_json(self.pass_k),
            "groups": {dim: [row.to_json() for row in rows] for dim, rows in self.groups.items()},
            "calls": agg.calls,
            "failed_calls": agg.failed_calls,
            "retries": agg.retries,
            "violations": agg.violations,
            "traces_with_violations": agg.traces_with_violations,
            "tools": [
                {
                    "tool": tool,
                    "calls": c,
                    "failed": f,
                    "retries": r,
                    "failure_rate": fr,
                    "retry_rate": rr,
                }
                for tool, c, f, r, fr, rr in agg.tool_rates()
            ],
            "findings": [
                {
                    "kind": kind,
                    "count": count,
                    "traces": agg.finding_traces[kind],
                    "examples": [trace_id for _, trace_id in agg.examples.get(kind, [])],
                }
                for kind, count in sorted(agg.findings.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            "worst": [{"trace_id": t, "score": s} for s, _, t in agg.worst],
            "missing_gold": agg.statuses.get("no_gold", 0),
            "missing_trace": agg.statuses.get("no_trace", 0),
            "input_errors": self.input_errors,
            "gold_problems": self.gold_problems,
            "elapsed_s": self.elapsed,
            "traces_per_s": agg.traces / self.elapsed if self.elapsed > 0 else None,
            "bytes": self.bytes_read,
            "engine": self.engine,
            "workers": self.workers,
        }


def _dump_task(outcome: TaskOutcome) -> bytes:
    return msgspec.json.encode(outcome) + b"\n"


def evaluate_dataset(
    gold: str | Sequence[Mapping[str, Any]] | None,
    traces: str,
    *,
    format: str = "auto",
    weights: Mapping[str, float] | None = None,
    forbidden: str | Sequence[Mapping[str, Any]] | None = None,
    strict: bool = False,
    trace_key: str | None = None,
    task_key: str | None = None,
    task_regex: str | None = None,
    group_by: str | Sequence[str] | None = None,
    k: str | Sequence[int] | None = None,
    criterion: PassCriterion | None = None,
    per_trace: str | None = None,
    engine: str = "local",
    workers: int | None = None,
    client: Any = None,
    scheduler: str | None = None,
    interleaved: bool = False,
    default_gold: str | None = None,
    gold_by_base_name: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    part_bytes: int | None = None,
    on_record: Callable[[TraceRecord], None] | None = None,
    on_progress: Callable[[int, int | None, int, int], None] | None = None,
    on_problem: Callable[[str], None] | None = None,
    workdir: str | None = None,
    shared_dir: str | None = None,
    pii: bool | Iterable[str] | None = None,
    max_value_bytes: int | None = None,
    details: bool = False,
    missing_trace: str = "empty",
) -> DatasetResult:
    """Evaluate every trace of a dataset against its own gold.

    Args:
        gold: one gold file for every trace, a JSON Lines gold keyed by trace id, a directory
            of gold files matched by name, or the expected calls in Python; None: no gold,
            every trace is checked (status ``no_gold``, no score).
        traces: a file, a directory, a glob, or an fsspec URL (``s3://``, ``memory://``...).
        format: the traces' format (``auto`` detects each trace's).
        weights, forbidden, strict: as for :func:`toolscore.evaluate_trace`.
        trace_key: the field holding the trace id in multi-trace JSON Lines (default: the
            first of ``trace_id``, ``session_id``, ``conversation_id``... present).
        task_key: a field giving each trace's task (read on its first line).
        task_regex: a regex over the trace id giving its task (group ``task``, else group 1,
            else the match); by default ids ending in ``/trialN`` (``_try``, ``-run``...)
            belong to the task before it. One that matches no id raises (after the run).
        group_by: breakdowns (:attr:`DatasetResult.groups`: pass rate, mean score and
            pass^k per group): each a field (``task``, ``source``, ``status``, ``grade``, or
            a field of each trace's first line such as ``model``) or a regex over the trace
            id with named groups, one dimension each (``^(?P<model>[^/]+)/``). A regex that
            matches no id raises (after the run). At most 10,000 groups a dimension are kept
            by name; the rest are counted together.
        k: the k of pass@k and pass^k (``"1,2,4"`` or ``[1, 2, 4]``; default 1..max trials).
        criterion: what counts as a pass (see :class:`PassCriterion`).
        per_trace: write each record as a JSON line (or a Parquet row, for ``.parquet``)
            to this file as its part finishes.
        engine: ``local`` (a process pool), ``dask``, or ``inline`` (this process).
        workers: processes for ``local`` (default: one per CPU).
        client: a ``distributed.Client`` to run the parts on (implies ``engine="dask"``).
        scheduler: a Dask scheduler address (``tcp://host:port``), when no client is given.
        interleaved: the lines of one trace may be anywhere in their file.
        default_gold: with a gold directory, the gold file (local) of every trace the
            directory has no gold for (read before anything runs: a missing or malformed
            one raises); those traces are then scored, not ``no_gold``.
        gold_by_base_name: with a gold directory, a single-trace file with no gold under its
            name (``team/c`` for ``traces/team/c.jsonl``) also matches the gold named after
            its base name (``gold/c.json``): the GitHub Action's ``gold-dir`` matching.
        storage_options: passed to fsspec for URLs (credentials, endpoint).
        part_bytes: the size of a byte-range part of a large file.
        on_record: receives each record in reading order.
        on_progress: receives ``(records so far, traces expected or None, bytes read so far,
            total bytes)`` as parts finish.
        on_problem: receives run-level problems (a worker died, a part retried) as they happen.
        workdir: where temporary files go (default: the system's).
        shared_dir: for a Dask cluster whose workers do not share this machine's disk (see
            :func:`workers_share`), a directory that this process and every worker read and
            write: a path on a disk they all mount, or a URL (``s3://bucket/tmp/``, with
            ``storage_options``). A large compressed file is decompressed into it and an
            interleaved one scattered through it by the workers (without it, this process
            does both, and sends the workers their ranges and partitions). The run's files
            there are removed when it ends.
        pii: also look for (and redact) personal data, as for :func:`toolscore.evaluate_trace`
            (``None``: the kinds active in the caller, e.g. the command line's ``--pii``).
        max_value_bytes: the largest value read whole (``None``: the limit active in the
            caller, e.g. ``--max-value-bytes``). Both are carried to every worker.
        details: each record handed to ``on_record`` carries ``ci``, a
            :class:`~.ci.TraceView` of its findings (with their lines) and its baseline
            summary, for JUnit, SARIF and baselines (:class:`~.ci.DatasetCi`); never stored.

    Raises:
        InputError: TRACES matches nothing.
        GoldFileError: the gold cannot be read.
        UsageError: a bad option (format, engine, regex, k), or a regex (``group_by``,
            ``task_regex``) that matched no trace id.
    """
    from ..errors import UsageError
    from ..result import normalize_weights
    from ..sources.detect import check_format

    check_format(format)
    if engine not in ("local", "dask", "inline"):
        raise UsageError(f"unknown engine {engine!r}; use local, dask or inline")
    grouping = GroupBy.parse(
        [group_by] if isinstance(group_by, str) else group_by or (), task_regex
    )
    ks = parse_ks(k)
    norm = None if weights is None else normalize_weights(weights)
    from ..limits import max_value_bytes as active_limit
    from ..limits import value_limit
    from ..redact import active_pii, pii_kinds

    kinds = active_pii() if pii is None else pii_kinds(pii)
    with value_limit(max_value_bytes):  # checks the value
        limit = active_limit()
    options = dict(storage_options or {})
    started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="toolscore-dataset-", dir=workdir)
    own_client: Any = None
    shared: str | None = None
    try:
        # the rules are read (and checked) here, first: a worker anywhere gets them
        rules = read_rules(forbidden, None, None, criterion)
        spec = build_gold(
            gold,
            work,
            key=trace_key,
            storage_options=options,
            default=default_gold,
            by_base_name=gold_by_base_name,
        )
        inputs = list_inputs(traces, options)
        if client is None and (scheduler is not None or engine == "dask"):
            client = own_client = _connect(scheduler)
        # the work directory, when every worker sees it (a Dask cluster's may not); else
        # the shared directory given, for the files every worker must read
        local_disk = work if client is None or workers_share(client, work) else None
        area = local_disk
        if local_disk is None and shared_dir is not None:
            area = in_location(shared_dir, os.path.basename(work))
            try:
                make_location(area, options)
            except (OSError, ValueError) as exc:
                from ..errors import UsageError

                raise UsageError(
                    f"--shared-dir {shared_dir}: cannot make a directory in it: {exc}"
                ) from None
            shared = area
        key = trace_key if trace_key not in (None, "auto") else None
        parts = plan_parts(
            inputs,
            key=key,
            task_key=task_key,
            force_interleaved=interleaved,
            storage_options=options,
            part_bytes=part_bytes or part_size(inputs, engine, workers, client, scheduler),
            unpack_dir=area,
            # no directory in common with the workers: a large compressed file is
            # decompressed here and an interleaved one scattered here, and each range's or
            # partition's bytes go to its worker with it
            ship_dir=work if area is None else None,
        )
        cfg = Config(
            gold=spec,
            format=format,
            weights=norm,
            forbidden=rules,
            strict=strict,
            trace_key=trace_key,
            task_key=task_key,
            task_regex=task_regex,
            criterion=criterion or PassCriterion(),
            interleaved=interleaved,
            storage_options=options,
            spill_dir=work,
            records_dir=local_disk,
            scatter_dir=area if area is not None else work,  # (else scattered here)
            pii=kinds,
            max_value_bytes=limit,
            details=details,
            missing_trace=missing_trace,
            group_by=grouping or None,
        )
        with fewer_collections():  # the records taken in: as a worker's traces (worker.py)
            result = _drive(
                parts,
                cfg,
                spec,
                work,
                started=started,
                per_trace=per_trace,
                engine=engine,
                workers=workers,
                client=client,
                scheduler=scheduler,
                on_record=on_record,
                on_progress=on_progress,
                on_problem=on_problem,
                ks=ks,
            )
        unmatched = result.aggregate.groups.unmatched() if result.aggregate.groups else []
        if unmatched:
            result.close()
            raise UsageError("; ".join(unmatched))
        return result
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        if shared is not None:
            remove_location(shared, options, recursive=True)
        if own_client is not None:
            own_client.close()


def _connect(scheduler: str | None) -> Any:
    """A client of the Dask scheduler at ``scheduler``, or of a new local cluster."""
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the extras installed
        from ..errors import UsageError

        raise UsageError("--engine dask needs dask: pip install 'toolscore[dask]'") from None
    if scheduler:
        return Client(scheduler)  # type: ignore[no-untyped-call]
    return Client(processes=True)  # type: ignore[no-untyped-call]


def workers_share(client: Any, directory: str) -> bool:
    """Whether every worker of ``client``'s cluster reads and writes this process's
    ``directory`` (a ``LocalCluster``'s do; so do other machines' that mount it from the
    same file server): each worker reads a probe file written here and writes one back for
    this process to read. A worker's address says nothing of this (one in a container may
    have a loopback address and a disk of its own), so the probe asks the disk itself.
    Workers that join later are not asked: they must see it as the first did."""
    import uuid

    token = uuid.uuid4().hex
    probe = os.path.join(directory, f"probe-{token}")
    try:
        with open(probe, "w", encoding="utf-8") as f:
            f.write(token)
        answers = client.run(_answer_probe, probe, token, on_error="return")
    except Exception:  # an unreachable scheduler: the run reports it
        return False
    finally:
        remove_location(probe)
    try:
        return bool(answers) and all(
            isinstance(written, str) and _holds(written, token) for written in answers.values()
        )
    finally:
        for written in answers.values():
            if isinstance(written, str):
                remove_location(written)


def _answer_probe(probe: str, token: str) -> str | None:
    """On a worker: the file written back when ``probe`` reads as ``token`` (else None)."""
    if not _holds(probe, token):
        return None
    directory, name = os.path.split(probe)
    try:
        fd, written = tempfile.mkstemp(prefix=f"{name}-", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(token)
    except OSError:
        return None
    return written


def _holds(path: str, token: str) -> bool:
    """Whether the file at ``path`` can be read and reads as ``token``."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == token
    except OSError:
        return False


async def aevaluate_dataset(
    gold: str | Sequence[Mapping[str, Any]], traces: str, **options: Any
) -> DatasetResult:
    """:func:`evaluate_dataset` from async code: the driver runs in a worker thread (the
    parts run in processes or on the cluster); cancelling abandons the wait."""
    import functools

    import anyio.to_thread

    call = functools.partial(evaluate_dataset, gold, traces, **options)
    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


class _Writer:
    """The per-trace file: JSON Lines, or Parquet through pyarrow in row groups."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.parquet = path.lower().endswith(".parquet")
        self._rows: list[dict[str, Any]] = []
        self._pq: Any = None
        if self.parquet:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                from ..errors import UsageError

                raise UsageError(
                    f"{path}: Parquet needs pyarrow: pip install 'toolscore[parquet]'"
                ) from None
            self._f = None
        else:
            self._f = open(path, "wb")

    @property
    def file(self) -> IO[bytes] | None:
        """The JSON Lines file written (None for Parquet)."""
        return self._f

    def write(self, records: list[TraceRecord], lines: bytes) -> None:
        """Write the records (``lines``: their JSON lines, as the run's spool has them)."""
        if self._f is not None:
            self._f.write(lines)
            self._f.flush()
            return
        for r in records:
            row = record_fields(r)  # redacted as the JSON lines are
            row["findings"] = [{"kind": k, "count": v} for k, v in r.findings.items()]
            row["tools"] = [
                {"tool": t, "calls": c[0], "failed": c[1], "retries": c[2]}
                for t, c in row["tools"].items()
            ]
            self._rows.append(row)
        if len(self._rows) >= 65_536:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(self._rows, schema=_parquet_schema())
        if self._pq is None:
            self._pq = pq.ParquetWriter(self.path, table.schema)
        self._pq.write_table(table)
        self._rows = []

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            return
        self._flush()
        if self._pq is None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist([], schema=_parquet_schema()), self.path)
        else:
            self._pq.close()


def _parquet_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("trace_id", pa.string()),
            ("task", pa.string()),
            ("status", pa.string()),
            ("score", pa.float64()),
            ("grade", pa.string()),
            ("passed", pa.bool_()),
            ("calls", pa.int64()),
            ("expected_calls", pa.int64()),
            ("selection_accuracy", pa.float64()),
            ("argument_f1", pa.float64()),
            ("sequence_accuracy", pa.float64()),
            ("required_call_recall", pa.float64()),
            ("failed_calls", pa.int64()),
            ("retries", pa.int64()),
            ("violations", pa.int64()),
            (
                "findings",
                pa.list_(pa.struct([("kind", pa.string()), ("count", pa.int64())])),
            ),
            (
                "tools",
                pa.list_(
                    pa.struct(
                        [
                            ("tool", pa.string()),
                            ("calls", pa.int64()),
                            ("failed", pa.int64()),
                            ("retries", pa.int64()),
                        ]
                    )
                ),
            ),
            ("source", pa.string()),
            ("line", pa.int64()),
            ("offset", pa.int64()),
            ("error", pa.string()),
        ]
    )


class _Seen:
    """Trace ids seen so far, on disk: a second sighting is an error record. With
    ``by_base_name`` (gold matched by a trace's base name too), the base names of the ids
    are kept as well, so gold used that way is not "gold without a trace"."""

    def __init__(self, path: str, by_base_name: bool = False) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.execute("PRAGMA journal_mode=OFF")
        self.conn.execute("PRAGMA synchronous=OFF")
        self.conn.execute("CREATE TABLE seen (id TEXT PRIMARY KEY) WITHOUT ROWID")
        self.by_base_name = by_base_name
        self.used = False
        """Whether an id was added (else no record can be a duplicate)."""
        if by_base_name:
            self.conn.execute("CREATE TABLE bases (id TEXT PRIMARY KEY) WITHOUT ROWID")

    def _bases(self, records: list[TraceRecord]) -> None:
        if self.by_base_name:
            self.conn.executemany(
                "INSERT OR IGNORE INTO bases VALUES (?)",
                [(base_name(r.trace_id),) for r in records if "/" in r.trace_id],
            )

    def held_duplicates(self, records: list[TraceRecord]) -> list[TraceRecord]:
        """For records taken provisionally (a cut file's, :mod:`.tally`): those whose id was
        seen before the file. The file's own ids are not added until :meth:`add_held` (an id
        that comes back within the file is a trace read as pieces: the provisional tally is
        then dropped, and its records go through :meth:`add`)."""
        self._bases(records)
        if not self.used:
            return []
        seen = ids_in(self.conn, "seen", [r.trace_id for r in records if r.trace_id])
        return [r for r in records if r.trace_id in seen] if seen else []

    def add_held(self, index: str | None) -> None:
        """The provisionally taken file's ids are seen: the table ``ids`` of the SQLite file
        ``index``, the regrouping's (:meth:`~.regroup.Regroup.index`), which holds every one:
        each record of a byte range with a trace id is a piece (it has its line)."""
        self.conn.commit()
        if index is not None:
            self.conn.execute("ATTACH DATABASE ? AS held", (index,))
            self.conn.execute("PRAGMA held.cache_size=-256")  # (read once, in order)
            try:
                self.conn.execute("INSERT OR IGNORE INTO seen SELECT id FROM held.ids")
                self.conn.commit()
            finally:
                self.conn.execute("DETACH DATABASE held")
        self.used = True

    def add(self, records: list[TraceRecord]) -> list[TraceRecord]:
        """Records whose id was seen before (in this batch or an earlier one)."""
        ids = [(r.trace_id,) for r in records if r.trace_id]
        self._bases(records)
        self.used = self.used or bool(ids)
        self.conn.commit()  # a rollback below must undo this batch only
        before = self.conn.total_changes
        self.conn.executemany("INSERT OR IGNORE INTO seen VALUES (?)", ids)
        if self.conn.total_changes - before == len(ids):
            return []
        # rare: find which ones (each record's id against those before it)
        self.conn.rollback()
        dup: list[TraceRecord] = []
        for r in records:
            if not r.trace_id:
                continue
            cur = self.conn.execute("INSERT OR IGNORE INTO seen VALUES (?)", (r.trace_id,))
            if cur.rowcount == 0:
                dup.append(r)
        return dup

    def missing(self, spec: GoldSpec) -> Iterator[str]:
        self.conn.commit()
        if spec.kind == "keyed" and spec.path is not None:
            # one query over the two indexes, in SQLite: not one query per gold entry
            self.conn.execute("ATTACH DATABASE ? AS g", (spec.path,))
            unseen = "SELECT id FROM g.gold WHERE id NOT IN (SELECT id FROM seen)"
            if self.by_base_name:
                unseen += " AND id NOT IN (SELECT id FROM bases)"
            try:
                for (gold_id,) in self.conn.execute(unseen + " ORDER BY id"):
                    yield gold_id
            finally:
                self.conn.execute("DETACH DATABASE g")
            return
        for gold_id in gold_ids(spec):
            row = self.conn.execute("SELECT 1 FROM seen WHERE id = ?", (gold_id,)).fetchone()
            if row is None and self.by_base_name:
                row = self.conn.execute("SELECT 1 FROM bases WHERE id = ?", (gold_id,)).fetchone()
            if row is None:
                yield gold_id

    def close(self) -> None:
        self.conn.close()


MIN_PART_BYTES = 256 * 1024
"""The smallest byte range a multi-trace file is cut into when it is sized for the workers
(about 50-500 small traces: a part's scheduling costs a few ms)."""


def part_size(
    inputs: Sequence[Any], engine: str, workers: int | None, client: Any, scheduler: str | None
) -> int:
    """The byte-range size that gives every worker of a pool work: a file of thousands of
    small traces, a few MB in all, is cut into about four ranges per worker (from
    :data:`MIN_PART_BYTES` up to :data:`~.inputs.PART_BYTES`), not read by one process."""
    if client is not None or scheduler is not None or engine != "local":
        return PART_BYTES
    count = workers or os.cpu_count() or 1
    if count <= 1:
        return PART_BYTES
    biggest = max((item.size for item in inputs), default=0)
    return max(MIN_PART_BYTES, min(PART_BYTES, biggest // (4 * count)))


def _gold_or_none(lookup: Any, gold_id: str) -> list[Any] | None:
    """A gold entry's calls (a gold file named ``gold_id`` in a directory too), or None
    when it cannot be read (it is then reported as gold without a trace)."""
    try:
        found: list[Any] | None = lookup.get(gold_id, gold_id)
    except GOLD_ERRORS:
        return None
    return found


def with_data(part: Part) -> Part:
    """``part`` with its bytes, as sent to a cluster: a :attr:`~.inputs.Part.ship` range or
    partition, read from this machine's files as it is submitted (at most the parts in
    flight are in memory)."""
    sections = part.gather or ((part.inputs[0].path, part.start, part.end or part.start, 0),)
    pieces = []
    for path, start, end, _ in sections:
        with open(path, "rb") as f:
            f.seek(start)
            pieces.append(f.read(end - start))
    return replace(part, data=b"".join(pieces))


def _scattered_here(cfg: Config) -> Callable[[Part], Callable[[], PartResult] | None]:
    """A scatter range whose file only this machine reads runs here."""

    def here(part: Part) -> Callable[[], PartResult] | None:
        return partial(caught, part, run_part, cfg) if part.ship and part.scatter else None

    return here


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
) -> DatasetResult:
    tally = Tally(work, group_by=cfg.group_by)
    seen = _Seen(os.path.join(work, "seen.sqlite"), spec.by_base_name)
    writer = _Writer(per_trace) if per_trace else None
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

    def retried(part: Part, reason: str) -> None:
        problem(f"{reason} while evaluating {part.describe()}; its traces are evaluated again")

    def take(records: list[TraceRecord]) -> None:
        for r in records:
            if on_record is not None:
                on_record(r)
            r.ci = None
        lines = tally.take(records)
        if writer is not None:
            writer.write(records, lines)

    regroup = Regroup(parts, cfg, work)

    def mark_duplicates(records: list[TraceRecord]) -> None:
        # pieces of one trace in one file were regrouped: a second sighting is another file
        duplicated(seen.add(records))

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
            regroup.hold(part, records)
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
        if on_progress is not None:
            held = tally.count + regroup.held
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
        preload=("toolscore.dataset.worker", "toolscore.api"),
    )
    try:
        for outcome in run(list(parts)):
            handle(outcome)
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
        for outcome in run(grouping) if grouping else ():
            handle(outcome)
        for ranges in scattered.values():
            for _, path, _, _ in ranges:
                remove_location(path, cfg.storage_options)
        no_trace: list[TraceRecord] = []
        lookup = gold_lookup(spec) if cfg.missing_trace == "empty" else None
        for gold_id in seen.missing(spec):
            if len(missing_trace) < MAX_LISTED:
                missing_trace.append(gold_id)
            order = (len(parts), len(no_trace))
            expected = None if lookup is None else _gold_or_none(lookup, gold_id)
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
    finally:
        seen.close()
        if early is not None:
            early.discard()
        tally.close()
        if writer is not None:
            writer.close()
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
    )
