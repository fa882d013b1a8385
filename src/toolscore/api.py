"""The public entry points: ``evaluate``, ``evaluate_trace`` and ``evaluate_stream``.

All three build the same checks and drive the same :class:`~toolscore.pipeline.Pipeline`;
they differ only in where calls come from and whether the driver awaits.
"""

from __future__ import annotations

import os
import sys
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import IO, TYPE_CHECKING, Any, Union

from . import limits
from ._args import (
    check_format,
    check_gold,
    check_rules,
    check_stream_source,
    check_trace_file,
    check_workers,
)
from .calls import Batch, ToolCall
from .checks._base import BaseCheck, user_checks
from .checks.errors import errors_check
from .checks.expected import expected_for
from .checks.policy import policy_check
from .checks.secrets import ToolNames, secrets_check
from .errors import InputError, UsageError
from .failed import failures_of
from .gold import Gold, calls_from_dicts, gold_from_dicts, read_gold_file
from .hardrules.spec import RuleSet, combine, load_gold_rules, load_rules, ruleset
from .pipeline import CallSink, FindingSink, Pipeline, finish_sync, run_async, run_sync
from .redact import pii_redaction
from .result import EvaluationResult, normalize_weights, reduce
from .verdict import PassCriterion, parse_pass

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

GoldInput = Union[str, "os.PathLike[str]", Sequence[Mapping[str, Any]], Sequence[ToolCall]]
"""A gold file's path, or the expected calls as dicts (or ToolCall objects)."""
RulesInput = Union[
    str, "os.PathLike[str]", Sequence[Mapping[str, Any]], Mapping[str, Any], RuleSet, None
]
"""A rule file's path, or rules in Python form: a list of forbidden rules, or a rule object
(``{"forbidden": [...], "allow": [...], "order": [...], ...}``; see
:mod:`toolscore.hardrules.spec`)."""
TraceSource = Union[
    str,
    "os.PathLike[str]",
    IO[bytes],
    AsyncIterable[bytes],
    AsyncIterable[Mapping[str, Any]],
    Iterable[Mapping[str, Any]],
]
"""A trace: a path (``-`` for stdin, ``.gz`` read compressed), a binary file, an async byte
stream (``anyio.abc.ByteReceiveStream`` or any async iterable of bytes), or the calls
themselves as an (async) iterable of dicts in Toolscore's in-memory form."""

_BATCH = 1024


def read_gold(gold: GoldInput) -> list[ToolCall]:
    """The gold calls: from a file (a :class:`~toolscore.gold.Gold`, with the file's own
    rules), or as given (dicts or calls; a ``Gold`` as it is)."""
    if isinstance(gold, (str, os.PathLike)):
        return read_gold_file(gold)
    if isinstance(gold, Gold):
        return gold
    items = list(gold)
    if items and all(isinstance(item, ToolCall) for item in items):
        return [item for item in items if isinstance(item, ToolCall)]
    return gold_from_dicts(items)


def _one_ruleset(rules: RulesInput) -> RuleSet | None:
    if rules is None:
        return None
    if isinstance(rules, (str, os.PathLike)):
        return load_rules(rules)
    if isinstance(rules, (RuleSet, Mapping)):
        return ruleset(rules)
    return ruleset(list(rules))


def read_rules(
    forbidden: RulesInput,
    rules: RulesInput = None,
    gold: GoldInput | None = None,
    criterion: PassCriterion | None = None,
) -> RuleSet | None:
    """The one place rules are merged: the gold's own (a gold file that is an object, a
    keyed gold line: ``gold`` read as a :class:`~toolscore.gold.Gold`, or a path), then
    ``forbidden`` and ``rules`` (rule files or Python forms), then what the pass rule needs
    run (its match modes)."""
    found = _one_ruleset(forbidden)
    found = combine(found, _one_ruleset(rules))
    if criterion is not None:
        found = combine(found, criterion.rules())
    if isinstance(gold, (str, os.PathLike)):
        found = combine(load_gold_rules(gold), found)
    elif isinstance(gold, Gold):
        found = combine(gold.rules, found)
    return found


