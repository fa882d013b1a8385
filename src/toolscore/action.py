"""The GitHub Action's evaluation of many traces: ``python -m toolscore.action``.

The action (``action.yml``, ``.github/action/run.sh``) calls this when its ``traces`` input is
set. It is ``toolscore eval GOLD TRACES`` on a dataset (:func:`toolscore.cli.dataset.run_dataset`:
the same reading, matching, process pool, JUnit, SARIF and baselines), with the Action's
gold and its reporting:

* the traces are a directory (every file in it, recursively, hidden ones skipped) or a glob
  of trace files, each holding one trace or many (multi-trace JSON Lines; trials of a task
  give pass@k); a trace's id is the dataset's: its file's path below the directory (or the
  glob's fixed part) without extensions (``team/c`` for ``traces/team/c.jsonl``), or the id
  on its lines;
* each trace is scored against its own gold in ``--gold-dir`` (the dataset's matching by
  name, then by the file's base name: ``gold/c.json`` for ``traces/team/c.jsonl``), else
  against ``--gold-file``; a trace with neither is reported and the run exits 2;
* a ``--baseline`` saved by an earlier version of the Action, keyed by file paths
  (``a.jsonl``, ``traces/team/c.jsonl``), is read with those keys turned into trace ids
  (a note says so; ``--save-baseline`` writes trace ids);
* the job summary (``--summary``, Markdown: redacted and sanitized) shows the key figures
  (mean, grade, median and lowest score, required calls completed, violations), the
  dataset's aggregate (pass rate, pass@k, the breakdowns of ``--group-by``, tools,
  findings, worst traces, tasks, input problems), the baseline's verdict and the failed
  gates; ``--outputs`` gets the step's outputs (scores rounded to 3 decimals).

Exit status as ``toolscore eval``: 0, 1 (a gate failed), 2 (a trace or gold file could not be
read, or a trace had no gold: each is reported, the others still evaluated).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._interrupt import run_until_signal
from ._rounding import score_text
from .cli._ci import markdown_text as _md
from .cli._ci import verdict_markdown
from .cli._options import MISSING_TRACE, CiOptions, EvalOptions
from .cli._util import apply_settings, error_line, failure_status
from .cli.dataset import DatasetOptions, DatasetRun, run_dataset
from .dataset.reports import render_markdown
from .errors import InputError, ToolscoreError
from .limits import (
    DEFAULT_HTTP_TIMEOUT,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_TRACE_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
)
from .verdict import letter_grade

if TYPE_CHECKING:
    from .dataset.records import TraceRecord

__all__ = ["Required", "main", "markdown_summary", "migrate_baseline", "step_outputs"]

_MAX_ROWS = 20


@dataclass
class Required:
    """Required gold calls completed and expected, summed over the scored traces."""

    done: int = 0
    total: int = 0

    def add(self, record: TraceRecord) -> None:
        """Count one record (with its CI view)."""
        view = record.ci
        if view is None or view.summary is None or record.score is None:
            return
        required = view.summary.get("required")
        if required:
            self.done += int(required[0])
            self.total += int(required[1])


def markdown_summary(run: DatasetRun, required: Required, notes: Sequence[str] = ()) -> str:
    """The job summary: the key figures, the dataset's aggregate, the baseline's verdict and
    the failed gates; every piece of data redacted and sanitized."""

    result = run.result
    agg = result.aggregate
    n = agg.scored
    lines = [f"## Toolscore: {n} trace{'s' if n != 1 else ''}", ""]
    mean = result.mean
    if mean is not None:
        lines += [
            "| mean score | grade | median | lowest | required calls completed | violations |",
            "|---|---|---|---|---|---|",
            f"| {score_text(mean)} | {letter_grade(mean)} | {score_text(result.median or 0.0)} | "
            f"{score_text(agg.score_min)} | {required.done} of {required.total} | "
            f"{agg.violations} |",
            "",
        ]
    lines.append(render_markdown(result, title=None, level=2))
    if run.comparison is not None:
        lines.append(verdict_markdown(run.comparison, _MAX_ROWS))
    lines += [f"- {_md(note)}" for note in notes]
    if notes:
        lines.append("")
    failed = [g for g in run.gates if not g.passed]
    if failed:
        lines += ["### Failed gates", ""]
        lines += [f"- **{_md(g.name)}**: {_md(g.message)}" for g in failed]
        lines.append("")
    return "\n".join(lines) + "\n"


def step_outputs(run: DatasetRun, required: Required) -> list[str]:
    """The step's outputs, ``key=value`` (the keys of a single trace's, plus ``traces`` and
    ``regressions``)."""
    mean = run.result.mean
    comparison = run.comparison
    regressions = 0
    if comparison is not None:
        regressions = comparison.regression_count or len(comparison.regressions)
    recall = required.done / required.total if required.total else None
    return [
        f"score={score_text(mean, '')}",
        f"grade={'' if mean is None else letter_grade(mean)}",
        f"required-call-recall={score_text(recall, '')}",
        f"violations={run.result.aggregate.violations}",
        f"traces={run.result.aggregate.scored}",
        f"regressions={regressions}",
    ]


def migrate_baseline(path: str, traces: str, workdir: str) -> tuple[str, str | None]:
    """``path`` itself, or (for a baseline written by the Action before it ran on the dataset
    engine, keyed by trace file paths) a copy in ``workdir`` keyed by trace ids, with a note.

    The former keys were a file's path below the ``traces`` directory (``team/c.jsonl``), or
    the path a glob matched (``traces/team/c.jsonl``); each is turned into that file's
    trace id (``team/c``) when the file is still there. Entries are streamed.

    Raises:
        InputError: the baseline cannot be read.
    """
    # baselines and the dataset's inputs load only when a baseline is given: start-up
    from .baseline import AggregateBuilder, iter_baseline, write_baseline_entries
    from .dataset.inputs import is_url, list_inputs

    if is_url(traces):
        return path, None
    try:
        inputs = list_inputs(traces)
    except InputError:
        return path, None  # the run reports it
    directory = os.path.isdir(traces)
    former: dict[str, str] = {}
    for item in inputs:
        key = Path(os.path.relpath(item.url, traces) if directory else item.url).as_posix()
        if key != item.name:
            former[key] = item.name
    builder = AggregateBuilder()
    renamed = 0
    for trace_id, summary in iter_baseline(path):
        builder.add(summary)
        renamed += trace_id in former
    if not renamed:
        return path, None
    copy = os.path.join(workdir, "baseline.json")
    write_baseline_entries(
        copy,
        builder.result(),
        ((former.get(trace_id, trace_id), s) for trace_id, s in iter_baseline(path)),
    )
    note = (
        f"baseline {path}: {renamed} trace(s) keyed by file path, as the Action wrote "
        "baselines before it ran on the dataset engine, were read by trace id (the file's path "
        "without extensions); save-baseline writes trace ids"
    )
    return copy, note


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m toolscore.action", description=__doc__)
    p.add_argument("--traces", required=True, help="A directory or a glob of trace files.")
    p.add_argument("--gold-file", default="", help="The gold of every trace without one.")
    p.add_argument("--gold-dir", default="", help="Per-trace gold files: <trace name>.json.")
    p.add_argument("--format", default="auto")
    p.add_argument("--forbidden", default="")
    p.add_argument("--weight", action="append", default=[])
    p.add_argument("--fail-under", default="")
    p.add_argument("--fail-on-violations", action="store_true")
    p.add_argument(
        "--pass", dest="pass_rule", default="", help="The pass rule (toolscore.verdict)."
    )
    p.add_argument("--pass-score", default="", help="A trace passes from this score or grade.")
    p.add_argument("--min-pass-rate", default="", help="Fail below this pass rate (0-1, 80%%).")
    p.add_argument(
        "--group-by",
        action="append",
        default=[],
        help="A breakdown: a field or a regex with named groups over the trace id.",
    )
    p.add_argument("--k", default="", help="The k of pass@k and pass^k (1,2,4).")
    p.add_argument("--workers", type=int, default=None, help="Processes (default: one a core).")
    p.add_argument("--baseline", default="")
    p.add_argument("--baseline-tolerance", type=float, default=0.0)
    p.add_argument("--save-baseline", default="")
    p.add_argument("--junit", default="")
    p.add_argument("--sarif", default="")
    p.add_argument("--summary", default="", help="Append the Markdown summary to this file.")
    p.add_argument("--outputs", default="", help="Append the step outputs to this file.")
    # the dataset options of `toolscore eval`, as it names them
    for name in ("--trace-key", "--task-key", "--task-regex", "--per-trace", "--engine",
                 "--scheduler", "--shared-dir"):  # fmt: skip
        p.add_argument(name, default="")
    p.add_argument("--missing-trace", choices=MISSING_TRACE, default="empty")
    for name in ("--interleaved", "--follow-symlinks", "--pii"):
        p.add_argument(name, action="store_true")
    p.add_argument("--pass-any-calls", dest="pass_all_calls", action="store_false")
    p.add_argument("--pass-allow-violations", dest="pass_no_violations", action="store_false")
    # (checked where they are set: toolscore.limits, as for `toolscore eval`)
    p.add_argument("--max-value-bytes", type=int, default=DEFAULT_MAX_VALUE_BYTES)
    p.add_argument("--max-decompressed-bytes", type=int, default=DEFAULT_MAX_DECOMPRESSED_BYTES)
    p.add_argument("--max-trace-bytes", type=int, default=DEFAULT_MAX_TRACE_BYTES)
    p.add_argument("--http-timeout", type=float, default=DEFAULT_HTTP_TIMEOUT)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the action's dataset evaluation; the exit status."""
    args = _parser().parse_args(argv)
    if not args.gold_file and not args.gold_dir:
        sys.stderr.write("toolscore action: gold-file or gold-dir is required with traces\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="toolscore-action-") as work:
        # signals as in `toolscore eval`: the first ends the run with its report (130/143)
        return run_until_signal(lambda: _run(args, work), _interrupted)


def _interrupted() -> None:
    sys.stderr.write("toolscore action: interrupted\n")


def _run(args: argparse.Namespace, work: str) -> int:
    notes: list[str] = []
    baseline = args.baseline or None
    if baseline:
        try:
            baseline, note = migrate_baseline(baseline, args.traces, work)
        except ToolscoreError as exc:
            return failure_status(exc)
        if note:
            notes.append(note)
            sys.stderr.write(f"toolscore action: note: {note}\n")
    opts = EvalOptions(
        gold=args.gold_dir or args.gold_file,
        trace=args.traces,
        format=args.format,
        weights=list(args.weight),
        output=os.path.join(work, "toolscore.json"),
        fail_under=args.fail_under or None,
        forbidden=args.forbidden or None,
        fail_on_violations=args.fail_on_violations,
        workers=args.workers,
        pass_rule=args.pass_rule or None,
        pii=args.pii,
        max_value_bytes=args.max_value_bytes,
        max_decompressed_bytes=args.max_decompressed_bytes,
        max_trace_bytes=args.max_trace_bytes,
        http_timeout=args.http_timeout,
        ci=CiOptions(
            save_baseline=args.save_baseline or None,
            baseline=baseline,
            baseline_tolerance=args.baseline_tolerance,
            junit=args.junit or None,
            sarif=args.sarif or None,
        ),
    )
    options = DatasetOptions(
        pass_score=args.pass_score or "A",
        min_pass_rate=args.min_pass_rate or None,
        group_by=[spec for spec in args.group_by if spec.strip()],
        k=args.k or None,
        default_gold=(args.gold_file or None) if args.gold_dir else None,
        gold_by_base_name=bool(args.gold_dir),
        trace_key=args.trace_key or None,
        task_key=args.task_key or None,
        task_regex=args.task_regex or None,
        per_trace=args.per_trace or None,
        engine=args.engine or None,
        scheduler=args.scheduler or None,
        shared_dir=args.shared_dir or None,
        interleaved=args.interleaved,
        follow_symlinks=args.follow_symlinks,
        missing_trace=args.missing_trace,
        pass_all_calls=args.pass_all_calls,
        pass_no_violations=args.pass_no_violations,
    )
    try:  # (--pii, the value and read limits, as `toolscore eval` sets and checks them)
        apply_settings(opts)
    except ToolscoreError as exc:
        return failure_status(exc)
    required = Required()

    def report(run: DatasetRun) -> int:
        status = run.status
        missing = run.result.missing_gold
        count = run.result.aggregate.statuses.get("no_gold", 0)
        if count:
            where = args.gold_dir or args.gold_file
            shown = ", ".join(missing[:_MAX_ROWS]) + (", ..." if count > len(missing) else "")
            error_line(f"{count} trace(s) without gold in {where}: {shown}")
            status = 2
        text = markdown_summary(run, required, notes)
        if args.summary:
            with open(args.summary, "a", encoding="utf-8") as f:
                f.write(text)
        if args.outputs:
            with open(args.outputs, "a", encoding="utf-8") as f:
                f.write("\n".join(step_outputs(run, required)) + "\n")
        return status

    return run_dataset(opts, options, on_record=required.add, report=report)


if __name__ == "__main__":  # pragma: no cover - run by the action
    raise SystemExit(main())
