"""The commands' options: typer's declarations, and the typed objects a command runs on.

Each command declares its parameters with the annotations below (typer reads them from the
signature) and turns them at once into option objects: :func:`eval_options` and
:func:`watch_options` take the command's parameters by name (``locals()`` on entry), so the
rest of the code passes one :class:`EvalOptions` (with its :class:`CiOptions`) and one
:class:`DatasetOptions`, or one :class:`WatchOptions`, never loose parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, TypeVar

import typer

from ..limits import (
    DEFAULT_HTTP_TIMEOUT,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_TRACE_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
)

__all__ = [
    "CiOptions",
    "DatasetOptions",
    "EvalOptions",
    "RunOptions",
    "WatchOptions",
    "eval_options",
    "watch_options",
]

_T = TypeVar("_T")


# -- the option objects -------------------------------------------------------------------


@dataclass
class CiOptions:
    """The CI options of one ``toolscore eval`` run."""

    save_baseline: str | None = None
    baseline: str | None = None
    baseline_tolerance: float = 0.0
    junit: str | None = None
    sarif: str | None = None

    @property
    def any(self) -> bool:
        return bool(self.save_baseline or self.baseline or self.junit or self.sarif)


@dataclass
class DatasetOptions:
    """The dataset options of ``toolscore eval``."""

    trace_key: str | None = None
    task_key: str | None = None
    task_regex: str | None = None
    group_by: list[str] = field(default_factory=list)
    """Breakdowns: fields or regexes with named groups (``--group-by``, repeatable)."""
    k: str | None = None
    """The k of pass@k / pass^k (``--k 1,2,4``)."""
    per_trace: str | None = None
    min_pass_rate: str | None = None
    pass_score: str = "A"
    pass_all_calls: bool = True
    pass_no_violations: bool = True
    engine: str | None = None
    scheduler: str | None = None
    dask_dashboard: bool = False
    """The local Dask cluster serves its dashboard (``--dask-dashboard``)."""
    shared_dir: str | None = None
    interleaved: bool = False
    follow_symlinks: bool = False
    missing_trace: str = "empty"
    """Gold without a trace: ``empty`` (a trial of zero calls, scored) or ``skip``."""
    default_gold: str | None = None
    """With a gold directory, the gold of traces it has none for (the GitHub Action's
    ``gold-file`` beside ``gold-dir``; no command-line option)."""
    gold_by_base_name: bool = False
    """Match gold by a trace file's base name too (the Action's ``gold-dir``)."""

    def any_given(self) -> bool:
        return any(
            (
                self.trace_key,
                self.task_key,
                self.task_regex,
                self.group_by,
                self.k,
                self.per_trace,
                self.min_pass_rate,
                self.engine,
                self.scheduler,
                self.dask_dashboard,
                self.shared_dir,
                self.interleaved,
                self.follow_symlinks,
                self.missing_trace != "empty",
            )
        )


@dataclass(kw_only=True)
class RunOptions:
    """What ``eval`` and ``watch`` share: how the trace is read, the rules, the gates."""

    format: str = "auto"
    weights: list[str] = field(default_factory=list)
    forbidden: str | None = None
    fail_under: str | None = None
    fail_on_violations: bool = False
    pii: bool = False
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    max_trace_bytes: int = DEFAULT_MAX_TRACE_BYTES
    http_timeout: float = DEFAULT_HTTP_TIMEOUT


@dataclass(kw_only=True)
class EvalOptions(RunOptions):
    """The options of ``toolscore eval`` (its dataset options apart: :class:`DatasetOptions`)."""

    gold: str | None
    """None: no gold, the checks only (``toolscore eval TRACE``)."""
    trace: str
    output: str = "toolscore.json"
    markdown: str | None = None
    html: str | None = None
    csv: str | None = None
    verbose: bool = False
    workers: int | None = None
    no_side_effects: bool = False
    """Do not run the validators of the gold's ``side_effects`` (Toolscore 1.10's option)."""
    ci: CiOptions = field(default_factory=CiOptions)
    pass_rule: str | None = None
    """``--pass``: the pass rule (:func:`toolscore.verdict.parse_pass`); a trace that fails
    it fails the run (exit 1); on a dataset it decides each trace's pass."""


