"""The building blocks every door of an evaluation shares: the gold (:func:`read_gold`), the
rules merged in one place (:func:`read_rules`), the built-in checks (:func:`builtin_checks`),
the streaming pipeline over them (:func:`open_run`), its result through the one reducer
(:func:`pipeline_result`) and the pass rule (:func:`pass_criterion`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

from .calls import ToolCall
from .checks._base import BaseCheck, user_checks
from .checks.errors import errors_check
from .checks.expected import expected_for
from .checks.policy import policy_check
from .checks.secrets import ToolNames, secrets_check
from .errors import UsageError
from .failed import failures_of
from .gold import Gold, gold_from_dicts, read_gold_file
from .hardrules.spec import RuleSet, combine, load_gold_rules, load_rules, ruleset
from .pipeline import CallSink, FindingSink, Pipeline
from .result import EvaluationResult, normalize_weights, reduce
from .verdict import PassCriterion, parse_pass

GoldInput = Union[str, "os.PathLike[str]", Sequence[Mapping[str, Any]], Sequence[ToolCall]]
"""A gold file's path, or the expected calls as dicts (or ToolCall objects)."""
RulesInput = Union[
    str, "os.PathLike[str]", Sequence[Mapping[str, Any]], Mapping[str, Any], RuleSet, None
]
"""A rule file's path, or rules in Python form: a list of forbidden rules, or a rule object
(``{"forbidden": [...], "allow": [...], "order": [...], ...}``; see
:mod:`toolscore.hardrules.spec`)."""


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
    score_only: bool = False,
    tool_names: ToolNames | None = None,
    weights: Mapping[str, float] | None = None,
    trajectory: bool = True,
) -> list[BaseCheck]:
    """The built-in checks; ``score_only``: only the score's metrics (see
    :meth:`~toolscore.checks.expected.state.ExpectedState.score_metrics`), the findings and
    the errors check's counts are read (no trajectory steps, no identical-call count);
    ``tool_names``: the tool names the secrets checks of earlier traces scanned;
    ``weights``: the run's normalized weights, which pick the best alternative of a gold
    with alternative calls (None: the default weights); ``trajectory``: False keeps no
    trajectory steps (a live session's memory then does not grow with its calls; its result
    has no ``trajectory_metrics`` steps)."""
    expected = expected_for(
        gold, rules, strict=strict, keep_details=keep_details,
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
        # the hard rules' machinery (~20 ms to import) loads only when a rule file has one
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
        failed_calls=pipeline.failed_kept,
        trace_calls_count=pipeline.calls_read,
        findings=pipeline.findings,
        finding_counts=pipeline.finding_counts,
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
