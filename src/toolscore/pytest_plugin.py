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
(a rule file, relative to the rootdir) and ``toolscore_min_score``. A marker's rule file is
read relative to the test file's directory (whatever the current directory); a missing one
fails the test in one line naming it. With default forbidden
rules, ``assert_tools`` also fails on a forbidden call.

``--toolscore-report PATH`` writes the session report at ``PATH``, and only there: Markdown
when ``PATH`` ends in ``.md``, JSON otherwise (given twice, ``--toolscore-report=r.json
--toolscore-report=r.md``, both). No other file is made or replaced.
One entry per evaluation: the test, what was evaluated, score, grade, pass or fail, findings
(redacted messages; never arguments). Under pytest-xdist each worker sends its entries to the
controller (``workeroutput``), which merges them into the one report, in test order.

Where things are: the hooks and fixtures here; the ``toolscore`` fixture's helper in
``_pytest_helper`` (imported only when a test asks for a fixture); recording and the report
in ``_pytest_report``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._pytest_report import Recorder, session_recorder, start_recording, write_session_report

if TYPE_CHECKING:
    from ._pytest_helper import ToolscoreHelper
    from .result import EvaluationResult

__all__ = ["Recorder", "ToolscoreAssertions", "ToolscoreHelper", "write_session_report"]

_WORKER_KEY = "toolscore_entries"
_EPSILON = 1e-9


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolscore", "toolscore: evaluate LLM-agent tool calls")
    group.addoption(
        "--toolscore-report",
        dest="toolscore_report",
        action="append",
        default=None,
        metavar="PATH",
        help="Write a report of every toolscore evaluation of the session at PATH (Markdown "
        "for a .md PATH, else JSON); repeat for both.",
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
    parser.addini(
        "toolscore_pass", "Default pass rule of assert_tools (toolscore.verdict).", "string", ""
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toolscore(weights=None, forbidden=None, min_score=None, pass_rule=None): default "
        "score weights, "
        "forbidden-call rules and minimum score for toolscore fixtures.",
    )
    start_recording(config)


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


def _helper_class() -> type[ToolscoreHelper]:
    # the plugin loads in every pytest run: the helper, and the evaluation it imports, only
    # once a test asks for a toolscore fixture
    from ._pytest_helper import ToolscoreHelper

    return ToolscoreHelper


def __getattr__(name: str) -> Any:
    if name == "ToolscoreHelper":  # re-exported, imported when first asked for
        return _helper_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@pytest.fixture
def toolscore(request: pytest.FixtureRequest) -> ToolscoreHelper:
    """Evaluate and assert tool calls with the test's defaults; recorded in the report."""
    return _helper_class()(request)


@pytest.fixture
def toolscore_eval(request: pytest.FixtureRequest) -> Callable[..., EvaluationResult]:
    """Toolscore's ``toolscore_eval(gold, trace, format="auto", validate_side_effects=True)``."""
    helper = _helper_class()(request)
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
    return _helper_class()(request).assert_tools


# -- the report ---------------------------------------------------------------------------------


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    recorder = session_recorder(config)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the entries to the controller
        workeroutput[_WORKER_KEY] = json.dumps(recorder.entries)
        return
    paths = config.getoption("toolscore_report")
    if paths:
        entries = sorted(recorder.entries, key=lambda e: float(e.get("time") or 0.0))
        config.stash[_WRITTEN] = write_session_report(paths, entries)


_WRITTEN = pytest.StashKey[list[Path]]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: merge a finished worker's entries into the controller's."""
    output = getattr(node, "workeroutput", None) or {}
    data = output.get(_WORKER_KEY)
    if data:
        session_recorder(node.config).entries.extend(json.loads(data))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    entries = session_recorder(config).entries
    if not entries:
        return
    failed = sum(1 for e in entries if e.get("passed") is False)
    line = f"toolscore: {len(entries)} evaluation(s), {failed} failed"
    written = config.stash.get(_WRITTEN, None)
    if written is not None:
        line += "; report: " + " and ".join(map(str, written))
    terminalreporter.write_line(line)
