"""The dataset report as one self-contained HTML page: inline CSS and SVG, no script, no network.

:func:`html_page` lays the page out from what :mod:`.reports` computed (the headline rows and
the tables, shared with the console and Markdown reports) and from the run itself: a verdict
banner first (the mean grade and word, the pass rate against the pass criterion, what needs a
look), the trace files read, the score histogram with labelled axes, the tables, the worst
traces linked to their records further down the page (file, line, status, score, findings),
then unreadable input. Every piece of data is redacted and made visible
(:func:`toolscore.sanitize.shown`) before it is HTML-escaped.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..sanitize import shown
from ..verdict import letter_grade, verdict_word

if TYPE_CHECKING:
    from .records import TraceRecord
    from .run import DatasetResult

__all__ = ["Table", "attention", "html_page", "svg_histogram", "svg_tools"]

MAX_FILES = 20
"""Trace files named at most (the rest are counted)."""

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:72rem;padding:0 1rem;color:#1f2328;background:#fff;line-height:1.4}
h1{font-size:1.6rem;margin-bottom:.25rem}
h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
h3{font-size:1rem;margin:1rem 0 .25rem}
table{border-collapse:collapse;margin:.5rem 0;max-width:100%}
td,th{padding:.25rem .6rem;text-align:left;vertical-align:top;border-bottom:1px solid #eaeef2;
overflow-wrap:anywhere}
th{background:#f6f8fa}
.banner{border-left:6px solid #59636e;background:#f6f8fa;padding:.75rem 1rem;margin:1rem 0;
font-size:1.1rem}
.banner strong{font-size:1.3rem}
.banner.pass{border-color:#1a7f37;background:#dafbe1}
.banner.warn{border-color:#9a6700;background:#fff8c5}
.banner.fail{border-color:#cf222e;background:#ffebe9}
.banner .notes{display:block;font-size:.95rem;color:#cf222e;margin-top:.25rem}
.inputs{color:#59636e;overflow-wrap:anywhere}
dl.record{display:grid;grid-template-columns:12rem 1fr;gap:.15rem .75rem;margin:.25rem 0 1rem}
dl.record dt{color:#59636e}dl.record dd{margin:0;overflow-wrap:anywhere}
svg text{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif}
a{color:#0969da}
"""


@dataclass(frozen=True)
class Table:
    """One table of the page: a title, its columns and rows (plain text, escaped here), and an
    optional chart drawn above it (an SVG from this module)."""

    title: str
    columns: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    chart: str = ""


def _e(text: object) -> str:
    return html.escape(shown(str(text)))


