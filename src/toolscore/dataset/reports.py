"""The dataset aggregate in every report format: console, Markdown, HTML (inline SVG) and JSON.

Every human-facing string (trace ids, tool names, task names, error messages) goes through
:func:`toolscore.sanitize.shown` (credentials redacted, control characters escaped); the
JSON report keeps the values as recorded.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import orjson

from .._rounding import percent
from ..outputs import AtomicOutput
from ..redact import redact_secrets
from ..reports.markdown import md_text
from ..sanitize import shown
from ..verdict import letter_grade, verdict_word
from .groups import GroupRow
from .html import Table, attention, html_page, svg_tools
from .run import DatasetResult

__all__ = ["render_html", "render_markdown", "summary_renderable", "write_json"]

SHOW = 10
"""Rows shown per list in the console, Markdown and HTML (the JSON report has them all)."""


def _r(text: object) -> str:
    return shown(str(text))


_pct = percent


def write_json(result: DatasetResult, path: str) -> None:
    """The aggregate, every task's pass@k/pass^k, the errors and the missing ids, as JSON
    (streamed into a report written as :class:`toolscore.outputs.AtomicOutput` says)."""
    with AtomicOutput(path, suffix=".json.part") as output:
        _json_into(result, output.file)


def _redacted(value: Any) -> Any:
    """``value`` with every string redacted: the dataset report holds ids, file names, tool
    names and messages, never arguments, so nothing in it stays raw."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {_redacted(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(v) for v in value]
    return value


def _json_into(result: DatasetResult, f: Any) -> None:
    head = {
        "schema_version": "dataset-1",
        "timestamp": datetime.now(timezone.utc).isoformat(),
        "summary": result.summary(),
        "problems": result.problems,
        "errors": [
            {k: getattr(r, k) for k in ("trace_id", "source", "line", "offset", "error")}
            for r in result.errors
        ],
        "missing_gold": result.missing_gold,
        "missing_trace": result.missing_trace,
    }
    text = orjson.dumps(_redacted(head), option=orjson.OPT_INDENT_2)
    f.write(text[:-2] + b',\n  "tasks": [')
    first = True
    for task in result.tasks:
        record = task.to_json()
        record["task"] = redact_secrets(str(record.get("task", "")))
        f.write((b"\n    " if first else b",\n    ") + orjson.dumps(record))
        first = False
    f.write(b"\n  ]\n}\n")


_SCORED_ROWS = frozenset(
    {"Mean score", "Median score", "p10 score", "Pass rate", "Pass criterion", "Tasks", "Grades"}
)
"""Headline rows that say nothing without gold."""


def _headline(result: DatasetResult) -> list[tuple[str, str]]:
    rows = _headline_rows(result)
    if result.checks_only:
        return [
            row
            for row in rows
            if row[0] not in _SCORED_ROWS
            and not row[0].startswith("pass@")
            and row[0] != "Traces without gold"
        ]
    return rows


def _headline_rows(result: DatasetResult) -> list[tuple[str, str]]:
    s = result.summary()
    rows = [
        ("Traces", f"{s['traces']:,}"),
        ("Mean score", _pct(s["mean_score"])),
        ("Median score", _pct(s["median_score"])),
        ("p10 score", _pct(s["p10_score"])),
        ("Pass rate", f"{_pct(s['pass_rate'])} ({s['passed']:,} of {s['judged']:,})"),
        ("Pass criterion", result.criterion.describe()),
        ("Tasks", f"{s['tasks']:,}"),
    ]
    for k, tasks, at, hat in result.pass_k:
        rows.append(
            (
                f"pass@{k} / pass^{k}",
                f"{_pct(at)} / {_pct(hat)} ({tasks:,} tasks)"
                if tasks
                else f"- (no task has {k} trials)",
            )
        )
    grades = s["grades"]
    rows.append(("Grades", "  ".join(f"{g} {grades[g]:,}" for g in grades)))
    rows.append(
        (
            "Calls",
            f"{s['calls']:,} ({s['failed_calls']:,} failed, "
            f"{s['retries']:,} retried after a failure)",
        )
    )
    rows.append(("Violations", f"{s['violations']:,} in {s['traces_with_violations']:,} traces"))
    if s["missing_gold"]:
        rows.append(("Traces without gold", f"{s['missing_gold']:,}"))
    if s["missing_trace"]:
        rows.append(("Gold without a trace", f"{s['missing_trace']:,}"))
    if s["input_errors"]:
        rows.append(("Input errors", f"{s['input_errors']:,}"))
    if s.get("gold_problems"):
        rows.append(("Unusable gold lines", f"{s['gold_problems']:,}"))
    rate = s["traces_per_s"]
    rows.append(
        (
            "Run",
            f"{s['elapsed_s']:.2f} s, {rate or 0:,.0f} traces/s, engine {s['engine']}"
            + (f" ({s['workers']} workers)" if s["engine"] == "local" else ""),
        )
    )
    return rows


