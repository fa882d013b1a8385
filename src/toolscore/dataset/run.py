"""The driver: plan the parts, run them, shift their line numbers, check ids, aggregate.

Memory in the driver does not grow with the number of traces: records go to a spool file (and
``per_trace``) as their part finishes, scores and task outcomes to their spills, seen trace ids
to an SQLite file (duplicates and gold without a trace are found there); only the mergeable
:class:`~.aggregate.Aggregate` stays in memory.

Where things are: :class:`DatasetResult` in ``_result``; the driver's loop in ``_driver``;
the seen ids in ``_seen``; the per-trace file in ``_per_trace``; the Dask client, the
shared-directory probe and what travels to a cluster in ``_dask``; :func:`evaluate_dataset`
and the size of a part here. Every name is re-exported here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import anyio.to_thread

from .._interrupt import unescalated
from ..api import read_rules
from ..errors import UsageError
from ..limits import ReadLimits, read_limits, reading_limits, value_limit
from ..limits import max_value_bytes as active_limit
from ..parts.engine import start_early
from ..redact import active_pii, pii_kinds
from ..result import normalize_weights
from ..sources.detect import check_format
from ._dask import connect, workers_ignore_sigint
from ._dask import with_data as with_data
from ._dask import workers_share as workers_share
from ._driver import WORKER_MODULES, _drive
from ._files import out_of_space
from ._per_trace import _Writer as _Writer
from ._result import DatasetResult as DatasetResult
from .gold import build_gold
from .groups import GroupBy, parse_ks
from .inputs import PART_BYTES, in_location, list_inputs, make_location, plan_parts, remove_location
from .records import PassCriterion, TraceRecord
from .worker import Config, fewer_collections

__all__ = ["DatasetResult", "aevaluate_dataset", "evaluate_dataset"]


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
    dask_dashboard: bool = False,
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
    follow_symlinks: bool = False,
    limits: ReadLimits | None = None,
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
            Without either, ``engine="dask"`` starts a local cluster that only this run can
            use (loopback addresses, TLS with a key made for the run:
            :func:`~._dask.local_cluster_options`).
        dask_dashboard: that local cluster serves its dashboard (on 127.0.0.1:8787).
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
        limits: the most a compressed input may decompress to, a trace may hold in memory,
            and a remote input may stall (:class:`~toolscore.limits.ReadLimits`; ``None``:
            the ones in force in the caller, e.g. the command line's). Carried to every
            worker.
        follow_symlinks: read the files that symbolic links in a local trace or gold
            directory (or glob) lead to outside it, and enter linked directories (each
            once); by default such a link is skipped and named in :attr:`~DatasetResult.problems`.

    Raises:
        InputError: TRACES matches nothing.
        GoldFileError: the gold cannot be read.
        UsageError: a bad option (format, engine, regex, k), or a regex (``group_by``,
            ``task_regex``) that matched no trace id.
    """
    check_format(format)
    if engine not in ("local", "dask", "inline"):
        raise UsageError(f"unknown engine {engine!r}; use local, dask or inline")
    grouping = GroupBy.parse(
        [group_by] if isinstance(group_by, str) else group_by or (), task_regex
    )
    ks = parse_ks(k)
    norm = None if weights is None else normalize_weights(weights)
    kinds = active_pii() if pii is None else pii_kinds(pii)
    with value_limit(max_value_bytes):  # checks the value
        limit = active_limit()
    options = dict(storage_options or {})
    limits = limits or read_limits()
    started = time.perf_counter()
    if _local_pool(engine, client, scheduler) and likely_pooled(traces, workers):
        start_early(WORKER_MODULES)  # (its imports overlap the gold's reading)
    work = tempfile.mkdtemp(prefix="toolscore-dataset-", dir=workdir)
    own_client: Any = None
    shared: str | None = None
    skipped: list[str] = []
    """The links not followed (:func:`~.inputs.list_inputs`)."""
    with reading_limits(limits):  # (the planner's and the inline engine's reading)
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
                follow_symlinks=follow_symlinks,
                skipped=skipped,
            )
            inputs = list_inputs(traces, options, follow_symlinks=follow_symlinks, skipped=skipped)
            if client is None and (scheduler is not None or engine == "dask"):
                # a local cluster's files (removed with the run's), its workers deaf to Ctrl-C
                # (a Ctrl-C meanwhile is taken up once it has started: the run then ends
                # with its report)
                with _scratch_in(work), workers_ignore_sigint(work), unescalated():
                    client = own_client = connect(scheduler, dask_dashboard)
            # the work directory, when every worker sees it (a Dask cluster's may not); else
            # the shared directory given, for the files every worker must read
            local_disk = work if client is None or workers_share(client, work) else None
            area = local_disk
            if local_disk is None and shared_dir is not None:
                area = in_location(shared_dir, os.path.basename(work))
                try:
                    make_location(area, options)
                except (OSError, ValueError) as exc:
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
                read_limits=limits,
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
                    notes=skipped,
                )
            unmatched = result.aggregate.groups.unmatched() if result.aggregate.groups else []
            if unmatched:
                result.close()
                raise UsageError("; ".join(unmatched))
            return result
        except BaseException as exc:
            if own_client is not None:  # (first: its workers' files are in the work directory)
                own_client.close()
                own_client = None
            shutil.rmtree(work, ignore_errors=True)
            full = out_of_space(exc, os.path.dirname(work))
            if full is not None:
                raise full from None
            raise
        finally:
            if shared is not None:
                remove_location(shared, options, recursive=True)
            if own_client is not None:
                own_client.close()


