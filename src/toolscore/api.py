"""The public entry points: ``evaluate``, ``evaluate_trace`` and ``evaluate_stream``.

All three build the same checks and drive the same :class:`~toolscore.pipeline.Pipeline`;
they differ only in where calls come from and whether the driver awaits.

Where things are: the drivers here; the building blocks they share (the gold, the rules, the
built-in checks, the pipeline and its result, the pass rule) in ``_api_run``; trace sources
as batches (and the guard for an error before the first call) in ``_api_batches``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from . import limits
from ._api_batches import TraceSource as TraceSource
from ._api_batches import _batches_of
from ._api_batches import abatches as abatches
from ._api_batches import aguard_first as aguard_first
from ._api_batches import guard_first as guard_first
from ._api_run import GoldInput as GoldInput
from ._api_run import PassRule as PassRule
from ._api_run import RulesInput as RulesInput
from ._api_run import builtin_checks as builtin_checks
from ._api_run import open_run as open_run
from ._api_run import pass_criterion as pass_criterion
from ._api_run import pipeline_result as pipeline_result
from ._api_run import read_gold as read_gold
from ._api_run import read_rules as read_rules
from ._args import (
    check_format,
    check_gold,
    check_rules,
    check_stream_source,
    check_trace_file,
    check_workers,
)
from .calls import Batch
from .checks._base import user_checks
from .errors import UsageError
from .gold import calls_from_dicts, gold_from_dicts
from .pipeline import CallSink, FindingSink, Pipeline, finish_sync, run_async, run_sync
from .redact import pii_redaction
from .result import EvaluationResult, normalize_weights
from .side_effects import side_effect_checks

if TYPE_CHECKING:
    from .parts import trace as parallel

__all__ = [
    "GoldInput",
    "RulesInput",
    "TraceSource",
    "evaluate",
    "evaluate_batches",
    "evaluate_stream",
    "evaluate_trace",
]


def evaluate(
    expected: Sequence[Mapping[str, Any]],
    actual: Any,
    weights: Mapping[str, float] | None = None,
    strict: bool = False,
    forbidden: RulesInput = None,
    *,
    rules: RulesInput = None,
    checks: Sequence[Any] | None = None,
    pii: bool | Iterable[str] | None = None,
    pass_rule: PassRule = None,
) -> EvaluationResult:
    """Score in-memory calls against expected ones, with the behavior and safety checks.

    Args:
        expected: the expected calls, ``[{"tool": ..., "args": {...}}]``; values may be matchers.
        actual: the calls made: a list of call dicts, or anything ``auto_extract`` reads (an
            OpenAI or Anthropic response, an OTel export, an SDK object with ``model_dump``).
        weights: score weights, merged with the defaults and renormalized.
        strict: compare argument types exactly (``1 != 1.0``) and recurse.
        forbidden: forbidden-call rules (Python form or a JSON rule file's path), or a rule
            object with hard rules too (see :data:`RulesInput`).
        rules: more rules, in the same forms (joined with ``forbidden``'s).
        pii: also look for personal data (``True``: email, phone, card numbers, US SSN,
            IBAN; or a list of those kinds), and redact it from findings and reports.
        pass_rule: what counts as a pass in ``result.verdict()``: a
            :class:`~toolscore.verdict.PassCriterion` or its text (``"match:superset,
            no-violations"``, see :func:`~toolscore.verdict.parse_pass`); its match modes
            run as hard rules. Default: grade A, every required call, no violation.
        checks: your own checks, run after the built-in ones: objects with
            ``feed(batch) -> findings`` and optionally ``finish()`` and ``state()`` (see
            :class:`~toolscore.checks._base.UserCheck`); their findings are the result's.

    Returns:
        The result, with every call kept (``to_dict()`` lists them).

    Raises:
        TypeError: ``expected`` is not a list.
        ValueError: a bad weight, or a malformed expected or actual call.
    """
    forbidden = check_rules(forbidden, "forbidden")
    rules = check_rules(rules, "rules")
    with pii_redaction(pii):
        norm = normalize_weights(weights)
        if not isinstance(expected, list):
            raise TypeError(f"expected must be a list of dicts, got {type(expected).__name__}")
        gold = gold_from_dicts(expected)
        criterion = pass_criterion(pass_rule)
        ruleset = read_rules(forbidden, rules, None, criterion)
        calls = calls_from_dicts(extract_calls(actual))
        pipeline = Pipeline(
            builtin_checks(gold, ruleset, strict=strict, keep_details=True, weights=norm)
            + user_checks(checks),
            keep_calls=True,
        )
        run_sync(pipeline, _batches_of(calls))
        return pipeline_result(pipeline, gold, norm, include_extras=False, criterion=criterion)


def extract_calls(actual: Any) -> list[Any]:
    # every SDK's converter (~75 ms to import) loads only for calls given as objects
    from .integrations import auto_extract

    return list(auto_extract(actual))


def evaluate_trace(
    gold_file: GoldInput | None,
    trace_file: str | os.PathLike[str] | IO[bytes],
    format: str = "auto",
    validate_side_effects: bool = True,
    judge: bool = False,
    forbidden: RulesInput = None,
    weights: Mapping[str, float] | None = None,
    *,
    strict: bool = False,
    on_finding: FindingSink | None = None,
    on_calls: CallSink | None = None,
    keep_calls: bool = False,
    workers: int | None = 1,
    on_bytes: Callable[[int], None] | None = None,
    rules: RulesInput = None,
    checks: Sequence[Any] | None = None,
    pii: bool | Iterable[str] | None = None,
    pass_rule: PassRule = None,
) -> EvaluationResult:
    """Score a trace file against a gold file in one streaming pass.

    The trace is read call by call; memory does not grow with its length. An input error in
    the middle of the trace does not raise: the result covers the calls read before it and
    carries the error as ``result.input_error``.

    With ``workers`` other than 1, a large JSON Lines file of the custom format is read in
    parts by that many processes (None: one per CPU), forked from this one, and merged into
    the same result (see :mod:`toolscore.parts.trace`); other traces are read in one. Fork only
    from a process without other threads running.

    The positional order is Toolscore 1.10's (``gold_file, trace_file, format,
    validate_side_effects, judge, forbidden, weights``), so ``evaluate_trace(g, t, "auto",
    False)`` works as it did there.

    Args:
        gold_file: the gold file (or the expected calls themselves); ``None``: no gold, run
            the checks only (the result has no score: ``has_gold`` is false).
        trace_file: a path (``-`` for stdin; ``.gz`` is decompressed) or a binary file.
        format: ``auto`` or a format name (see ``toolscore.sources.FORMATS``).
        validate_side_effects: run the validators a gold call's ``side_effects`` name
            (``http_ok``, ``file_exists`` on the local file system, ``sql_rows``) on its
            paired trace call: ``metrics["side_effect_metrics"]`` (see
            :mod:`toolscore.side_effects`). ``False``: ``result.notes`` says they were not run.
        judge: the LLM judge is not part of toolscore; ``True`` raises ``UsageError``.
        forbidden: a rule file's path or rules in Python form.
        weights: score weights, merged with the defaults and renormalized.
        strict: compare argument types exactly.
        on_finding: receives each batch's findings as soon as they are known.
        on_calls: receives the completed calls in index order (the JSON report's spool).
        keep_calls: keep every call on the result (memory then grows with the trace).
        workers: processes to read a large trace with (see above).
        on_bytes: told how many bytes of the file each read took, in every process
            (for a progress bar).
        rules: hard rules (and more forbidden ones): a rule file's path or a rule object;
            a gold file that is an object may hold its own (``"rules"``, ``"match"``,
            ``"arguments"``).
        checks: your own checks, as for :func:`evaluate` (a trace is then read in one
            process unless every one of them is mergeable).
        pii: also look for personal data (``True``: email, phone, card numbers, US SSN,
            IBAN; or a list of those kinds), and redact it from findings and reports.
        pass_rule: what counts as a pass, as for :func:`evaluate`.

    Raises:
        InputError: the gold file, the rule file or the trace cannot be opened, or the trace's
            format is unknown or not detected.
        UsageError: a bad ``format`` or ``judge`` value.
        ValueError: a bad weight.
    """
    gold_file = check_gold(gold_file)
    trace_file = check_trace_file(trace_file)
    format = check_format(format)
    forbidden = check_rules(forbidden, "forbidden")
    rules = check_rules(rules, "rules")
    workers = check_workers(workers)
    criterion = pass_criterion(pass_rule)
    with pii_redaction(pii):
        _no_judge(judge)
        expected = None if gold_file is None else read_gold(gold_file)  # read once
        if validate_side_effects and expected is not None:
            # a gold's side_effects, checked on the paired trace calls
            checks = side_effect_checks(expected, checks)
        # the trace readers (ijson, anyio, gzip: ~35 ms) load only when a trace is read
        from .sources import iter_batches

        pipeline, gold, norm = open_run(
            expected,
            weights,
            forbidden,
            strict=strict,
            keep_calls=keep_calls,
            on_finding=on_finding,
            on_calls=on_calls,
            rules=rules,
            checks=checks,
            criterion=criterion,
        )
        split = _plan_parts(pipeline, trace_file, format, workers, on_calls, keep_calls)
        if split is None:
            run_sync(pipeline, guard_first(iter_batches(trace_file, format, on_bytes=on_bytes)))
        else:
            # the parallel reader (multiprocessing) loads only for a trace read in parts
            from .parts import trace as parallel

            ruleset = read_rules(forbidden, rules, gold, criterion)
            parallel.run(
                pipeline,
                split,
                lambda: (
                    builtin_checks(gold, ruleset, strict=strict, keep_details=False)
                    + user_checks(checks)
                ),
                on_bytes=on_bytes,
            )
            finish_sync(pipeline)
        return pipeline_result(
            pipeline,
            gold,
            norm,
            include_extras=True,
            has_gold=gold_file is not None,
            criterion=criterion,
        )


def evaluate_batches(
    gold: GoldInput,
    batches: Iterable[Batch],
    *,
    weights: Mapping[str, float] | None = None,
    forbidden: RulesInput = None,
    strict: bool = False,
    on_calls: CallSink | None = None,
) -> EvaluationResult:
    """Score a trace that is already decoded into batches (a dataset's worker decodes each
    trace with the decoder of its file's format, detected once per file).

    The result is the one :func:`evaluate_trace` gives for the same batches.

    Raises:
        InputError: the batches start with an input error (no call read).
    """
    pipeline, gold_calls, norm = open_run(
        gold, weights, forbidden, strict=strict, keep_calls=False, on_calls=on_calls
    )
    run_sync(pipeline, guard_first(batches))
    return pipeline_result(pipeline, gold_calls, norm, include_extras=True)


def _plan_parts(
    pipeline: Pipeline,
    trace: Any,
    format: str,
    workers: int | None,
    on_calls: CallSink | None,
    keep_calls: bool,
) -> parallel.Plan | None:
    if workers == 1 or not _may_split(trace, workers):
        return None  # a small trace: the parallel reader is not even imported
    # the parallel reader (multiprocessing) loads only for a large trace file
    from .parts import trace as parallel
    from .sources.detect import check_format  # the trace readers (~35 ms), as above

    if not parallel.mergeable(pipeline.checks, on_calls, keep_calls):
        return None
    check_format(format)
    return parallel.plan(trace, format, workers)


def _may_split(trace: Any, workers: int | None) -> bool:
    """False when :func:`toolscore.parts.trace.plan` surely reads ``trace`` in one part: one
    worker, not a path, stdin, or a regular file of less than two parts' bytes."""
    if workers is not None and workers <= 1:
        return False
    if not isinstance(trace, (str, os.PathLike)):
        return False
    path = os.fspath(trace)
    if not isinstance(path, str) or path == "-":
        return False
    loaded = sys.modules.get(f"{__package__}.parts.trace")  # its value, as a caller may set it
    least = getattr(loaded, "PARALLEL_MIN_BYTES", limits.PARALLEL_MIN_BYTES)
    try:
        return os.path.getsize(path) >= 2 * least
    except (OSError, ValueError):
        return False


def _no_judge(judge: bool) -> None:
    if judge:
        raise UsageError("the LLM judge is not part of toolscore; evaluate without judge=")


async def evaluate_stream(
    gold: GoldInput | None,
    source: TraceSource,
    *,
    format: str = "auto",
    weights: Mapping[str, float] | None = None,
    forbidden: RulesInput = None,
    strict: bool = False,
    on_finding: FindingSink | None = None,
    on_calls: CallSink | None = None,
    keep_calls: bool = False,
    rules: RulesInput = None,
    checks: Sequence[Any] | None = None,
    pii: bool | Iterable[str] | None = None,
    pass_rule: PassRule = None,
) -> EvaluationResult:
    """Score a trace as it streams in, reporting findings the moment they happen.

    ``on_finding`` (sync or async) receives each batch's findings in call order as soon as the
    batch is read; with a live source that is as each line arrives. Cancelling the caller's
    scope stops reading at once; nothing keeps running.

    Args:
        gold: a gold file's path or the expected calls; ``None``: checks only (no score).
        source: see :data:`TraceSource`.
        format: ``auto`` or a format name, for byte sources.
        weights, forbidden, strict, rules, pass_rule: as for :func:`evaluate_trace`.
        on_finding: receives findings as they happen.
        on_calls: receives completed calls in index order.
        keep_calls: keep every call on the result.
        checks: your own checks, as for :func:`evaluate`; one with an async ``afeed`` is
            awaited (it may do I/O: an alert, a judge).
        pii: also look for personal data (``True``: email, phone, card numbers, US SSN,
            IBAN; or a list of those kinds), and redact it from findings and reports.

    Raises:
        InputError: as :func:`evaluate_trace`, for errors before the first call.
    """
    gold = check_gold(gold, "gold")
    source = check_stream_source(source)
    format = check_format(format)
    forbidden = check_rules(forbidden, "forbidden")
    rules = check_rules(rules, "rules")
    criterion = pass_criterion(pass_rule)
    with pii_redaction(pii):
        pipeline, gold_calls, norm = open_run(
            gold,
            weights,
            forbidden,
            strict=strict,
            keep_calls=keep_calls,
            on_finding=on_finding,
            on_calls=on_calls,
            rules=rules,
            checks=checks,
            criterion=criterion,
        )
        await run_async(pipeline, aguard_first(abatches(source, format)))
        return pipeline_result(
            pipeline,
            gold_calls,
            norm,
            include_extras=True,
            has_gold=gold is not None,
            criterion=criterion,
        )