def _table(columns: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    """A table; no header row when every column title is empty."""
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{f'<tr>{head}</tr>' if any(columns) else ''}{body}</table>"


def _section(table: Table) -> list[str]:
    if not table.rows:
        return []
    return [f"<h2>{_e(table.title)}</h2>", table.chart, _table(table.columns, table.rows)]


def svg_histogram(counts: Sequence[int]) -> str:
    """The score histogram: bars over [0, 1], the x axis labelled "score", the y axis
    "traces", each with its ticks."""
    width, height = 640, 240
    left, right, top, bottom = 64, 16, 16, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(counts, default=0) or 1
    bar = plot_w / max(len(counts), 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="score distribution">'
    ]
    for i, n in enumerate(counts):
        h = plot_h * n / peak
        x = left + i * bar
        lo, hi = i / len(counts), (i + 1) / len(counts)
        out.append(
            f'<rect x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" width="{max(bar - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="#4c78a8"><title>score {lo:.2f}-{hi:.2f}: {n:,} traces'
            "</title></rect>"
        )
    axis = top + plot_h
    out.append(
        f'<line x1="{left}" y1="{axis}" x2="{left + plot_w}" y2="{axis}" stroke="#59636e"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{axis}" stroke="#59636e"/>'
    )
    for k in range(6):
        x = left + plot_w * k / 5
        out.append(
            f'<line x1="{x:.1f}" y1="{axis}" x2="{x:.1f}" y2="{axis + 4}" stroke="#59636e"/>'
            f'<text x="{x:.1f}" y="{axis + 17}" font-size="12" text-anchor="middle">'
            f"{k / 5:.1f}</text>"
        )
    ticks = sorted({0, peak // 2, peak}) if peak > 1 else [0, 1]
    for value in ticks:
        y = axis - plot_h * value / peak
        out.append(
            f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#59636e"/>'
            f'<text x="{left - 8}" y="{y + 4:.1f}" font-size="12" text-anchor="end">'
            f"{value:,}</text>"
        )
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" font-size="13" '
        'text-anchor="middle">score</text>'
        f'<text x="16" y="{top + plot_h / 2:.1f}" font-size="13" text-anchor="middle" '
        f'transform="rotate(-90 16 {top + plot_h / 2:.1f})">traces</text></svg>'
    )
    return "".join(out)


def svg_tools(rates: Sequence[tuple[str, int, int, int, float, float]], show: int) -> str:
    """The failure rate of the first ``show`` tools as horizontal bars, labelled with the
    tool's name (cut to fit its column) and the rate."""
    rows = rates[:show]
    width, row_h, label, chars = 640, 22, 240, 32
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row_h * len(rows) + 8}"'
        ' role="img" aria-label="failure rate per tool">'
    ]
    for i, (tool, calls, failed, _, rate, _) in enumerate(rows):
        y = 4 + i * row_h
        w = (width - label - 70) * rate
        name = shown(tool)
        name = name if len(name) <= chars else name[: chars - 1] + "…"
        out.append(
            f'<text x="{label - 8}" y="{y + 15}" font-size="12" text-anchor="end">'
            f"{html.escape(name)}<title>{_e(tool)}</title></text>"
            f'<rect x="{label}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" fill="#e45756">'
            f"<title>{failed:,} of {calls:,} calls failed</title></rect>"
            f'<text x="{label + w + 6:.1f}" y="{y + 15}" font-size="12">{rate:.1%}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def attention(result: DatasetResult) -> list[str]:
    """What needs a look, for the verdict's banner or panel: traces with violations, traces
    that could not be read, gold lines that could not be used."""
    notes = []
    if result.aggregate.traces_with_violations:
        notes.append(f"{result.aggregate.traces_with_violations:,} trace(s) with violations")
    if result.input_errors:
        notes.append(f"{result.input_errors:,} unreadable")
    if result.gold_problems:
        notes.append(f"{result.gold_problems:,} unusable gold line(s)")
    return notes


def _banner(result: DatasetResult) -> str:
    agg = result.aggregate
    notes = attention(result)
    mean = result.mean
    if result.checks_only:
        css = "fail" if agg.violations else "pass"
        head = f"<strong>No gold: checks only</strong> · {agg.traces:,} traces"
    elif mean is None:
        css, head = "warn", f"<strong>No trace scored</strong> ({agg.traces:,} read)"
    else:
        word = verdict_word(mean)
        css = {"PASS": "pass", "WARN": "warn"}.get(word, "fail")
        head = f"<strong>Mean grade {letter_grade(mean)} · {word}</strong> ({mean:.1%})"
        rate = result.pass_rate
        if rate is not None:
            head += (
                f" · pass rate {rate:.1%} ({agg.passed:,} of {agg.judged:,} passed: "
                f"{_e(result.criterion.describe())})"
            )
    extra = f'<span class="notes">{_e(", ".join(notes))}</span>' if notes else ""
    return f'<div class="banner {css}">{head}{extra}</div>'


def _scan(result: DatasetResult, wanted: set[str]) -> tuple[list[str], int, dict[str, TraceRecord]]:
    """One pass over the records: the trace files read (the first :data:`MAX_FILES`, and how
    many in all) and the records of the ``wanted`` trace ids."""
    files: dict[str, None] = {}
    total = 0
    found: dict[str, TraceRecord] = {}
    for record in result:
        source = record.source
        if source and source not in files:
            total += 1
            if len(files) < MAX_FILES:
                files[source] = None
        if record.trace_id in wanted:
            found[record.trace_id] = record
    return list(files), total, found


def _where(record: TraceRecord | None) -> str:
    if record is None or not record.source:
        return ""
    if record.line is not None:
        return f"{record.source}:{record.line}"
    if record.offset is not None:
        return f"{record.source} (byte {record.offset:,})"
    return record.source


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _record(anchor: str, trace_id: str, record: TraceRecord | None) -> list[str]:
    out = [f'<h3 id="{anchor}">{_e(trace_id)}</h3>']
    if record is None:
        return [*out, "<p>(no record)</p>"]
    fields = [
        ("file", _where(record) or "-"),
        ("task", record.task),
        ("status", record.status),
        ("score", _pct(record.score)),
        ("grade", record.grade or "-"),
        ("passed", "-" if record.passed is None else "yes" if record.passed else "no"),
        ("calls", f"{record.calls:,} ({record.expected_calls:,} expected)"),
        ("required calls completed", _pct(record.required_call_recall)),
        ("failed calls, retries", f"{record.failed_calls:,}, {record.retries:,}"),
        ("violations", f"{record.violations:,}"),
    ]
    if record.matches:
        modes = [f"{m} {'passed' if ok else 'failed'}" for m, ok in record.matches.items()]
        fields.append(("match modes", ", ".join(modes)))
    if record.findings:
        fields.append(("findings", ", ".join(f"{k} x{n:,}" for k, n in record.findings.items())))
    if record.error:
        fields.append(("error", record.error))
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in fields)
    return [*out, f'<dl class="record">{items}</dl>']