@dataclass(kw_only=True)
class WatchOptions(RunOptions):
    """The options of ``toolscore watch``."""

    trace: str | None = None
    gold: str | None = None
    follow: bool = False
    findings: str | None = None
    poll_interval: float = 0.05
    trace_key: str | None = None
    """Evaluate each session (the calls with one value of this key) on its own."""
    idle: float | None = 300.0
    """With ``trace_key``: seconds without a call after which a session closes."""
    max_sessions: int = 10_000
    """With ``trace_key``: sessions open at most (the oldest closes past it)."""


def _take(cls: type[_T], values: dict[str, Any], **given: Any) -> _T:
    """``cls`` made of the ``values`` named as its fields (taken out of ``values``)."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{n: values.pop(n) for n in list(values) if n in names}, **given)


def _done(values: dict[str, Any], command: str) -> None:
    if values:  # a parameter no option object holds would be silently ignored
        raise TypeError(f"{command}: parameters without an option field: {sorted(values)}")


def _run_values(params: Mapping[str, Any]) -> dict[str, Any]:
    values = dict(params)
    values["weights"] = list(values.pop("weight") or ())
    return values


def eval_options(params: Mapping[str, Any]) -> tuple[EvalOptions, DatasetOptions]:
    """``eval``'s option objects, from its parameters by name."""
    values = _run_values(params)
    if values["missing_trace"] not in MISSING_TRACE:
        raise typer.BadParameter(
            f"expected one of {', '.join(MISSING_TRACE)}, got {values['missing_trace']!r}",
            param_hint="--missing-trace",
        )
    if not values["http_timeout"] > 0:  # (NaN too)
        raise typer.BadParameter(
            f"expected a positive number of seconds, got {values['http_timeout']}",
            param_hint="--http-timeout",
        )
    values["gold"] = values.pop("gold_file")
    values["trace"] = values.pop("trace_file")
    if values["trace"] is None:  # one argument: the trace, with no gold (checks only)
        values["gold"], values["trace"] = None, values["gold"]
    values["workers"] = values["workers"] or None  # 0: one per CPU
    values["group_by"] = list(values["group_by"] or ())
    ci = _take(CiOptions, values)
    dataset = _take(DatasetOptions, values)
    opts = _take(EvalOptions, values, ci=ci)
    _done(values, "eval")
    return opts, dataset


def watch_options(params: Mapping[str, Any]) -> WatchOptions:
    """``watch``'s option object, from its parameters by name."""
    values = _run_values(params)
    opts = _take(WatchOptions, values)
    _done(values, "watch")
    return opts


# -- typer's declarations -----------------------------------------------------------------

# shared by `eval` and `watch`
FormatOption = Annotated[
    str, typer.Option("--format", "-f", help="Trace format, or auto to detect it.")
]
WeightOption = Annotated[
    list[str] | None,
    typer.Option("--weight", help="Score weight NAME=VALUE (repeatable).", show_default=False),
]
FailUnderOption = Annotated[
    str | None,
    typer.Option("--fail-under", help="Exit 1 when the score (0-1) or grade (A-F) is below this."),
]
ForbiddenOption = Annotated[
    str | None,
    typer.Option(
        "--forbidden",
        help="A JSON rule file: forbidden-call rules, or an object with hard rules too.",
    ),
]
PiiOption = Annotated[
    bool,
    typer.Option(
        "--pii",
        help="Also look for personal data (email, phone, card numbers, US SSN, IBAN): "
        "findings, --fail-on-violations, and redacted from every report.",
    ),
]
FailOnViolationsOption = Annotated[
    bool,
    typer.Option(
        "--fail-on-violations", help="Exit 1 when a forbidden call or a credential is found."
    ),
]
MaxValueBytesOption = Annotated[
    int,
    typer.Option(
        "--max-value-bytes",
        min=1,
        help="The largest JSON line, array item or string read whole (default 64 MiB).",
    ),
]
MaxDecompressedBytesOption = Annotated[
    int,
    typer.Option(
        "--max-decompressed-bytes",
        min=1,
        help="The most bytes a compressed trace (.gz, .zst) is decompressed to (default 8 GiB).",
    ),
]
MaxTraceBytesOption = Annotated[
    int,
    typer.Option(
        "--max-trace-bytes",
        min=1,
        help="Dataset: the most bytes of one trace held in memory to evaluate it "
        "(default 256 MiB).",
    ),
]
HttpTimeoutOption = Annotated[
    float,
    typer.Option(
        "--http-timeout",
        help="Seconds an http(s):// input may take to connect or to send more (default 30).",
    ),
]

