"""What the plugin's ``toolscore`` fixtures give a test (:class:`ToolscoreHelper`): evaluate
and assert with the test's defaults (:class:`_Defaults`: the ``toolscore`` marker over the ini
options), every evaluation recorded in the session report. Imported only when a test asks for
one of these fixtures."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ._pytest_report import session_recorder
from .api import evaluate, evaluate_stream, evaluate_trace
from .expect import Expectation, ToolScoreAssertionError
from .failures import render_failure
from .result import EvaluationResult, parse_weights
from .sanitize import shown
from .verdict import SCORE_EPSILON, PassCriterion, judge, parse_pass

__all__ = ["ToolscoreHelper"]

_MARKER = "toolscore"


# -- defaults ----------------------------------------------------------------------------------


class _Defaults:
    """Weights, forbidden rules and minimum score for one test (marker over ini)."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        config = request.config
        weights: dict[str, float] | None = None
        lines = [str(x) for x in config.getini("toolscore_weights") or []]
        if lines:
            weights = parse_weights([x for line in lines for x in line.split(",") if x.strip()])
        forbidden: Any = config.getini("toolscore_forbidden") or None
        if forbidden:
            forbidden = _rule_file(Path(str(config.rootpath)), forbidden, "the rootdir")
        min_text = str(config.getini("toolscore_min_score") or "").strip()
        min_score: float | None = float(min_text) if min_text else None
        pass_rule: str | None = str(config.getini("toolscore_pass") or "").strip() or None
        marker = request.node.get_closest_marker(_MARKER)
        if marker is not None:
            kwargs = dict(marker.kwargs)
            unknown = set(kwargs) - {"weights", "forbidden", "min_score", "pass_rule"}
            if marker.args or unknown:
                raise pytest.UsageError(
                    "@pytest.mark.toolscore takes weights=, forbidden=, min_score= and "
                    "pass_rule= only"
                )
            if "pass_rule" in kwargs:
                pass_rule = kwargs["pass_rule"]
            if "weights" in kwargs:
                weights = kwargs["weights"]
            if "forbidden" in kwargs:
                forbidden = kwargs["forbidden"]
                if isinstance(forbidden, (str, os.PathLike)):
                    base = Path(str(request.node.path)).parent
                    forbidden = _rule_file(base, forbidden, "the test file's directory")
            if "min_score" in kwargs:
                min_score = kwargs["min_score"]
        self.weights: Mapping[str, float] | None = weights
        self.forbidden: Any = forbidden
        self.min_score = min_score
        self.criterion = None if pass_rule is None else _criterion(pass_rule)
        """The test's pass rule (``pass_rule=`` or ``toolscore_pass``), which replaces the
        minimum score's: ``assert_tools`` then fails exactly when its verdict does not pass."""


def _rule_file(base: Path, path: str | os.PathLike[str], where: str) -> str:
    """A rule file's path, a relative one read from ``base`` (whatever the current
    directory); a missing one fails the test in one line naming it."""
    found = base / Path(path)  # (an absolute path stays as it is)
    if not found.is_file():
        pytest.fail(
            f"toolscore: forbidden rule file {found} not found ({os.fspath(path)!r}, relative "
            f"to {where})",
            pytrace=False,
        )
    return str(found)


def _criterion(rule: Any) -> PassCriterion:
    if isinstance(rule, PassCriterion):
        return rule
    try:
        return parse_pass(str(rule))
    except ValueError as exc:
        raise pytest.UsageError(f"toolscore pass rule: {exc}") from None


# -- the fixtures' objects ---------------------------------------------------------------------


