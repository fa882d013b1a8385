"""The GitHub Action's evaluation of many traces: ``python -m toolscore.action``.

The action (``action.yml``, ``.github/action/run.sh``) calls this when its ``traces`` input is
set: a directory (every file in it, recursively, hidden ones skipped) or a glob of trace
files, each evaluated against its own gold file (``gold-dir/<trace stem>.json``) or against
the one ``gold-file``. Traces are evaluated one after the other, streamed, and their results
go straight into the JUnit and SARIF writers; only a small summary per trace is kept (for the
baseline and the job summary), so memory does not grow with the traces' sizes.

It writes the aggregate to the job summary (``--summary``, Markdown: redacted and sanitized),
the step outputs (``--outputs``), and applies the gates on the aggregate: ``--fail-under`` on
the mean score (or its grade), ``--fail-on-violations`` on the forbidden calls and
credentials of all traces, ``--baseline`` per trace and in aggregate. Exit status as
``toolscore eval``: 0, 1 (a gate failed), 2 (a trace or gold file could not be read, or a
trace had no gold: each is reported, the others still evaluated).
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ActionRun", "find_traces", "main", "markdown_summary", "run"]

_WORST = 10
_MAX_ROWS = 20


def find_traces(spec: str) -> list[tuple[str, str]]:
    """``(trace_id, path)`` for a directory (every file, recursively, hidden ones skipped) or
    a glob (``**`` recursive); ids are paths relative to the directory, or as matched."""
    if os.path.isdir(spec):
        found: list[tuple[str, str]] = []
        for root, dirs, files in os.walk(spec):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith("."):
                    continue
                path = os.path.join(root, name)
                found.append((Path(os.path.relpath(path, spec)).as_posix(), path))
        return found
    matches = sorted(p for p in glob.glob(spec, recursive=True) if os.path.isfile(p))
    return [(Path(p).as_posix(), p) for p in matches]


def _stem(path: str) -> str:
    name = os.path.basename(path)
    for suffix in (".gz", ".zst"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.rsplit(".", 1)[0] if "." in name else name


@dataclass
class ActionRun:
    """What the run found: per-trace summaries and the problems met."""

    summaries: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    """Traces not evaluated or read only in part: each a redacted line."""
    violations: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    """A finding kind -> the first trace with one."""
    comparison: Any = None
    gates: list[Any] = field(default_factory=list)


def run(args: argparse.Namespace) -> tuple[ActionRun, int]:
    """Evaluate every trace and write the outputs; the run and its exit status."""
    from ._ci_cli import gates_of
    from .api import evaluate_trace
    from .baseline import compare, load_baseline, summarize, write_baseline
    from .errors import ToolscoreError
    from .gold import load_gold
    from .reports import secret_count, violation_count
    from .reports.junit import JunitWriter, finish_ci_outputs
    from .reports.sarif import SarifWriter
    from .verdict import parse_fail_under

    outcome = ActionRun()
    threshold = None if not args.fail_under else parse_fail_under(args.fail_under)
    weights = None
    if args.weight:
        from ._cliutil import parse_weights

        weights = parse_weights(args.weight)
    baseline = load_baseline(args.baseline) if args.baseline else None
    traces = find_traces(args.traces)
    if not traces:
        outcome.problems.append(f"no trace file matches {args.traces}")
    shared_gold = load_gold(args.gold_file) if args.gold_file else None
    junit = JunitWriter(args.junit) if args.junit else None
    sarif = SarifWriter(args.sarif) if args.sarif else None
    try:
        for trace_id, path in traces:
            gold: Any = shared_gold
            if args.gold_dir:
                candidate = os.path.join(args.gold_dir, _stem(path) + ".json")
                if os.path.isfile(candidate):
                    gold = candidate
            if gold is None:
                outcome.problems.append(f"{trace_id}: no gold file (looked for {_stem(path)}.json)")
                continue
            try:
                result = evaluate_trace(
                    gold, path, args.format, forbidden=args.forbidden or None, weights=weights
                )
            except (ToolscoreError, ValueError, OSError) as exc:
                outcome.problems.append(f"{trace_id}: {exc}")
                continue
            if result.input_error is not None or result.input_problems:
                problem = result.input_error or f"{result.input_problems} unreadable part(s)"
                outcome.problems.append(f"{trace_id}: {problem}")
            outcome.summaries[trace_id] = summarize(result)
            outcome.violations += violation_count(result) + secret_count(result)
            for f in result.findings:
                kind = f"{f.check}/{f.kind}"
                outcome.findings[kind] += 1
                outcome.examples.setdefault(kind, trace_id)
            if junit is not None:
                junit.add_trace(trace_id, path, result)
            if sarif is not None:
                sarif.add_trace(trace_id, path, result)
        if baseline is not None:
            outcome.comparison = compare(baseline, outcome.summaries, args.baseline_tolerance)
        mean = _mean(outcome)
        agg = _Aggregate(mean if mean is not None else 0.0, outcome.violations)
        outcome.gates = gates_of(
            agg,
            fail_under=args.fail_under,
            threshold=threshold,
            fail_on_violations=args.fail_on_violations,
            comparison=outcome.comparison,
        )
        outputs, junit, sarif = (junit, sarif), None, None  # finished (or dropped) there
        finish_ci_outputs(*outputs, outcome.gates)
    finally:
        if junit is not None:
            junit.abort()
        if sarif is not None:
            sarif.abort()
    if args.save_baseline:
        write_baseline(args.save_baseline, outcome.summaries)
    if outcome.problems:
        return outcome, 2
    return outcome, 1 if any(not g.passed for g in outcome.gates) else 0


class _Aggregate:
    """What the gates read, for the mean over traces."""

    def __init__(self, score: float, violations: int) -> None:
        from .verdict import letter_grade

        self.score = score
        self.grade = letter_grade(score)
        self.policy_violations: list[dict[str, Any]] = [{}] * violations
        self.metrics: dict[str, Any] = {}


def _mean(outcome: ActionRun) -> float | None:
    scores = [s.score for s in outcome.summaries.values() if math.isfinite(s.score)]
    return math.fsum(scores) / len(scores) if scores else None


def _md(text: object) -> str:
    from .sanitize import shown

    return shown(str(text)).replace("|", "\\|").replace("`", "'").replace("<", "&lt;")


def markdown_summary(outcome: ActionRun) -> str:
    """The job summary: the aggregate, grades, findings by kind, the worst traces, the
    baseline's verdict and the problems; every piece of data redacted and sanitized."""
    from .verdict import letter_grade

    summaries = outcome.summaries
    mean = _mean(outcome)
    scores = sorted(s.score for s in summaries.values())
    done = sum(s.required[0] for s in summaries.values() if s.required)
    total = sum(s.required[1] for s in summaries.values() if s.required)
    lines = [f"## Toolscore: {len(summaries)} trace{'s' if len(summaries) != 1 else ''}", ""]
    if mean is not None:
        lines += [
            "| mean score | grade | median | lowest | required calls completed | violations |",
            "|---|---|---|---|---|---|",
            f"| {mean:.3f} | {letter_grade(mean)} | {scores[len(scores) // 2]:.3f} | "
            f"{scores[0]:.3f} | {done} of {total} | {outcome.violations} |",
            "",
        ]
        grades = Counter(s.grade for s in summaries.values())
        lines.append(
            "**Grades:** " + ", ".join(f"{g} {grades[g]}" for g in "ABCDF" if grades.get(g))
        )
        lines.append("")
    if outcome.findings:
        lines += ["### Findings by kind", "", "| kind | count | first trace |", "|---|---|---|"]
        for kind, count in outcome.findings.most_common(_MAX_ROWS):
            lines.append(f"| {_md(kind)} | {count} | {_md(outcome.examples[kind])} |")
        lines.append("")
    worst = sorted(summaries.items(), key=lambda kv: (kv[1].score, kv[0]))[:_WORST]
    if worst:
        lines += [
            "### Lowest scores",
            "",
            "| trace | score | grade | findings |",
            "|---|---|---|---|",
        ]
        for trace_id, s in worst:
            n = sum(s.findings.values())
            lines.append(f"| {_md(trace_id)} | {s.score:.3f} | {s.grade} | {n} |")
        lines.append("")
    if outcome.comparison is not None:
        head, *rest = outcome.comparison.lines()
        lines += ["### Baseline", "", f"**{_md(head)}**", ""]
        shown_rest = [r for r in rest if "REGRESSION" in r][:_MAX_ROWS]
        lines += [f"- {_md(r.strip())}" for r in shown_rest]
        if shown_rest:
            lines.append("")
    failed = [g for g in outcome.gates if not g.passed]
    if failed:
        lines += ["### Failed gates", ""]
        lines += [f"- **{_md(g.name)}**: {_md(g.message)}" for g in failed]
        lines.append("")
    if outcome.problems:
        lines += ["### Input problems", ""]
        lines += [f"- {_md(p)}" for p in outcome.problems[:_MAX_ROWS]]
        if len(outcome.problems) > _MAX_ROWS:
            lines.append(f"- ... and {len(outcome.problems) - _MAX_ROWS} more")
        lines.append("")
    return "\n".join(lines) + "\n"