def builtin_checks(
    gold: list[ToolCall],
    rules: RuleSet | None,
    *,
    strict: bool,
    keep_details: bool,
    plan: Any = None,
    score_only: bool = False,
    tool_names: ToolNames | None = None,
    weights: Mapping[str, float] | None = None,
    trajectory: bool = True,
) -> list[BaseCheck]:
    """The built-in checks; ``plan``: an earlier expected-calls check's plan for the same gold
    and options, reused (unless hard rules put argument modes into the score);
    ``score_only``: only the score's metrics (see
    :meth:`~toolscore.checks.expected.state.ExpectedState.score_metrics`), the findings and
    the errors check's counts are read (no trajectory steps, no identical-call count);
    ``tool_names``: the tool names the secrets checks of earlier traces scanned;
    ``weights``: the run's normalized weights, which pick the best alternative of a gold
    with alternative calls (None: the default weights); ``trajectory``: False keeps no
    trajectory steps (a live session's memory then does not grow with its calls; its result
    has no ``trajectory_metrics`` steps)."""
    expected = expected_for(
        gold, rules, strict=strict, keep_details=keep_details, plan=plan,
        score_only=score_only, weights=weights, trajectory=trajectory,
    )  # fmt: skip
    checks: list[BaseCheck] = [
        expected,
        errors_check(count_identical=not score_only, failures=failures_of(rules)),
        secrets_check(tool_names=tool_names),
    ]
    if rules is not None and rules.has_forbidden:
        checks.append(policy_check(rules.forbidden))
    if rules is not None and rules.hard:
        from .checks.hardrules import hard_rules_check

        checks.append(hard_rules_check(rules, gold, strict=strict))
    return checks


def pipeline_result(
    pipeline: Pipeline,
    gold: list[ToolCall],
    weights: dict[str, float],
    *,
    include_extras: bool,
    has_gold: bool = True,
    score_only: bool = False,
    criterion: PassCriterion | None = None,
) -> EvaluationResult:
    """The result of what ``pipeline`` has read so far: its checks' states, reduced
    (``has_gold`` false: a checks-only evaluation, with no score; ``score_only``: only what
    the score and the verdict read, see :func:`~toolscore.result.reduce`; ``criterion``: the
    pass rule its verdict applies)."""
    return reduce(
        pipeline.states(),
        weights=weights,
        gold=gold,
        trace_calls=pipeline.calls,
        trace_calls_count=pipeline.calls_read,
        findings=pipeline.findings,
        input_error=pipeline.error,
        input_findings=pipeline.input_findings,
        input_problems=pipeline.input_problems,
        include_extras=include_extras,
        has_gold=has_gold,
        score_only=score_only,
        criterion=criterion,
    )


def open_run(
    gold: GoldInput | None,
    weights: Mapping[str, float] | None,
    forbidden: RulesInput,
    *,
    strict: bool,
    keep_calls: bool,
    on_finding: FindingSink | None = None,
    on_calls: CallSink | None = None,
    rules: RulesInput = None,
    checks: Sequence[Any] | None = None,
    criterion: PassCriterion | None = None,
) -> tuple[Pipeline, list[ToolCall], dict[str, float]]:
    """Validate weights, load the gold file and the rules, build the streaming pipeline
    (the built-in checks, then the user's ``checks``); the pass rule's match modes join the
    rules (``criterion``)."""
    norm = normalize_weights(weights)
    gold_calls = [] if gold is None else read_gold(gold)
    rules = read_rules(forbidden, rules, gold_calls, criterion)
    pipeline = Pipeline(
        builtin_checks(gold_calls, rules, strict=strict, keep_details=keep_calls, weights=norm)
        + user_checks(checks),
        keep_calls=keep_calls,
        on_finding=on_finding,
        on_calls=on_calls,
    )
    return pipeline, gold_calls, norm


