"""The pytest plugin (entry point ``pytest11``: ``toolscore``): evaluate and assert tool calls
inside tests, and one report of every evaluation of the session.

Fixtures:

- ``toolscore``: a :class:`ToolscoreHelper` bound to the test: ``evaluate``,
  ``evaluate_trace``, ``await evaluate_stream``, ``assert_tools``, ``assert_agent``,
  ``await assert_agent_async`` and ``expect``; each uses the test's defaults (below) and
  records its evaluation in the session report.
- ``toolscore_eval(gold, trace, format="auto", validate_side_effects=True)``: Toolscore's
  fixture; relative paths are found under ``--toolscore-gold-dir`` / ``--toolscore-trace-dir``
  (defaults ``tests/gold_standards``, ``tests/traces``) when they are not found as given.
- ``toolscore_assert``: Toolscore's assertion helpers on a result (``assert_score``,
  ``assert_selection_accuracy``, ``assert_argument_f1``...).
- ``toolscore_assert_tools``: ``assert_tools`` with the test's defaults.

Defaults for a module, class or test: the marker
``@pytest.mark.toolscore(weights={...}, forbidden=[...] or "rules.json", min_score=0.9)``
(``pytestmark = pytest.mark.toolscore(...)`` for a whole module; the closest marker wins),
over the ini options ``toolscore_weights`` (lines ``NAME=VALUE``), ``toolscore_forbidden``
(a rule file, relative to the rootdir) and ``toolscore_min_score``. With default forbidden
rules, ``assert_tools`` also fails on a forbidden call.

``--toolscore-report PATH`` writes the session report: JSON at ``PATH`` and Markdown next to
it (``PATH`` with the suffix ``.md``; a ``PATH`` ending in ``.md`` gets the JSON at ``.json``).
One entry per evaluation: the test, what was evaluated, score, grade, pass or fail, findings
(redacted messages; never arguments). Under pytest-xdist each worker sends its entries to the
controller (``workeroutput``), which merges them into the one report, in test order.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .expect import Expectation
    from .result import EvaluationResult

__all__ = ["Recorder", "ToolscoreAssertions", "ToolscoreHelper", "write_session_report"]

_MARKER = "toolscore"
_WORKER_KEY = "toolscore_entries"
_EPSILON = 1e-9
_MAX_FINDINGS = 50  # per entry in the report


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolscore", "toolscore: evaluate LLM-agent tool calls")
    group.addoption(
        "--toolscore-report",
        dest="toolscore_report",
        default=None,
        metavar="PATH",
        help="Write a report of every toolscore evaluation of the session (JSON at PATH, "
        "Markdown next to it).",
    )
    group.addoption(
        "--toolscore-gold-dir",
        dest="toolscore_gold_dir",
        default="tests/gold_standards",
        help="Where toolscore_eval looks for relative gold files.",
    )
    group.addoption(
        "--toolscore-trace-dir",
        dest="toolscore_trace_dir",
        default="tests/traces",
        help="Where toolscore_eval looks for relative trace files.",
    )
    parser.addini("toolscore_weights", "Default score weights, NAME=VALUE lines.", "linelist", [])
    parser.addini("toolscore_forbidden", "Default forbidden-call rule file.", "string", "")
    parser.addini("toolscore_min_score", "Default minimum score of assert_tools.", "string", "")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toolscore(weights=None, forbidden=None, min_score=None): default score weights, "
        "forbidden-call rules and minimum score for toolscore fixtures.",
    )
    config.stash[_RECORDER] = Recorder()


# -- recording ---------------------------------------------------------------------------------


class Recorder:
    """The session's evaluations, as small JSON-ready entries (no arguments)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def record(
        self,
        nodeid: str,
        what: str,
        result: EvaluationResult | None,
        *,
        passed: bool | None,
        min_score: float | None = None,
        failure: str | None = None,
    ) -> None:
        """Add one evaluation (``result`` None: the assertion failed before scoring)."""
        from .redact import redact_secrets
        from .sanitize import shown

        entry: dict[str, Any] = {
            "test": shown(nodeid),
            "what": shown(what),
            "passed": passed,
            "min_score": min_score,
            "time": time.time(),
        }
        if result is not None:
            findings = list(result.findings)
            entry.update(
                score=_finite(result.score),
                grade=result.grade,
                selection_accuracy=_finite(result.selection_accuracy),
                argument_f1=_finite(result.argument_f1),
                sequence_accuracy=_finite(result.sequence_accuracy),
                required_call_recall=_finite(result.required_call_recall),
                expected_calls=len(result.gold_calls),
                actual_calls=result.trace_calls_count,
                findings=[
                    {
                        "severity": f.severity,
                        "kind": f"{f.check}/{f.kind}",
                        "message": shown(f.message),
                    }
                    for f in findings[:_MAX_FINDINGS]
                ],
                findings_total=len(findings),
                notes=[shown(n) for n in getattr(result, "notes", ())],
            )
        if failure is not None:
            entry["failure"] = redact_secrets(failure)
        self.entries.append(entry)


