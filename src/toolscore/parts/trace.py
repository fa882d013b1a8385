"""Several processes for one big trace file: parts read side by side, merged in order.

For a large JSON Lines file of the custom format (a regular file, not compressed), :func:`plan`
cuts the file at line starts: part 0 for the main process, and for each other core a big part
and a small one. :func:`run` reads part 0 here while the others run on the engine's forked
pool (:mod:`.engine`), each with a pipeline of its own, and merges each, in order, as soon as
it is done (so only the small parts' merges are left at the end). The merge:

- each part's checks were told :meth:`~toolscore.checks._base.BaseCheck.begin_part`, and
  their states (:class:`~toolscore.checks._base.State`) are merged in order after the main
  process's (:meth:`~toolscore.pipeline.Pipeline.add_part`): counts, the argument pairing's
  candidates, the distinct signatures (their run files), the secrets and violations
  renumbered, exact sums added; the Levenshtein column is replayed over the part's
  tool-name sequence and the trajectory over its first calls, both of which depend on the
  calls before the part;
- a retry across the boundary (the part's first call repeating the previous part's failed
  last call) is found at the merge (:meth:`~toolscore.checks._base.State.findings_between`);
- the part's findings are moved (their call index and line: their messages are rendered
  from them);
- its calls, spooled for the JSON report, are copied into the report (in the kernel, by a
  thread, while the merge goes on).

So the result and the reports are the ones one process gives, to the last bit (the latency
and cost totals are exact sums). A part whose process fails is read again by the main
process, with a pipeline of its own and a ``RuntimeWarning``: a failure costs time, not a
wrong answer. The parts' files (spools, run files, tool-name logs) live in one temporary
directory, removed when the main pipeline is.
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import multiprocessing
import os
import pickle
import shutil
import signal
import tempfile
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._idkeys import ID_KEYS
from .._interrupt import Interrupted, active
from ..calls import Batch, Finding, FindingValues, Location
from ..checks._base import BaseCheck, State
from ..dataset.shape import first_record
from ..errors import InputError, MalformedTrace
from ..limits import PARALLEL_MIN_BYTES
from ..pipeline import Pipeline, emit_sync, feed_sync, finding_order
from ..redact import redact_findings
from ..reports.json import CallSpool
from ..sources import source_size
from ..sources._drive import CHUNK_SIZE
from ..sources._util import count_newlines
from ..sources.custom import CustomDialect
from ..sources.detect import detect
from ..sources.jsonl import JsonlDecoder
from .engine import PartLost, run_parts

__all__ = [
    "PARALLEL_MIN_BYTES",
    "Plan",
    "available_cpus",
    "mergeable",
    "plan",
    "read_part",
    "run",
]

_CHUNK = 1 << 20
"""What the plan reads at a time to detect the format and find line starts."""
_FORK = "fork"


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Plan:
    """Where a file is cut: part ``k`` is the bytes ``[bounds[k], bounds[k + 1])``.

    The main process reads part 0; the others run on ``processes`` forked readers.
    """

    path: str
    bounds: tuple[int, ...]
    per_process: int = 1

    @property
    def parts(self) -> int:
        return len(self.bounds) - 1

    @property
    def processes(self) -> int:
        """The other processes: one per ``per_process`` parts past the first."""
        return -(-(self.parts - 1) // max(1, self.per_process))


def plan(trace: Any, format: str, workers: int | None) -> Plan | None:
    """How to read ``trace`` in parts, or None when it is read in one.

    Parts need: ``workers`` other than 1 (None: one process per CPU), a path to a regular,
    uncompressed file of at least two parts' worth of bytes, JSON Lines of the custom
    format (per :func:`~toolscore.sources.detect.detect`, on the first megabyte), and the
    ``fork`` start method (Linux).
    """
    if workers is not None and workers <= 1:
        return None
    if not isinstance(trace, (str, os.PathLike)):
        return None
    path = os.fspath(trace)
    if not isinstance(path, str) or path == "-" or path.endswith((".gz", ".zst")):
        return None
    if _FORK not in multiprocessing.get_all_start_methods():
        return None

    size = source_size(path)
    if size is None:
        return None
    processes = min(workers or available_cpus(), size // PARALLEL_MIN_BYTES)
    if processes < 2:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(_CHUNK)
            found = detect(head, format=format, final=len(head) == size, source=path)
            if found.layout != "jsonl" or found.dialect != "custom" or head[:3] == b"\xef\xbb\xbf":
                return None
            if _names_traces(head):
                return None  # one process sees every trace id: several are said (_traceids)
            bounds = [0]
            for at in _splits(size, processes):
                cut = _line_start(f, at, size)
                if cut is None or cut <= bounds[-1]:
                    return None
                bounds.append(cut)
    except (OSError, InputError):
        return None
    bounds.append(size)
    return Plan(path, tuple(bounds), per_process=2)


def _names_traces(head: bytes) -> bool:
    """Whether the file's calls name their trace (``trace_id``...): such a file may hold
    several traces, which only a reader of the whole sees and says."""
    first = first_record(head)
    return first is not None and any(key in first for key in ID_KEYS)


TAIL_SHARE = 0.1
"""The share of another process's bytes in its second, small part. The main process merges
the first (big) part while that process reads the small one, so only the small part's merge
is left once every process is done (measured on the benchmark trace, 1 GB: the merge of the
other process's half took 0.5 s; reading the half, 4.4 s)."""


def _splits(size: int, processes: int) -> list[int]:
    """Where parts 1, 2... start (before the line boundaries are found): the main process's
    part 0 as big as another process's first part (it merges while they read their second);
    each other process's bytes cut into a big part and a :data:`TAIL_SHARE` small one."""
    share = size / (processes - TAIL_SHARE)  # each other process's bytes
    big = share * (1 - TAIL_SHARE)  # part 0, and each other process's first part
    starts: list[int] = []
    for c in range(processes - 1):
        at = big + c * share
        starts += [int(at), int(at + big)]
    return starts


def _line_start(f: Any, at: int, size: int) -> int | None:
    """The offset of the first line that starts after ``at``."""
    f.seek(at)
    pos = at
    while pos < size:
        block = f.read(_CHUNK)
        if not block:
            return None
        nl = block.find(b"\n")
        if nl >= 0:
            return pos + nl + 1 if pos + nl + 1 < size else None
        pos += len(block)
    return None


@dataclass
class PartResult:
    """What a part's process sends back."""

    calls: int
    lines: int
    states: list[State | None]
    findings: str
    spool: str | None
    spooled: int
    error: InputError | None


def _part_batches(
    plan: Plan,
    k: int,
    calls: int,
    lines: int,
    on_bytes: Callable[[int], None] | None,
    newlines: list[int],
) -> Iterator[Batch]:
    """Part ``k`` read as JSON Lines, its calls numbered from ``calls``, its lines from
    ``lines``; ``newlines[0]`` counts the part's newlines on the way."""
    dialect = CustomDialect(plan.path)
    dialect.next_index = calls
    decoder = JsonlDecoder(dialect, plan.path, lines_before=lines)
    decoder.check_empty = False
    start, end = plan.bounds[k], plan.bounds[k + 1]
    with open(plan.path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            chunk = f.read(min(CHUNK_SIZE, left))
            if not chunk:
                break
            left -= len(chunk)
            newlines[0] += count_newlines(chunk)
            if on_bytes is not None:
                try:
                    on_bytes(len(chunk))
                except Interrupted:  # Ctrl-C or SIGTERM: the part ends here, as a read would
                    batch = decoder.close()
                    batch.decoded = True
                    batch.error = _stopped(plan.path)
                    yield batch
                    return
            batch = decoder.feed(chunk)
            if not batch.empty:
                batch.decoded = True
                yield batch
    batch = decoder.close()
    batch.decoded = True
    yield batch


_PR_SET_PDEATHSIG = 1


def _end_with_parent(parent: int) -> None:
    """Have the kernel kill this forked process when its parent ends (Linux's
    ``PR_SET_PDEATHSIG``), so that a main process killed by any signal, SIGKILL included,
    leaves no reader behind blocked on a pipe nobody reads; and leave at once if the parent
    is already gone (it ended between the fork and this call)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux: the pipes still close
        pass
    if parent and os.getppid() != parent:
        os._exit(1)


def read_part(
    plan: Plan,
    k: int,
    make_checks: Callable[[], list[BaseCheck]],
    tmp: str,
    spool_calls: bool,
    advance: Callable[[int], None],
) -> tuple[PartResult, list[BaseCheck]]:
    """Read part ``k`` with a pipeline of its own: what to send, and the checks (whose files
    the result names)."""
    checks = make_checks()
    for check in checks:
        check.begin_part()
    findings_path = os.path.join(tmp, f"findings-{k}")
    spool_path = os.path.join(tmp, f"calls-{k}") if spool_calls else None
    spool = CallSpool(path=spool_path) if spool_path is not None else None
    newlines = [0]
    with open(findings_path, "wb") as out:

        def keep(found: list[Finding]) -> None:
            pickle.dump([f.values() for f in found], out, pickle.HIGHEST_PROTOCOL)

        pipeline = Pipeline(checks, on_finding=keep, on_calls=spool)
        feed_sync(pipeline, _part_batches(plan, k, 0, 0, advance, newlines))
    if spool is not None:
        spool.flush()
        spool.close()  # its file stays, for the main process
    result = PartResult(
        calls=pipeline.calls_read,
        lines=newlines[0],
        states=pipeline.states(),
        findings=findings_path,
        spool=spool_path,
        spooled=spool.count if spool is not None else 0,
        error=pipeline.error,
    )
    return result, checks


@dataclass(frozen=True)
class _Part:
    index: int


@dataclass(frozen=True)
class _Job:
    """What a forked reader needs (it inherits it: ``make_checks`` need not pickle)."""

    plan: Plan
    make_checks: Callable[[], list[BaseCheck]]
    tmp: str
    spool_calls: bool
    progress: Any


_KEPT: list[Any] = []
"""In a forked reader, every part's checks: their finalizers would delete the run files
just handed over (the process leaves without freeing them)."""


def _read_forked(part: _Part, job: _Job) -> str:
    """In a forked reader: read a part with a pipeline of its own; its result goes through a
    file, whose name is returned (a result of megabytes, the hard rules' state of a part,
    through the pool's pipe kept this reader waiting until the main process, still reading
    its own part, took it)."""

    def advance(n: int) -> None:
        with job.progress.get_lock():
            job.progress.value += n

    result, checks = read_part(
        job.plan, part.index, job.make_checks, job.tmp, job.spool_calls, advance
    )
    _KEPT.append(checks)
    path = os.path.join(job.tmp, f"result-{part.index}")
    with open(path, "wb") as out:
        pickle.dump(result, out, pickle.HIGHEST_PROTOCOL)
    return path


def _reader_setup(parent: int, tmp: str) -> Callable[[], None]:
    def setup() -> None:
        _end_with_parent(parent)
        # the parent's handlers came with the fork: Ctrl-C is the parent's to handle (it
        # stops this process), and SIGTERM (the parent's terminate()) ends this one at once
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        tempfile.tempdir = tmp  # the checks' files (run files, name logs): removed by the parent

    return setup


def run(
    pipeline: Pipeline,
    plan: Plan,
    make_checks: Callable[[], list[BaseCheck]],
    *,
    on_bytes: Callable[[int], None] | None = None,
) -> None:
    """Read ``plan``'s parts into ``pipeline`` (fed, not finished: see
    :func:`~toolscore.pipeline.finish_sync`): part 0 here, the others on the forked pool of
    :func:`~toolscore.parts.engine.run_parts`, merged in order as each is done.

    Args:
        pipeline: the main pipeline; see :func:`mergeable`.
        plan: from :func:`plan`.
        make_checks: builds a fresh set of the same checks, for a part's process.
        on_bytes: told the bytes read, by every process.
    """
    ctx = multiprocessing.get_context(_FORK)
    progress = ctx.Value("q", 0)

    def report(n: int) -> None:  # own bytes, and the other processes' since the last time
        if on_bytes is not None:
            with progress.get_lock():
                n += progress.value
                progress.value = 0
            on_bytes(n)

    spool_calls = pipeline.on_calls is not None
    # the parts' spools where the main spool is (the report takes them in the kernel)
    tmp = tempfile.mkdtemp(
        prefix="toolscore-parts-", dir=getattr(pipeline.on_calls, "directory", None)
    )
    newlines = [0]

    def first() -> bool:
        return bool(feed_sync(pipeline, _part_batches(plan, 0, 0, 0, report, newlines)))

    failed = False
    outcomes = run_parts(
        [_Part(k) for k in range(plan.parts)],
        _read_forked,
        _Job(plan, make_checks, tmp, spool_calls, progress),
        engine=_FORK,
        workers=plan.processes,
        here=lambda part: first if part.index == 0 else None,
        setup=_reader_setup(os.getpid(), tmp),
    )
    try:
        if not next(outcomes):
            return  # a read error: what follows it does not count
        lines = newlines[0]
        for k, outcome in enumerate(outcomes, 1):
            if _stop_requested():  # Ctrl-C or SIGTERM: the parts merged so far count
                pipeline.error = _stopped(plan.path)
                return
            got = outcome.reason if isinstance(outcome, PartLost) else _load(outcome)
            if not isinstance(got, PartResult):
                if _stop_requested():  # Ctrl-C or SIGTERM ended it: what was read counts
                    pipeline.error = _stopped(plan.path)
                    return
                # the part's process failed: read the part here instead, on its own
                warnings.warn(
                    f"toolscore: part {k + 1} of {plan.path} (bytes {plan.bounds[k]}-"
                    f"{plan.bounds[k + 1]}) could not be read in a process of its own, so the "
                    f"main process reads it: {got.strip().splitlines()[-1]}",
                    RuntimeWarning,
                    stacklevel=2,
                )
                got, _ = read_part(plan, k, make_checks, tmp, spool_calls, report)
            _merge(pipeline, got, pipeline.calls_read, lines)
            if got.error is not None:
                return
            lines += got.lines
            with contextlib.suppress(Interrupted):  # a stop is taken up at the loop's top
                report(0)
    except BaseException:
        failed = True
        raise
    finally:
        outcomes.close()  # (the readers still reading end now)
        if failed:  # stopped by an exception (a second Ctrl-C): nothing will read them
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            # the merged states name files in it (run files): removed with the pipeline
            weakref.finalize(pipeline, shutil.rmtree, tmp, True)


def _stop_requested() -> bool:
    stop = active()
    return stop is not None and stop.requested


def _stopped(path: str) -> InputError:
    stop = active()
    what = stop.describe() if stop is not None else "interrupted"
    return MalformedTrace(path, f"cannot read the input: {what}")


def _load(path: str) -> PartResult | str:
    """A forked reader's result, from the file it names; or why there is none."""
    try:
        with open(path, "rb") as fh:
            result: PartResult = pickle.load(fh)
    except (OSError, EOFError, pickle.UnpicklingError) as exc:
        return f"the part's result could not be read: {exc}"
    os.unlink(path)
    return result


def _merge(pipeline: Pipeline, part: PartResult, calls: int, lines: int) -> None:
    sink = pipeline.on_calls
    if sink is not None and part.spool is not None:
        # first: a report copies the spool in the kernel, in a thread, while the findings
        # below are merged
        sink.adopt(part.spool, part.spooled)  # type: ignore[attr-defined]
    # what only the merge shows (a retry across the boundary), in the whole's numbers
    states = [None if s is None else s.relocated(lines) for s in part.states]
    pending = pipeline.add_part(states, part.calls, part.error)
    # the merged states hold what they need of the part's: let the rest go before its
    # findings are read (a later part's hard-rules state holds every violation it found)
    del states
    part.states = []
    # pending findings (a part's hard-rule violations are all there: its check keeps them
    # in its state) go out among the part's own, each where one process puts it: in input
    # order, and at one call in the order of the checks (a bad line first); before the
    # part's own findings of the same check at the same call
    key = _finding_key([check.name for check in pipeline.checks])
    # the part's own findings were redacted where they were found; the merge's are now
    pending = redact_findings(pending, pipeline.redact_pii)
    pending.sort(key=key)
    with open(part.findings, "rb") as fh:
        while True:
            try:
                rows: list[FindingValues] = pickle.load(fh)
            except EOFError:
                break
            found = _moved(rows, calls, lines)
            if pending and found:
                last = key(found[-1])
                cut = 0
                while cut < len(pending) and key(pending[cut]) <= last:
                    cut += 1
                if cut:
                    found = list(heapq.merge(pending[:cut], found, key=key))
                    del pending[:cut]
            emit_sync(pipeline, found, redacted=True)
    emit_sync(pipeline, pending, redacted=True)


def _finding_key(names: list[str]) -> Callable[[Finding], tuple[int, int, int]]:
    """The order one process gives findings: by :func:`~toolscore.pipeline.finding_order`,
    then by check (a bad line's finding, of no check, first)."""
    rank = {name: r for r, name in reversed(list(enumerate(names)))}
    rank["input"] = -1
    unknown = len(names)

    def key(finding: Finding) -> tuple[int, int, int]:
        line, call = finding_order(finding)
        return (line, call, rank.get(finding.check, unknown))

    return key


def _moved(rows: list[FindingValues], calls: int, lines: int) -> list[Finding]:
    """The findings of a part's rows, ``calls`` calls and ``lines`` lines further on: what
    ``Finding.from_values(row).moved(calls, lines)`` gives, each made once (a part of a 1 GB
    trace sends some 30,000)."""
    found: list[Finding] = []
    append = found.append
    for check, kind, severity, index, tool, loc, preview, rule, path, detail, template in rows:
        if index is not None:
            index += calls
        location = None
        if loc is not None:
            source, line, offset = loc
            location = Location(source, line if line is None else line + lines, offset)
        finding = Finding(
            check, kind, severity, None, index, tool, location, preview,
            rule=rule, path=path, detail=detail, template=template,
        )  # fmt: skip
        append(finding)
    return found


def mergeable(checks: Sequence[BaseCheck], on_calls: Any, keep_calls: bool) -> bool:
    """Whether a pipeline of ``checks`` and ``on_calls`` can take parts read elsewhere: no
    kept calls, every check mergeable, and a call sink that can adopt a spool file."""
    if keep_calls or not all(check.mergeable for check in checks):
        return False
    return on_calls is None or hasattr(on_calls, "adopt")