PassRule = PassCriterion | str | None
"""A pass rule: a :class:`~toolscore.verdict.PassCriterion`, or its text
(:func:`~toolscore.verdict.parse_pass`: ``"match:superset, no-violations"``)."""


def pass_criterion(rule: PassRule) -> PassCriterion | None:
    """A pass rule as a criterion (None: the default one).

    Raises:
        UsageError: a rule written as text that does not parse.
        TypeError: neither a criterion, a string nor None.
    """
    if rule is None or isinstance(rule, PassCriterion):
        return rule
    if isinstance(rule, str):
        try:
            return parse_pass(rule)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    raise TypeError(f"pass_rule must be a PassCriterion or its text, got {type(rule).__name__}")


def _batches_of(calls: list[ToolCall]) -> Iterable[Batch]:
    for start in range(0, len(calls), _BATCH):
        chunk = calls[start : start + _BATCH]
        yield Batch(calls=chunk, done=chunk)


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
            from .side_effects import side_effect_checks

            checks = side_effect_checks(expected, checks)
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
    from .parts import trace as parallel
    from .sources.detect import check_format

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
        from .errors import UsageError

        raise UsageError("the LLM judge is not part of toolscore; evaluate without judge=")


class _BeforeFirstCall:
    """Turns an input error met before any call was read into an exception: with nothing
    evaluated there is no result to carry it."""

    def __init__(self) -> None:
        self.read_any = False

    def check(self, batch: Batch) -> Batch:
        if batch.error is not None and not self.read_any and not batch.n_calls:
            raise batch.error
        self.read_any = self.read_any or bool(batch.n_calls)
        return batch


def guard_first(batches: Iterable[Batch]) -> Iterator[Batch]:
    guard = _BeforeFirstCall()
    return (guard.check(batch) for batch in batches)


async def aguard_first(batches: AsyncIterable[Batch]) -> AsyncIterator[Batch]:
    guard = _BeforeFirstCall()
    async for batch in batches:
        yield guard.check(batch)


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


class _NamedChunks:
    """An async iterable of bytes that keeps its source's ``name`` (a followed file's path),
    so that locations name the file rather than ``<stream>``."""

    def __init__(self, chunks: AsyncIterator[bytes], name: str) -> None:
        self._chunks = chunks
        self.name = name

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks


async def abatches(
    source: TraceSource, format: str = "auto", *, one_trace: bool = True
) -> AsyncIterator[Batch]:
    """Batches from any :data:`TraceSource`: bytes go through a decoder, dicts are calls
    (``one_trace`` false: a stream of sessions, see :func:`~toolscore.sources.aiter_batches`)."""
    from .sources import aiter_batches

    if isinstance(source, (str, os.PathLike)) or hasattr(source, "read"):
        async for batch in aiter_batches(source, format, one_trace=one_trace):  # type: ignore[arg-type]
            yield batch
        return
    if isinstance(source, AsyncIterable):
        iterator = source.__aiter__()
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            return
        if isinstance(first, (bytes, bytearray, memoryview)):

            async def _bytes() -> AsyncIterator[bytes]:
                yield bytes(first)
                async for chunk in iterator:
                    yield bytes(chunk)  # type: ignore[arg-type]

            name = getattr(source, "name", None)  # a followed file's path, for locations
            chunks = _bytes() if not isinstance(name, str) else _NamedChunks(_bytes(), name)
            async for batch in aiter_batches(chunks, format, one_trace=one_trace):
                yield batch
            return
        # An agent's own loop hands calls over one at a time, so each is evaluated as it
        # arrives: there is no way to know whether the next one is ready.
        calls = calls_from_dicts([first], start=0)
        yield Batch(calls=calls, done=calls)
        index = 1
        async for item in iterator:
            calls = calls_from_dicts([item], start=index)
            index += 1
            yield Batch(calls=calls, done=calls)
        return
    if isinstance(source, Iterable):
        calls = calls_from_dicts(list(source))
        for batch in _batches_of(calls):
            yield batch
        return
    raise InputError("<stream>", f"cannot read a trace from {type(source).__name__}")