def _tool_rows(result: DatasetResult) -> list[tuple[str, str, str, str]]:
    return [
        (_r(tool), f"{c:,}", f"{f:,} ({fr:.1%})", f"{r:,} ({rr:.1%})")
        for tool, c, f, r, fr, rr in result.aggregate.tool_rates()[:SHOW]
    ]


def _finding_rows(result: DatasetResult) -> list[tuple[str, str, str]]:
    s = result.summary()
    return [
        (
            _r(item["kind"]),
            f"{item['count']:,} in {item['traces']:,}",
            _r(", ".join(item["examples"])),
        )
        for item in s["findings"][:SHOW]
    ]


def _worst_rows(result: DatasetResult) -> list[tuple[str, str]]:
    return [(_r(trace_id), _pct(score)) for score, _, trace_id in result.aggregate.worst]


def _task_rows(result: DatasetResult) -> list[tuple[str, str, str, str]]:
    """The tasks that failed a trial first, the lowest pass rate first (then by name); each
    with pass@k and pass^k for the run's k (``--k``; by default 1..its trials)."""
    rows = []
    failing_first = heapq.nsmallest(
        SHOW, result.tasks, key=lambda t: (t.c == t.n, t.c / t.n if t.n else 1.0, t.task)
    )
    for task in failing_first:
        ks = result.ks or range(1, task.n + 1)
        at = " ".join(f"{task.pass_at[k - 1]:.2f}" if k <= task.n else "-" for k in ks)
        hat = " ".join(f"{task.pass_hat[k - 1]:.2f}" if k <= task.n else "-" for k in ks)
        rows.append((_r(task.task), f"{task.c}/{task.n}", at, hat))
    return rows


def _tasks_title(result: DatasetResult) -> str:
    ks = "1..n" if result.ks is None else ",".join(map(str, result.ks))
    shown_tasks = min(SHOW, result.tasks_count)
    return (
        f"Tasks (failing first, {shown_tasks} of {result.tasks_count:,}; "
        f"pass@k / pass^k for k = {ks})"
    )


def _group_ks(result: DatasetResult) -> list[int]:
    """The k of a breakdown's pass^k columns: ``--k``'s, else 1, 2, 4, 8... up to the most
    trials (a column for each k would not fit)."""
    ks = [k for k, *_ in result.pass_k]
    return ks if result.ks is not None else [k for k in ks if k & (k - 1) == 0]


def _group_columns(result: DatasetResult, dim: str) -> tuple[str, ...]:
    return (dim, "traces", "pass rate", "mean score", *(f"pass^{k}" for k in _group_ks(result)))


def _group_rows(result: DatasetResult, rows: list[GroupRow]) -> list[tuple[str, ...]]:
    ks = _group_ks(result)
    out = []
    for row in rows[:SHOW]:
        hats = {k: hat for k, _, _, hat in row.pass_k}
        out.append(
            (
                _r(row.value),
                f"{row.traces:,}",
                f"{_pct(row.pass_rate)} ({row.passed:,} of {row.judged:,})",
                _pct(row.mean),
                *(_pct(hats.get(k)) for k in ks),
            )
        )
    return out


def _group_title(dim: str, rows: list[GroupRow]) -> str:
    more = f", the first {SHOW}" if len(rows) > SHOW else ""
    return f"By {dim} ({len(rows):,} group{'s' if len(rows) != 1 else ''}, failing first{more})"


def _error_lines(result: DatasetResult) -> list[str]:
    lines = [
        _r(r.error or "") + (f" (trace {_r(r.trace_id)})" if r.trace_id else "")
        for r in result.errors[:SHOW]
    ]
    lines += [_r(p) for p in result.problems[:SHOW]]
    for what, ids, total in (
        ("traces without gold", result.missing_gold, result.aggregate.statuses.get("no_gold", 0)),
        (
            "gold without a trace",
            result.missing_trace,
            result.aggregate.statuses.get("no_trace", 0),
        ),
    ):
        if total and not (result.checks_only and what == "traces without gold"):
            more = f", ... ({total:,} in all)" if total > SHOW else ""
            lines.append(f"{total:,} {what}: " + _r(", ".join(ids[:SHOW])) + more)
    return lines