def _finite(value: float | None) -> float | None:
    import math

    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _recorder(config: pytest.Config) -> Recorder:
    return config.stash[_RECORDER]


_RECORDER = pytest.StashKey[Recorder]()


# -- defaults ----------------------------------------------------------------------------------


class _Defaults:
    """Weights, forbidden rules and minimum score for one test (marker over ini)."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        config = request.config
        weights: dict[str, float] | None = None
        lines = [str(x) for x in config.getini("toolscore_weights") or []]
        if lines:
            from .result import parse_weights  # the plugin loads in every pytest run: start-up

            weights = parse_weights([x for line in lines for x in line.split(",") if x.strip()])
        forbidden: Any = config.getini("toolscore_forbidden") or None
        if forbidden:
            forbidden = str(Path(str(config.rootpath)) / str(forbidden))
        min_text = str(config.getini("toolscore_min_score") or "").strip()
        min_score: float | None = float(min_text) if min_text else None
        marker = request.node.get_closest_marker(_MARKER)
        if marker is not None:
            kwargs = dict(marker.kwargs)
            unknown = set(kwargs) - {"weights", "forbidden", "min_score"}
            if marker.args or unknown:
                raise pytest.UsageError(
                    "@pytest.mark.toolscore takes weights=, forbidden= and min_score= only"
                )
            if "weights" in kwargs:
                weights = kwargs["weights"]
            if "forbidden" in kwargs:
                forbidden = kwargs["forbidden"]
                if isinstance(forbidden, (str, os.PathLike)):
                    base = Path(str(request.node.path)).parent
                    candidate = Path(forbidden)
                    if not candidate.is_absolute() and (base / candidate).exists():
                        forbidden = str(base / candidate)
            if "min_score" in kwargs:
                min_score = kwargs["min_score"]
        self.weights: Mapping[str, float] | None = weights
        self.forbidden: Any = forbidden
        self.min_score = min_score


# -- the fixtures' objects ---------------------------------------------------------------------


class ToolscoreHelper:
    """What the ``toolscore`` fixture gives a test: evaluate and assert, with the test's
    defaults, every evaluation recorded in the session report."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._nodeid = request.node.nodeid
        self._recorder = _recorder(request.config)
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
        from .api import evaluate

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
        from .api import evaluate_trace

        kwargs.setdefault("weights", self.weights)
        kwargs.setdefault("forbidden", self.forbidden)
        result = evaluate_trace(gold, trace, format, **kwargs)
        self._record(f"evaluate_trace {_name(trace)}", result, passed=None)
        return result

    async def evaluate_stream(self, gold: Any, source: Any, **kwargs: Any) -> EvaluationResult:
        """``await toolscore.evaluate_stream`` with the test's defaults; recorded."""
        from .api import evaluate_stream

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
        from .api import evaluate

        rules = forbidden if forbidden is not None else self.forbidden
        result = evaluate(
            expected, actual, weights if weights is not None else self.weights, strict, rules
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
        import inspect

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
        import inspect

        response = agent(input)
        if inspect.isawaitable(response):
            response = await response
        return self.assert_tools(expected, response, min_score, **kwargs)

    def expect(self, subject: Any) -> Expectation:
        """``toolscore.expect(subject)`` whose ``run``/``run_async`` are recorded."""
        from .expect import Expectation

        helper = self

        class RecordedExpectation(Expectation):
            def run(self) -> EvaluationResult:
                __tracebackhide__ = True
                return helper._expectation("expect", super().run)

            async def run_async(self) -> EvaluationResult:
                __tracebackhide__ = True
                from .expect import ToolScoreAssertionError

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
        from .expect import ToolScoreAssertionError

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
        from .expect import ToolScoreAssertionError
        from .failures import render_failure
        from .sanitize import shown
        from .verdict import SCORE_EPSILON, PassCriterion, judge

        if min_score is None:
            min_score = self.defaults.min_score if self.defaults.min_score is not None else 0.9
        if not 0.0 <= min_score <= 1.0:
            raise ValueError(f"min_score must be between 0.0 and 1.0, got {min_score}")
        verdict = judge(result, PassCriterion(min_score=min_score, all_calls=False))
        low = verdict.score is not None and verdict.score < min_score - SCORE_EPSILON
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


class ToolscoreAssertions:
    """Toolscore's ``toolscore_assert`` fixture: assertions on a result's metrics."""

    def _fail(self, name: str, value: float, limit: float, below: bool = True) -> None:
        word = "below" if below else "above"
        raise AssertionError(f"{name} {value:.4f} is {word} the required {limit:.4f}")

    def _at_least(self, name: str, value: float, limit: float) -> None:
        if value < limit - _EPSILON:
            self._fail(name, value, limit)

    def assert_invocation_accuracy(self, result: Any, min_value: float = 0.9) -> None:
        self._at_least("invocation_accuracy", result.metrics["invocation_accuracy"], min_value)

    def assert_selection_accuracy(self, result: Any, min_value: float = 0.9) -> None:
        self._at_least("selection_accuracy", result.selection_accuracy, min_value)

    def assert_sequence_accuracy(self, result: Any, min_value: float = 0.9) -> None:
        self._at_least("sequence_accuracy", result.sequence_accuracy, min_value)

    def assert_argument_f1(self, result: Any, min_value: float = 0.9) -> None:
        self._at_least("argument_f1", result.argument_f1, min_value)

    def assert_redundancy_below(self, result: Any, max_value: float = 0.1) -> None:
        rate = float((result.metrics.get("efficiency_metrics") or {}).get("redundant_rate", 0.0))
        if rate > max_value + _EPSILON:
            self._fail("redundant_rate", rate, max_value, below=False)

    def assert_score(self, result: Any, min_value: float = 0.9) -> None:
        self._at_least("score", result.score, min_value)

    def assert_all_metrics_above(self, result: Any, min_value: float = 0.9) -> None:
        self.assert_selection_accuracy(result, min_value)
        self.assert_argument_f1(result, min_value)
        self.assert_sequence_accuracy(result, min_value)


def _resolve(path: Any, directory: str, rootpath: Path) -> Any:
    if not isinstance(path, (str, os.PathLike)):
        return path
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists() or str(path) == "-":
        return os.fspath(path)
    base = Path(directory)
    if not base.is_absolute():
        base = rootpath / base
    return str(base / candidate)


@pytest.fixture
def toolscore(request: pytest.FixtureRequest) -> ToolscoreHelper:
    """Evaluate and assert tool calls with the test's defaults; recorded in the report."""
    return ToolscoreHelper(request)


@pytest.fixture
def toolscore_eval(request: pytest.FixtureRequest) -> Callable[..., EvaluationResult]:
    """Toolscore's ``toolscore_eval(gold, trace, format="auto", validate_side_effects=True)``."""
    helper = ToolscoreHelper(request)
    config = request.config

    def run(
        gold: Any, trace: Any, format: str = "auto", validate_side_effects: bool = True
    ) -> EvaluationResult:
        gold = _resolve(gold, config.getoption("toolscore_gold_dir"), config.rootpath)
        trace = _resolve(trace, config.getoption("toolscore_trace_dir"), config.rootpath)
        return helper.evaluate_trace(
            gold, trace, format, validate_side_effects=validate_side_effects
        )

    return run


@pytest.fixture
def toolscore_assert() -> ToolscoreAssertions:
    """Toolscore's metric assertions on a result."""
    return ToolscoreAssertions()


@pytest.fixture
def toolscore_assert_tools(request: pytest.FixtureRequest) -> Callable[..., EvaluationResult]:
    """``assert_tools(expected, actual, min_score=None, ...)`` with the test's defaults."""
    return ToolscoreHelper(request).assert_tools


# -- the report ---------------------------------------------------------------------------------


def _report_paths(path: str) -> tuple[Path, Path]:
    target = Path(path)
    if target.suffix.lower() == ".md":
        return target.with_suffix(".json"), target
    return target, target.with_suffix(".md")


def write_session_report(path: str, entries: Sequence[Mapping[str, Any]]) -> tuple[Path, Path]:
    """Write the session report (JSON at ``path``, Markdown next to it); their paths."""
    json_path, md_path = _report_paths(path)
    failed = sum(1 for e in entries if e.get("passed") is False)
    scores = [e["score"] for e in entries if isinstance(e.get("score"), (int, float))]
    summary = {
        "evaluations": len(entries),
        "failed": failed,
        "passed": sum(1 for e in entries if e.get("passed") is True),
        "mean_score": sum(scores) / len(scores) if scores else None,
        "findings": sum(int(e.get("findings_total") or 0) for e in entries),
    }
    record = {"summary": summary, "evaluations": list(entries)}
    for target in (json_path, md_path):
        if target.parent and not target.parent.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", "utf-8")
    md_path.write_text(_markdown(summary, entries), encoding="utf-8")
    return json_path, md_path


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _markdown(summary: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> str:
    from .redact import redact_secrets

    mean = summary["mean_score"]
    lines = [
        "# Toolscore test report",
        "",
        f"- **Evaluations:** {summary['evaluations']} ({summary['passed']} passed, "
        f"{summary['failed']} failed)",
        f"- **Mean score:** {'n/a' if mean is None else f'{mean:.3f}'}",
        f"- **Findings:** {summary['findings']}",
        "",
        "| Test | Evaluation | Score | Grade | Result | Findings |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        score = e.get("score")
        result = {True: "✅ pass", False: "❌ fail", None: "—"}[e.get("passed")]
        lines.append(
            f"| {_cell(e['test'])} | {_cell(e['what'])} | "
            f"{'' if score is None else f'{score:.3f}'} | {e.get('grade', '')} | {result} | "
            f"{e.get('findings_total', 0)} |"
        )
    failures = [e for e in entries if e.get("failure")]
    if failures:
        lines += ["", "## Failures"]
        for e in failures:
            lines += ["", f"### {_cell(e['test'])}", "", "````", str(e["failure"]), "````"]
    with_findings = [e for e in entries if e.get("findings")]
    if with_findings:
        lines += ["", "## Findings"]
        for e in with_findings:
            lines += ["", f"### {_cell(e['test'])} ({_cell(e['what'])})", ""]
            lines += [f"- **{f['severity']}** {_cell(f['message'])}" for f in e["findings"]]
    return redact_secrets("\n".join(lines) + "\n")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    recorder = _recorder(config)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the entries to the controller
        workeroutput[_WORKER_KEY] = json.dumps(recorder.entries)
        return
    path = config.getoption("toolscore_report")
    if path:
        entries = sorted(recorder.entries, key=lambda e: float(e.get("time") or 0.0))
        json_path, md_path = write_session_report(path, entries)
        config.stash[_WRITTEN] = (json_path, md_path)


_WRITTEN = pytest.StashKey[tuple[Path, Path]]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: merge a finished worker's entries into the controller's."""
    output = getattr(node, "workeroutput", None) or {}
    data = output.get(_WORKER_KEY)
    if data:
        _recorder(node.config).entries.extend(json.loads(data))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    entries = _recorder(config).entries
    if not entries:
        return
    failed = sum(1 for e in entries if e.get("passed") is False)
    line = f"toolscore: {len(entries)} evaluation(s), {failed} failed"
    written = config.stash.get(_WRITTEN, None)
    if written is not None:
        line += f"; report: {written[0]} and {written[1]}"
    terminalreporter.write_line(line)