class ToolscoreHelper:
    """What the ``toolscore`` fixture gives a test: evaluate and assert, with the test's
    defaults, every evaluation recorded in the session report."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._nodeid = request.node.nodeid
        self._recorder = session_recorder(request.config)
        self.defaults = _Defaults(request)

    @property
    def weights(self) -> Mapping[str, float] | None:
        """The weights this test uses unless told otherwise."""
        return self.defaults.weights

    @property
    def forbidden(self) -> Any:
        """The forbidden-call rules this test uses unless told otherwise."""
        return self.defaults.forbidden

    def _record(self, what: str, result: Any, **kw: Any) -> None:
        self._recorder.record(self._nodeid, what, result, **kw)

    def evaluate(
        self,
        expected: list[Mapping[str, Any]],
        actual: Any,
        *,
        weights: Mapping[str, float] | None = None,
        strict: bool = False,
        forbidden: Any = None,
    ) -> EvaluationResult:
        """``toolscore.evaluate`` with the test's defaults; recorded."""
        result = evaluate(
            expected,
            actual,
            weights if weights is not None else self.weights,
            strict,
            forbidden if forbidden is not None else self.forbidden,
        )
        self._record("evaluate", result, passed=None)
        return result

    def evaluate_trace(
        self, gold: Any, trace: Any, format: str = "auto", **kwargs: Any
    ) -> EvaluationResult:
        """``toolscore.evaluate_trace`` with the test's defaults; recorded."""
        kwargs.setdefault("weights", self.weights)
        kwargs.setdefault("forbidden", self.forbidden)
        result = evaluate_trace(gold, trace, format, **kwargs)
        self._record(f"evaluate_trace {_name(trace)}", result, passed=None)
        return result

    async def evaluate_stream(self, gold: Any, source: Any, **kwargs: Any) -> EvaluationResult:
        """``await toolscore.evaluate_stream`` with the test's defaults; recorded."""
        kwargs.setdefault("weights", self.weights)
        kwargs.setdefault("forbidden", self.forbidden)
        result = await evaluate_stream(gold, source, **kwargs)
        self._record(f"evaluate_stream {_name(source)}", result, passed=None)
        return result

    def assert_tools(
        self,
        expected: list[Mapping[str, Any]],
        actual: Any,
        min_score: float | None = None,
        *,
        weights: Mapping[str, float] | None = None,
        strict: bool = False,
        forbidden: Any = None,
    ) -> EvaluationResult:
        """Evaluate and fail the test (readably) when the score is below ``min_score``
        (default: the test's, else 0.9) or, with forbidden rules, on a forbidden call."""
        __tracebackhide__ = True
        rules = forbidden if forbidden is not None else self.forbidden
        result = evaluate(
            expected,
            actual,
            weights if weights is not None else self.weights,
            strict,
            rules,
            pass_rule=self.defaults.criterion,  # its match modes run with the checks
        )
        return self._check("assert_tools", result, min_score, strict)

    def assert_agent(
        self,
        agent: Callable[[Any], Any],
        input: Any,
        expected: list[Mapping[str, Any]],
        min_score: float | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Run a sync ``agent(input)`` and :meth:`assert_tools` its calls."""
        __tracebackhide__ = True
        if inspect.iscoroutinefunction(agent):
            raise TypeError("agent is async: use `await toolscore.assert_agent_async(...)`")
        return self.assert_tools(expected, agent(input), min_score, **kwargs)

    async def assert_agent_async(
        self,
        agent: Callable[[Any], Any],
        input: Any,
        expected: list[Mapping[str, Any]],
        min_score: float | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Run ``agent(input)``, awaiting it when it is async, and :meth:`assert_tools` it."""
        __tracebackhide__ = True
        response = agent(input)
        if inspect.isawaitable(response):
            response = await response
        return self.assert_tools(expected, response, min_score, **kwargs)

    def expect(self, subject: Any) -> Expectation:
        """``toolscore.expect(subject)`` whose ``run``/``run_async`` are recorded."""
        helper = self

        class RecordedExpectation(Expectation):
            def run(self) -> EvaluationResult:
                __tracebackhide__ = True
                return helper._expectation("expect", super().run)

            async def run_async(self) -> EvaluationResult:
                __tracebackhide__ = True
                try:
                    result = await super().run_async()
                except ToolScoreAssertionError as exc:
                    helper._record("expect", exc.result, passed=False, failure=str(exc))
                    raise
                helper._record("expect", result, passed=True)
                return result

        expectation = RecordedExpectation(subject)
        if self.weights is not None:
            expectation.with_weights(**dict(self.weights))
        if self.defaults.min_score is not None:
            expectation.with_score(self.defaults.min_score)
        return expectation

    def _expectation(self, what: str, run: Callable[[], EvaluationResult]) -> EvaluationResult:
        __tracebackhide__ = True
        try:
            result = run()
        except ToolScoreAssertionError as exc:
            self._record(what, exc.result, passed=False, failure=str(exc))
            raise
        self._record(what, result, passed=True)
        return result

    def _check(
        self, what: str, result: EvaluationResult, min_score: float | None, strict: bool
    ) -> EvaluationResult:
        __tracebackhide__ = True
        if min_score is None:
            min_score = self.defaults.min_score if self.defaults.min_score is not None else 0.9
        if not 0.0 <= min_score <= 1.0:
            raise ValueError(f"min_score must be between 0.0 and 1.0, got {min_score}")
        rule = self.defaults.criterion
        criterion = rule or PassCriterion(min_score=min_score, all_calls=False)
        verdict = judge(result, criterion)
        low = (
            rule is None and verdict.score is not None and verdict.score < min_score - SCORE_EPSILON
        )
        violations = result.policy_violations
        count = verdict.violations.total
        if verdict.passed:
            self._record(what, result, passed=True, min_score=min_score)
            return result
        extra: list[str] = []
        fix = None
        header = None
        if count:
            # every violation, whatever its kind (the one verdict's count)
            extra = [
                f"FORBIDDEN {shown(f.message)}"
                for f in result.findings
                if f.kind == "forbidden_call"
            ]
            extra += [
                f"VIOLATION {shown(message)}"
                for severity, message in result.behavior_findings()
                if severity == "error" and "matches forbidden rule" not in message
            ]
            if violations:
                first = violations[0]
                fix = (
                    f"call {first['index'] + 1} `{shown(str(first['tool']))}` matches forbidden "
                    f"rule {first['rule'] + 1}: change the prompt or the agent's tools so it "
                    "does not make this call."
                )
            if not low:
                header = (
                    f"{count} violation{'s' if count != 1 else ''} "
                    f"({verdict.violations.describe()}; score {result.score:.2f}):"
                )
        if rule is not None:  # the test's pass rule decided: say which of its terms broke
            header = (
                f"did not pass {rule.describe()!r}: {'; '.join(rule.reasons(verdict))}"
                + (f" ({header.rstrip(':')})" if header else "")
                + ":"
            )
        text = render_failure(
            result.gold_calls,
            result.trace_calls or [],
            score=result.score if low else None,
            min_score=min_score if low else None,
            metrics=(result.selection_accuracy, result.argument_f1, result.sequence_accuracy),
            strict=strict,
            header=header,
            fix=fix,
            extra=extra,
        )
        self._record(what, result, passed=False, min_score=min_score, failure=text)
        raise ToolScoreAssertionError(text, result=result)


def _name(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return type(source).__name__
