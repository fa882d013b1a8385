"""The public surface: __all__ is exactly what the package exports, and it covers the
Toolscore 1.10 names toolscore implements."""

from __future__ import annotations

import subprocess
import sys

import toolscore

# Toolscore 1.10's top-level names that toolscore provides (the snapshot, trace-capture and
# LLM-judge helpers are not part of toolscore; see the README).
TOOLSCORE_110 = {
    "ANY", "Approx", "Contains", "Expectation", "IsType", "Matcher", "OneOf", "Regex",
    "ToolScoreAssertionError", "__version__", "assert_tools", "auto_extract", "evaluate",
    "evaluate_trace", "expect", "from_anthropic", "from_claude_agent_sdk", "from_gemini",
    "from_langgraph", "from_openai", "from_openai_agents", "from_otel", "from_pydantic_ai",
    "letter_grade", "test_agent", "test_agent_async",
}  # fmt: skip


def test_all_matches_exports() -> None:
    exported = {n for n in dir(toolscore) if not n.startswith("_")} | {"__version__"}
    modules = {n for n in exported if type(getattr(toolscore, n)).__name__ == "module"}
    assert set(toolscore.__all__) == exported - modules - {"annotations"}


def test_covers_toolscore_names() -> None:
    assert TOOLSCORE_110 <= set(toolscore.__all__)


def test_public_classes_report_the_package() -> None:
    assert repr(toolscore.EvaluationResult).startswith("<class 'toolscore.EvaluationResult")
    assert toolscore.evaluate.__module__ == "toolscore"


def test_import_stays_free_of_cli_libraries() -> None:
    code = "import sys, toolscore; print('typer' in sys.modules, 'rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