# `eval` on one trace
GoldArgument = Annotated[
    str,
    typer.Argument(
        help="The gold (expected calls) JSON file; give only TRACE to run the checks alone "
        "(no gold: no score)."
    ),
]
TraceArgument = Annotated[
    str | None,
    typer.Argument(help="The trace: a file, a .gz file, or - for stdin.", show_default=False),
]
OutputOption = Annotated[
    str, typer.Option("--output", "-o", help="The JSON report (always written).")
]
MarkdownOption = Annotated[
    str | None, typer.Option("--markdown", help="Also write a Markdown report.")
]
HtmlOption = Annotated[str | None, typer.Option("--html", help="Also write an HTML report.")]
CsvOption = Annotated[
    str | None, typer.Option("--csv", help="Also write a CSV report (Category,Metric,Value).")
]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show the detailed metrics.")]
WorkersOption = Annotated[
    int,
    typer.Option(
        "--workers", min=0, help="Processes to read a large JSON Lines trace with (0: one per CPU)."
    ),
]
NoSideEffectsOption = Annotated[
    bool,
    typer.Option(
        "--no-side-effects",
        help="Do not run the gold's side-effect validators (http_ok, file_exists, sql_rows).",
    ),
]

# `eval`'s CI outputs: baselines, JUnit XML, SARIF (see toolscore.cli._ci)
SaveBaselineOption = Annotated[
    str | None,
    typer.Option("--save-baseline", help="Write a baseline of this run (score, findings)."),
]
BaselineOption = Annotated[
    str | None,
    typer.Option("--baseline", help="Exit 1 when this run regressed against this baseline."),
]
BaselineToleranceOption = Annotated[
    float,
    typer.Option(
        "--baseline-tolerance", help="Score drop (0-1, absolute) allowed against --baseline."
    ),
]
JunitOption = Annotated[
    str | None, typer.Option("--junit", help="Also write JUnit XML (one test case per trace).")
]
SarifOption = Annotated[
    str | None, typer.Option("--sarif", help="Also write the findings as SARIF 2.1.0.")
]