@contextlib.contextmanager
def _scratch_in(work: str) -> Iterator[None]:
    """Dask's temporary directory (a local cluster's workers' files and locks, otherwise
    ``$TMPDIR/dask-scratch-space``, left behind) inside the run's work directory."""
    try:
        import dask  # optional (the dask extra): only when a cluster is started
    except ImportError:  # pragma: no cover - depends on the extras installed
        yield
        return
    with dask.config.set({"temporary-directory": work}):
        yield


async def aevaluate_dataset(
    gold: str | Sequence[Mapping[str, Any]], traces: str, **options: Any
) -> DatasetResult:
    """:func:`evaluate_dataset` from async code: the driver runs in a worker thread (the
    parts run in processes or on the cluster); cancelling abandons the wait."""
    call = partial(evaluate_dataset, gold, traces, **options)
    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


MIN_PART_BYTES = 256 * 1024
"""The smallest byte range a multi-trace file is cut into when it is sized for the workers
(about 50-500 small traces: a part's scheduling costs a few ms)."""


def part_size(
    inputs: Sequence[Any], engine: str, workers: int | None, client: Any, scheduler: str | None
) -> int:
    """The byte-range size that gives every worker of a pool work: a file of thousands of
    small traces, a few MB in all, is cut into about four ranges per worker (from
    :data:`MIN_PART_BYTES` up to :data:`~.inputs.PART_BYTES`), not read by one process."""
    if not _local_pool(engine, client, scheduler):
        return PART_BYTES
    count = _pool_size(workers)
    if count <= 1:
        return PART_BYTES
    biggest = max((item.size for item in inputs), default=0)
    return max(MIN_PART_BYTES, min(PART_BYTES, biggest // (4 * count)))


def _local_pool(engine: str, client: Any, scheduler: str | None) -> bool:
    """Whether the run's parts go to this machine's process pool (not Dask, not inline)."""
    return engine == "local" and client is None and scheduler is None


def _pool_size(workers: int | None) -> int:
    """The processes a local pool of ``workers`` has (None: one a core)."""
    return workers or os.cpu_count() or 1


def likely_pooled(traces: str, workers: int | None) -> bool:
    """Whether a local run is likely to cut ``traces`` into parts for a pool: a local file of
    at least two of the smallest parts, and more than one worker. Only then is the pool's
    forkserver started before the gold is read (a small run stays in this process: a server
    started for it would import for nothing, some 0.4 s of CPU; so would one for a large
    file read whole, compressed or interleaved). A directory, a glob or a URL is not
    measured here: its pool starts when its first part does."""
    if _pool_size(workers) <= 1:
        return False
    try:
        return os.path.isfile(traces) and os.path.getsize(traces) >= 2 * MIN_PART_BYTES
    except (OSError, TypeError, ValueError):
        return False