def first_signal(result: DatasetResult) -> Any:
    """The verdict first, as a single trace's grade panel: the mean score's grade and word
    (PASS from 0.9, WARN from 0.7, else FAIL), the pass rate, and what needs a look (traces
    with violations, traces that could not be read)."""
    # start-up of a library dataset run: rich (and typer) load only for the CLI's output
    from rich.panel import Panel
    from rich.text import Text

    from ..reports.console import score_style

    agg = result.aggregate
    mean = result.mean
    if result.checks_only:
        text = Text(
            f"No gold: checks only   {agg.traces:,} traces   "
            f"violations: {agg.violations:,} in {agg.traces_with_violations:,} traces",
            style="bold red" if agg.violations else "bold green",
        )
        return Panel.fit(text)
    if mean is None:
        text = Text(f"No trace scored ({agg.traces:,} read)", style="bold yellow")
    else:
        text = Text(
            f"Mean grade {letter_grade(mean)}   {verdict_word(mean)} ({mean:.1%})",
            style=f"bold {score_style(mean)}",
        )
    rate = result.pass_rate
    if rate is not None:
        text.append(f"   pass rate {rate:.1%} ({agg.passed:,} of {agg.judged:,})")
    notes = attention(result)
    if notes:
        text.append("\n" + ", ".join(notes), style="bold red")
    return Panel.fit(text)


def summary_renderable(result: DatasetResult) -> Any:
    """A rich renderable of the aggregate (markup-safe)."""
    # start-up of a library dataset run: rich (and typer) load only for the CLI's output
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [first_signal(result), Text()]
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    for name, value in _headline(result):
        head.add_row(Text(name), Text(_r(value)))
    parts.append(Text("Dataset", style="bold underline"))
    parts.append(head)

    def table(title: str, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
        if not rows:
            return
        t = Table(title=title, title_justify="left", show_edge=False)
        for col in columns:
            t.add_column(col)
        for row in rows:
            t.add_row(*(Text(cell) for cell in row))
        parts.append(t)

    for dim, rows in result.groups.items():
        table(
            _group_title(_r(dim), rows), _group_columns(result, _r(dim)), _group_rows(result, rows)
        )
    table(
        "Tools (most failed calls first)",
        ("tool", "calls", "failed", "retried"),
        _tool_rows(result),
    )
    table("Findings", ("kind", "count in traces", "examples"), _finding_rows(result))
    table("Worst traces (lowest-scored failing)", ("trace", "score"), _worst_rows(result))
    table(_tasks_title(result), ("task", "passed", "pass@k", "pass^k"), _task_rows(result))
    errors = _error_lines(result)
    if errors:
        parts.append(Text("Input", style="bold"))
        for line in errors:
            parts.append(Text(f"  {line}", style="yellow"))
    return Group(*parts)


def _md_table(columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    def cell(text: str) -> str:
        # data, never Markdown: no link, image or HTML made of an id or a tool name
        return md_text(text)

    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def render_markdown(
    result: DatasetResult, *, title: str | None = "toolscore dataset report", level: int = 1
) -> str:
    """The aggregate as Markdown (redacted): ``title`` a heading of ``level`` (none when
    ``None``: a caller puts the report under its own), the sections one level below."""
    h = "#" * (level + 1)
    lines = [] if title is None else ["#" * level + " " + title, ""]
    lines += _md_table(("", ""), [(n, _r(v)) for n, v in _headline(result)])
    for dim, rows in result.groups.items():
        lines += [f"{h} {_group_title(_r(dim), rows)}", ""]
        lines += _md_table(_group_columns(result, _r(dim)), _group_rows(result, rows))
    if result.aggregate.tools:
        lines += [f"{h} Tools (most failed calls first)", ""]
        lines += _md_table(("tool", "calls", "failed", "retried"), _tool_rows(result))
    if result.aggregate.findings:
        lines += [f"{h} Findings", ""]
        lines += _md_table(("kind", "count in traces", "examples"), _finding_rows(result))
    if result.aggregate.worst:
        lines += [f"{h} Worst traces (lowest-scored failing)", ""]
        lines += _md_table(("trace", "score"), _worst_rows(result))
    if result.tasks_count:
        lines += [f"{h} {_tasks_title(result)}", ""]
        lines += _md_table(("task", "passed", "pass@k", "pass^k"), _task_rows(result))
    errors = _error_lines(result)
    if errors:
        lines += [f"{h} Input", ""] + [f"- {line}" for line in errors] + [""]
    return "\n".join(lines)


def render_html(result: DatasetResult) -> str:
    """The aggregate as one self-contained HTML page (:mod:`.html`: a verdict banner, inline
    SVG, the worst traces linked to their records; no network; redacted)."""
    rates = result.aggregate.tool_rates()
    groups = [
        Table(_group_title(dim, rows), _group_columns(result, _r(dim)), _group_rows(result, rows))
        for dim, rows in result.groups.items()
    ]
    before = [
        *groups,
        Table(
            "Failure rate per tool",
            ("tool", "calls", "failed", "retried"),
            _tool_rows(result),
            svg_tools(rates, SHOW) if rates else "",
        ),
        Table("Findings", ("kind", "count in traces", "examples"), _finding_rows(result)),
    ]
    tasks = Table(
        _tasks_title(result),
        ("task", "passed", "pass@k", "pass^k"),
        _task_rows(result) if result.tasks_count else [],
    )
    return html_page(result, _headline(result), before, [tasks], _error_lines(result))