def _outputs(outcome: ActionRun) -> list[str]:
    from .verdict import letter_grade

    mean = _mean(outcome)
    summaries = outcome.summaries.values()
    done = sum(s.required[0] for s in summaries if s.required)
    total = sum(s.required[1] for s in summaries if s.required)
    regressions = 0 if outcome.comparison is None else len(outcome.comparison.regressions)
    return [
        f"score={'' if mean is None else mean}",
        f"grade={'' if mean is None else letter_grade(mean)}",
        f"required-call-recall={done / total if total else ''}",
        f"violations={outcome.violations}",
        f"traces={len(outcome.summaries)}",
        f"regressions={regressions}",
    ]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m toolscore.action", description=__doc__)
    p.add_argument("--traces", required=True, help="A directory or a glob of trace files.")
    p.add_argument("--gold-file", default="", help="The gold file for every trace.")
    p.add_argument("--gold-dir", default="", help="Per-trace gold files: <trace stem>.json.")
    p.add_argument("--format", default="auto")
    p.add_argument("--forbidden", default="")
    p.add_argument("--weight", action="append", default=[])
    p.add_argument("--fail-under", default="")
    p.add_argument("--fail-on-violations", action="store_true")
    p.add_argument("--baseline", default="")
    p.add_argument("--baseline-tolerance", type=float, default=0.0)
    p.add_argument("--save-baseline", default="")
    p.add_argument("--junit", default="")
    p.add_argument("--sarif", default="")
    p.add_argument("--summary", default="", help="Append the Markdown summary to this file.")
    p.add_argument("--outputs", default="", help="Append the step outputs to this file.")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the action's dataset evaluation; the exit status."""
    from .errors import ToolscoreError
    from .redact import redact_secrets
    from .sanitize import visible

    args = _parser().parse_args(argv)
    if not args.gold_file and not args.gold_dir:
        sys.stderr.write("toolscore action: gold-file or gold-dir is required with traces\n")
        return 2
    try:
        outcome, status = run(args)
    except (ToolscoreError, ValueError, OSError) as exc:
        sys.stderr.write(f"toolscore action: error: {visible(redact_secrets(str(exc)))}\n")
        return 2
    text = markdown_summary(outcome)
    sys.stdout.write(text)
    for problem in outcome.problems:
        sys.stderr.write(f"toolscore action: error: {visible(redact_secrets(problem))}\n")
    if args.summary:
        with open(args.summary, "a", encoding="utf-8") as f:
            f.write(text)
    if args.outputs:
        with open(args.outputs, "a", encoding="utf-8") as f:
            f.write("\n".join(_outputs(outcome)) + "\n")
    return status


if __name__ == "__main__":  # pragma: no cover - run by the action
    raise SystemExit(main())