# `eval` on a dataset (toolscore.cli.dataset): many traces, each against its own gold
TraceKeyOption = Annotated[
    str | None,
    typer.Option(
        "--trace-key",
        help="Dataset: the field holding each line's trace id (default: trace_id, session_id, "
        "conversation_id... whichever the first line has).",
    ),
]
TaskKeyOption = Annotated[
    str | None, typer.Option("--task-key", help="Dataset: the field naming each trace's task.")
]
TaskRegexOption = Annotated[
    str | None,
    typer.Option(
        "--task-regex",
        help="Dataset: a regex over the trace id giving its task (group 'task', else group 1, "
        "else the match). Default: ids ending in /trialN, _runN... share a task.",
    ),
]
GroupByOption = Annotated[
    list[str] | None,
    typer.Option(
        "--group-by",
        help="Dataset: pass rate, mean score and pass^k per group of this field (task, "
        "source, status, grade, or a field of each trace's first line such as model) or of "
        "each named group of this regex over the trace id ('^(?P<model>[^/]+)/'). "
        "Repeatable. A regex that matches no id is an error.",
    ),
]
KOption = Annotated[
    str | None,
    typer.Option("--k", help="Dataset: the k of pass@k and pass^k, e.g. 1,2,4 (default: 1..n)."),
]
PerTraceOption = Annotated[
    str | None,
    typer.Option(
        "--per-trace",
        help="Dataset: write each trace's record to this JSON Lines (or .parquet) file.",
    ),
]
MinPassRateOption = Annotated[
    str | None,
    typer.Option(
        "--min-pass-rate", help="Dataset: exit 1 when the pass rate is below this (0-1 or 80%)."
    ),
]
PassRuleOption = Annotated[
    str | None,
    typer.Option(
        "--pass",
        help="The pass rule: terms such as 'grade>=B', 'score>=0.8', 'required', "
        "'no-violations[:forbidden+credentials]', 'match:superset' joined by commas "
        "(default: 'grade>=A, required, no-violations'). One trace that fails it exits 1.",
        show_default=False,
    ),
]
PassScoreOption = Annotated[
    str,
    typer.Option(
        "--pass-score", help="Dataset: a trace passes from this score (0-1) or grade (A-F)."
    ),
]
PassAllCallsOption = Annotated[
    bool,
    typer.Option(
        "--pass-all-calls/--pass-any-calls",
        help="Dataset: a pass needs every required gold call completed.",
    ),
]
PassNoViolationsOption = Annotated[
    bool,
    typer.Option(
        "--pass-no-violations/--pass-allow-violations",
        help="Dataset: a pass needs no forbidden call and no credential.",
    ),
]
EngineOption = Annotated[
    str | None,
    typer.Option("--engine", help="Dataset: local (a process pool, default), dask or inline."),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option("--scheduler", help="Dataset: the Dask scheduler, tcp://HOST:PORT."),
]
DaskDashboardOption = Annotated[
    bool,
    typer.Option(
        "--dask-dashboard",
        help="Dataset on a local Dask cluster (--engine dask, no --scheduler): serve its "
        "dashboard on 127.0.0.1:8787 (off by default).",
    ),
]
SharedDirOption = Annotated[
    str | None,
    typer.Option(
        "--shared-dir",
        help="Dataset on Dask: an existing directory (a path all machines mount, or a URL "
        "such as s3://bucket/tmp/) the workers and this process share, when they do not share "
        "this machine's disk: large compressed and interleaved files then go to the workers "
        "through it, not through this machine.",
    ),
]
FollowSymlinksOption = Annotated[
    bool,
    typer.Option(
        "--follow-symlinks",
        help="Dataset: read what symbolic links in the trace or gold directory lead to outside "
        "it (by default they are skipped, each named in a warning).",
    ),
]
InterleavedOption = Annotated[
    bool,
    typer.Option(
        "--interleaved", help="Dataset: lines of one trace may be anywhere in their file."
    ),
]


MISSING_TRACE = ("empty", "skip")
"""What ``--missing-trace`` may say."""

MissingTraceOption = Annotated[
    str,
    typer.Option(
        "--missing-trace",
        metavar="empty|skip",
        help="Dataset: gold without a trace is a trial of zero calls (empty, scored) or "
        "keeps a status of its own, left out of pass rates (skip).",
    ),
]

# `watch`
WatchTraceArgument = Annotated[
    str | None,
    typer.Argument(help="A JSON Lines trace file; stdin when omitted or -.", show_default=False),
]
GoldOption = Annotated[
    str | None, typer.Option("--gold", help="A gold file: also show the running score.")
]
FollowOption = Annotated[
    bool,
    typer.Option(
        "--follow", "-F", help="Keep reading TRACE as it grows (survives truncation/rotation)."
    ),
]
SessionKeyOption = Annotated[
    str | None,
    typer.Option(
        "--trace-key",
        help="Lines name their session by this key (trace_id, session_id...): each session "
        "is evaluated on its own (its rules, budget, score), its findings say which.",
    ),
]
IdleOption = Annotated[
    float,
    typer.Option(
        "--idle",
        help="With --trace-key: close a session after this many seconds "
        "without a call (0: only at the end).",
        min=0.0,
    ),
]
MaxSessionsOption = Annotated[
    int,
    typer.Option(
        "--max-sessions",
        help="With --trace-key: sessions open at most (the oldest closes past it).",
        min=1,
    ),
]
FindingsOption = Annotated[
    str | None,
    typer.Option("--findings", help="Append every finding to this file as a JSON line."),
]
