"""``toolscore report REPORT.json --markdown F --html F --csv F``: render a JSON report (the one
``eval -o`` writes) as the human-facing reports, without reading the trace again.

The command is thin: :func:`read_report` reads the record back into an
:class:`~toolscore.result.EvaluationResult` (its metrics, weights, gold calls, findings and
input errors: what the renderers read; score, grade and verdict are then those of the one
reducer and :func:`toolscore.verdict.judge`, as in the run), and the writers of
:mod:`toolscore.reports` render it, redacted. The record is read streamed (ijson): its trace
calls are skipped, and findings beyond those a result keeps
(:data:`toolscore.pipeline.MAX_KEPT_FINDINGS`) are only counted, so memory grows with neither.

What a record does not hold is not rendered: the side-effect note of a run that did not
validate them (the gold's ``side_effects`` are not in the record).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._exitcodes import EXIT_OK, Outcome, exit_code
from ..calls import Finding, Location
from ..errors import InputError, ToolscoreError
from ..gold import gold_from_dicts
from ..result import EvaluationResult
from ..sanitize import shown
from ._util import error_line, failure_status, os_error_text

if TYPE_CHECKING:
    from ..calls import Finding
    from ..result import EvaluationResult

__all__ = ["read_report", "report_command"]

_SCALARS = ("score", "trace_calls_count", "input_problems")
_WHOLE = ("metrics", "weights", "incomplete")
_ITEMS = ("calls.expected.item", "findings.item")

ReportArgument = Annotated[str, typer.Argument(help="A JSON report written by toolscore eval -o.")]
MarkdownOutput = Annotated[str | None, typer.Option("--markdown", help="Write a Markdown report.")]
HtmlOutput = Annotated[str | None, typer.Option("--html", help="Write an HTML report.")]
CsvOutput = Annotated[
    str | None, typer.Option("--csv", help="Write a CSV report (Category,Metric,Value).")
]


def report_command(
    report: ReportArgument,
    markdown: MarkdownOutput = None,
    html: HtmlOutput = None,
    csv: CsvOutput = None,
) -> None:
    """Render a JSON report as Markdown, HTML or CSV (redacted), without the trace."""
    outputs = [("--markdown", markdown), ("--html", html), ("--csv", csv)]
    if not any(path for _, path in outputs):
        raise typer.BadParameter("give --markdown, --html or --csv", param_hint="options")
    raise typer.Exit(run_report(report, outputs))


def run_report(report: str, outputs: list[tuple[str, str | None]]) -> int:
    """Run ``toolscore report``; returns the exit status."""
    # the renderers and the record reader load only when the command runs: start-up
    from ..outputs import refuse_overlap
    from ..reports.csv import write_csv
    from ..reports.html import write_html
    from ..reports.markdown import write_markdown

    writers = {
        "--markdown": ("Markdown", write_markdown),
        "--html": ("HTML", write_html),
        "--csv": ("CSV", write_csv),
    }
    try:
        refuse_overlap([("the JSON report", report)], outputs)
        result = read_report(report)
    except (ToolscoreError, ValueError, OSError) as exc:
        return failure_status(exc)
    for option, path in outputs:
        if not path:
            continue
        label, write = writers[option]
        try:
            write(result, path)
        except OSError as exc:
            error_line(f"cannot write a report: {os_error_text(exc)}")
            return exit_code(Outcome(input_error=True))
        typer.echo(f"> {label} report: {shown(path)}")
    return EXIT_OK


def read_report(path: str | os.PathLike[str]) -> EvaluationResult:
    """An evaluation result from its JSON report, read streamed.

    Raises:
        InputError: the file cannot be read, is not JSON, or is not a toolscore JSON report
            (naming the file and, for bad JSON, the byte offset).
    """
    # ijson and the result's classes load only when a report is read: start-up
    import ijson

    name = os.fspath(path)
    record = _Record(name)
    try:
        with open(name, "rb") as f:
            record.read(ijson.parse(f, use_float=True))
    except FileNotFoundError:
        raise InputError(name, "JSON report not found") from None
    except OSError as exc:
        raise InputError(name, f"cannot read the JSON report: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(name, "invalid UTF-8", offset=exc.start) from None
    except ijson.JSONError as exc:
        raise InputError(name, f"invalid JSON: {exc}") from None
    return record.result()


class _Record:
    """The parts of a JSON report a result is made of, taken from ijson's events."""

    def __init__(self, name: str) -> None:
        # the pipeline's cap on kept findings loads only when a report is read: start-up
        from ..pipeline import MAX_KEPT_FINDINGS

        self.name = name
        self.cap = MAX_KEPT_FINDINGS
        self.values: dict[str, Any] = {}
        self.gold: list[dict[str, Any]] = []
        self.findings: list[Finding] = []
        self.inputs: list[Finding] = []
        self.failed: Counter[str] = Counter()

    def read(self, events: Any) -> None:
        # start-up of `toolscore --version`: ijson (~15 ms) only when a report is read
        import ijson

        builder: Any = None
        at = ""
        for prefix, event, value in events:
            if builder is not None:
                builder.event(event, value)
                if prefix == at and event in ("end_map", "end_array"):
                    self._take(at, builder.value)
                    builder = None
            elif prefix in _WHOLE or prefix in _ITEMS:
                if event in ("start_map", "start_array"):
                    builder, at = ijson.ObjectBuilder(), prefix
                    builder.event(event, value)
                elif event != "map_key":
                    self._take(prefix, value)
            elif prefix in _SCALARS:
                self._take(prefix, value)

    def _take(self, prefix: str, value: Any) -> None:
        if prefix == "calls.expected.item":
            self.gold.append(value)
        elif prefix == "findings.item":
            self._finding(value)
        else:
            self.values[prefix] = value

    def _finding(self, item: Any) -> None:
        if not isinstance(item, dict):
            raise InputError(self.name, "a finding is not an object")
        if item.get("check") == "errors" and item.get("kind") == "failed_call":
            self.failed[str(item.get("tool"))] += 1  # failed tools: most first, ties in order
        if len(self.findings) >= self.cap:
            return
        loc = item.get("location")
        finding = Finding(
            str(item.get("check")),
            str(item.get("kind")),
            item.get("severity") or "error",
            item.get("message"),
            call_index=item.get("call_index"),
            tool=item.get("tool"),
            location=None if not isinstance(loc, dict) else Location(**loc),
            preview=item.get("preview"),
        )
        self.findings.append(finding)
        if finding.check == "input":
            self.inputs.append(finding)

    def result(self) -> EvaluationResult:
        values = self.values
        metrics, weights = values.get("metrics"), values.get("weights")
        if not isinstance(metrics, dict) or not isinstance(weights, dict):
            raise InputError(self.name, 'not a toolscore JSON report (no "metrics", "weights")')
        try:
            gold = gold_from_dicts(self.gold)
        except (TypeError, ValueError) as exc:
            raise InputError(self.name, f"calls.expected: {exc}") from None
        return EvaluationResult(
            metrics,
            weights,
            gold,
            None,
            int(values.get("trace_calls_count") or 0),
            self.findings,
            _input_error(values.get("incomplete")),
            self.failed.most_common(),
            self.inputs,
            int(values.get("input_problems") or 0),
            has_gold=values.get("score") is not None,
        )


def _input_error(data: Any) -> InputError | None:
    """The record's ``incomplete``: the error that stopped reading (its message as written)."""
    if not isinstance(data, dict):
        return None
    path, line, offset = str(data.get("path")), data.get("line"), data.get("offset")
    where = str(InputError(path, "", line=line, offset=offset))  # "path:line: "
    message = str(data.get("message") or "")
    problem = message[len(where) :] if message.startswith(where) else message
    return InputError(path, problem, line=line, offset=offset)