def html_page(
    result: DatasetResult,
    headline: Sequence[tuple[str, str]],
    before: Sequence[Table],
    after: Sequence[Table],
    errors: Sequence[str],
) -> str:
    """The page: banner, trace files, headline, histogram, ``before`` (groups, tools,
    findings), the worst traces, ``after`` (tasks), unreadable input, then the worst traces'
    records. Tables hold plain text; this function redacts and escapes it."""
    worst = [(score, trace_id) for score, _, trace_id in result.aggregate.worst]
    files, total, records = _scan(result, {trace_id for _, trace_id in worst})
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>toolscore dataset report</title><style>{_CSS}</style></head><body>",
        "<h1>toolscore dataset report</h1>",
        _banner(result),
    ]
    if files:
        more = f" and {total - len(files):,} more" if total > len(files) else ""
        named = ", ".join(f"<code>{_e(f)}</code>" for f in files)
        parts.append(f'<p class="inputs">Traces read from {named}{more}.</p>')
    parts.append(_table(("", ""), headline))
    if not result.checks_only and result.aggregate.scored:
        parts += ["<h2>Score distribution</h2>", svg_histogram(result.aggregate.histogram)]
    for table in before:
        parts += _section(table)
    if worst:
        rows = []
        for i, (score, trace_id) in enumerate(worst):
            record = records.get(trace_id)
            rows.append(
                f'<tr><td><a href="#record-{i}">{_e(trace_id)}</a></td><td>{_pct(score)}</td>'
                f"<td>{_e(_where(record) or '-')}</td></tr>"
            )
        parts += [
            "<h2>Worst traces</h2>",
            "<table><tr><th>trace</th><th>score</th><th>file</th></tr>" + "".join(rows),
            "</table>",
        ]
    for table in after:
        parts += _section(table)
    if errors:
        parts += ["<h2>Input</h2><ul>", *(f"<li>{_e(line)}</li>" for line in errors), "</ul>"]
    if worst:
        parts.append("<h2>Records of the worst traces</h2>")
        for i, (_, trace_id) in enumerate(worst):
            parts += _record(f"record-{i}", trace_id, records.get(trace_id))
    parts.append("</body></html>\n")
    return "".join(parts)
