"""The pytest plugin, run for real: pytest in a subprocess on the sample project and on small
generated projects, with and without pytest-xdist."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from _cli import REPO, cli_env
from _secrets import assert_no_secrets

SAMPLE = REPO / "examples" / "pytest_plugin"


def run_pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env()
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )


def _report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _check_sample_report(report: Path) -> None:
    data = _report(report)
    entries = {e["test"].split("::")[-1]: e for e in data["evaluations"]}
    assert set(entries) == {
        "test_weather_lookup",
        "test_async_agent",
        "test_boston_weather",
        "test_cleanup_is_safe",
    }
    assert data["summary"]["evaluations"] == 4
    assert data["summary"]["failed"] == 2 and data["summary"]["passed"] == 2
    assert entries["test_weather_lookup"]["passed"] is True
    assert entries["test_async_agent"]["passed"] is True
    boston = entries["test_boston_weather"]
    assert boston["passed"] is False and boston["what"] == "expect"
    assert "city: expected 'BOS', got 'NYC'" in boston["failure"]
    cleanup = entries["test_cleanup_is_safe"]
    assert {f["kind"] for f in cleanup["findings"]} == {
        "policy/forbidden_call",
        "secrets/aws_access_key_id",
    }
    text = report.read_text(encoding="utf-8")
    markdown = report.with_suffix(".md").read_text(encoding="utf-8")
    assert "| test_weather.py::test_boston_weather | expect | 0.850 | B | ❌ fail | 0 |" in markdown
    assert "## Failures" in markdown and "FORBIDDEN call 2 run_shell" in markdown
    for out in (text, markdown):
        assert_no_secrets(out)


def test_sample_project_report_and_readable_failures(tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.json"
    markdown = report.with_suffix(".md")
    proc = run_pytest(SAMPLE, f"--toolscore-report={report}", f"--toolscore-report={markdown}")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "2 failed, 2 passed" in out
    assert_no_secrets(out + proc.stderr)
    # readable failures: call by call, argument by argument, only matches marked, then the fix
    assert "  ✓   1  search(q=Regex('weather .*'))  search(q='weather NYC')" in out
    assert "  ✗   2  fetch(city='BOS')              fetch(city='NYC', units='metric')" in out
    assert "city: expected 'BOS', got 'NYC'" in out
    assert "Fix: `fetch` was called with other arguments" in out
    assert "FORBIDDEN call 2 run_shell matches forbidden rule 1: destructive shell command" in out
    assert "Fix: call 2 `run_shell` matches forbidden rule 1" in out
    # the plugin's own frames are hidden from the traceback
    assert "pytest_plugin.py" not in out
    assert f"toolscore: 4 evaluation(s), 2 failed; report: {report} and {markdown}" in out
    _check_sample_report(report)


def test_sample_project_under_xdist_merges_the_workers_reports(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    report = tmp_path / "report.md"
    proc = run_pytest(
        SAMPLE, "-n", "2", f"--toolscore-report={report}",
        f"--toolscore-report={report.with_suffix('.json')}",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 failed, 2 passed" in proc.stdout
    assert "created: 2/2 workers" in proc.stdout
    _check_sample_report(report.with_suffix(".json"))


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


def test_marker_ini_defaults_and_toolscore_fixtures(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        {
            "pytest.ini": """
                [pytest]
                toolscore_weights =
                    required_call_recall=0.5
                toolscore_min_score = 0.5
            """,
            "rules.json": '[{"tool": "drop_table"}]',
            "tests/gold_standards/gold.json": '[{"tool": "search", "args": {"q": "x"}}]',
            "tests/traces/trace.jsonl": '{"tool": "search", "args": {"q": "x"}}\n',
            "tests/test_defaults.py": """
                import pytest

                def test_ini_weights_and_min_score(toolscore):
                    assert toolscore.weights == {"required_call_recall": 0.5}
                    assert toolscore.forbidden is None
                    result = toolscore.assert_tools(
                        [{"tool": "a"}, {"tool": "b"}], [{"tool": "a"}, {"tool": "c"}]
                    )
                    assert result.weights["required_call_recall"] == pytest.approx(0.5 / 1.5)

                @pytest.mark.toolscore(forbidden="../rules.json", min_score=0.0)
                def test_marker_forbidden(toolscore):
                    toolscore.assert_tools([{"tool": "search"}], [{"tool": "drop_table"}])

                def test_toolscore_eval_dirs(toolscore_eval, toolscore_assert, toolscore):
                    result = toolscore_eval("gold.json", "trace.jsonl")
                    assert result.score == pytest.approx(1.0)
                    toolscore_assert.assert_all_metrics_above(result, 0.99)
                    toolscore_assert.assert_redundancy_below(result, 0.0)
                    bad = toolscore.evaluate(
                        [{"tool": "a", "args": {"x": 1}}], [{"tool": "a", "args": {"x": 2}}]
                    )
                    with pytest.raises(AssertionError, match="argument_f1 0.0000 is below"):
                        toolscore_assert.assert_argument_f1(bad)

                def test_assert_tools_fixture(toolscore_assert_tools):
                    toolscore_assert_tools([{"tool": "a"}], [{"tool": "a"}], 1.0)

                @pytest.mark.anyio
                async def test_async(toolscore, tmp_path):
                    trace = tmp_path / "t.jsonl"
                    trace.write_text('{"tool": "search", "args": {"q": "x"}}\\n')
                    result = await toolscore.evaluate_stream([{"tool": "search"}], str(trace))
                    assert result.trace_calls_count == 1
                    async def agent(prompt):
                        return [{"tool": "search", "args": {"q": prompt}}]
                    await toolscore.assert_agent_async(
                        agent, "x", [{"tool": "search", "args": {"q": "x"}}]
                    )
                    await toolscore.expect(agent).on("x").calls("search", q="x").run_async()

                @pytest.fixture
                def anyio_backend():
                    return "asyncio"

                @pytest.mark.toolscore(min_scor=0.5)
                def test_marker_typo(toolscore):
                    pass
            """,
        },
    )
    report = tmp_path / "report.json"
    proc = run_pytest(project, f"--toolscore-report={report}", "-rA")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 4 passed, 1 error" in proc.stdout, proc.stdout
    assert "takes weights=, forbidden=, min_score= and" in proc.stdout
    assert "FAILED tests/test_defaults.py::test_marker_forbidden" in proc.stdout
    assert "1 violation (1 forbidden call(s); score" in proc.stdout
    assert "FORBIDDEN call 1 drop_table matches forbidden rule 1" in proc.stdout
    entries = _report(report)["evaluations"]
    whats = [(e["test"].split("::")[-1], e["what"], e["passed"]) for e in entries]
    assert ("test_marker_forbidden", "assert_tools", False) in whats
    assert ("test_ini_weights_and_min_score", "assert_tools", True) in whats
    assert ("test_toolscore_eval_dirs", "evaluate_trace tests/traces/trace.jsonl", None) in [
        (t, w.replace(str(tmp_path) + "/", ""), p) for t, w, p in whats
    ]
    assert ("test_async", "expect", True) in whats
    assert len(entries) == 8


def test_assert_tools_fails_on_every_kind_of_violation(tmp_path: Path) -> None:
    """The plugin asks the one verdict: a credential in an argument fails the test as a
    forbidden call does, and the failure says which kind, redacted."""
    key = "gh" + "p_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb"
    (tmp_path / "test_kinds.py").write_text(
        textwrap.dedent(
            """
            KEY = "gh" + "p_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb"  # whole only at run time

            def test_credential(toolscore):
                actual = [{"tool": "fetch", "args": {"token": KEY}}]
                toolscore.assert_tools([{"tool": "fetch"}], actual)

            def test_clean(toolscore):
                toolscore.assert_tools([{"tool": "fetch"}], [{"tool": "fetch"}])
            """
        ),
        encoding="utf-8",
    )
    proc = run_pytest(tmp_path, "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout
    assert "1 violation (1 credential(s); score" in proc.stdout
    assert "VIOLATION call 1 fetch passes a credential (github_token)" in proc.stdout
    assert key not in proc.stdout + proc.stderr


def test_a_pass_rule_in_the_marker_decides_assert_tools(tmp_path: Path) -> None:
    """``pass_rule=`` (the one verdict's rule) replaces the minimum score: a wrong argument
    fails ``match:superset`` although the score is high, and extra reads are free."""
    (tmp_path / "test_rule.py").write_text(
        textwrap.dedent(
            """
            import pytest

            BOOK = [{"tool": "book", "args": {"flight": "HAT001"}}]

            @pytest.mark.toolscore(pass_rule="match:superset")
            def test_wrong_argument(toolscore):
                toolscore.assert_tools(BOOK, [{"tool": "book", "args": {"flight": "HAT002"}}])

            @pytest.mark.toolscore(pass_rule="match:superset")
            def test_reads_are_free(toolscore):
                toolscore.assert_tools(BOOK, [{"tool": "read", "args": {}}, *BOOK])

            @pytest.mark.toolscore(pass_rule="sometimes")
            def test_bad_rule(toolscore):
                toolscore.assert_tools(BOOK, BOOK)
            """
        ),
        encoding="utf-8",
    )
    proc = run_pytest(tmp_path, "-q")
    assert "1 failed, 1 passed, 1 error" in proc.stdout, proc.stdout
    assert "match superset failed" in proc.stdout
    assert "unknown term 'sometimes'" in proc.stdout


@pytest.mark.parametrize(
    ("named", "beside"), [("tests/gold.md", "tests/gold.json"), ("README.json", "README.md")]
)
def test_the_report_is_written_at_its_path_only(tmp_path: Path, named: str, beside: str) -> None:
    project = _project(
        tmp_path,
        {
            beside: "not the run's: kept\n",
            "tests/test_one.py": """
                def test_one(toolscore):
                    toolscore.assert_tools([{"tool": "a"}], [{"tool": "a"}])
            """,
        },
    )
    proc = run_pytest(project, f"--toolscore-report={named}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / beside).read_text(encoding="utf-8") == "not the run's: kept\n"
    written = (project / named).read_text(encoding="utf-8")
    if named.endswith(".md"):
        assert written.startswith("# Toolscore test report")
    else:
        assert json.loads(written)["summary"]["evaluations"] == 1
    assert sorted(p.name for p in project.rglob("*") if p.name.startswith(".toolscore")) == []


def test_a_marker_rule_file_is_read_from_the_test_files_directory(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        {
            "tests/rules.json": '[{"tool": "drop_table"}]',
            "tests/test_rules.py": """
                import pytest

                @pytest.mark.toolscore(forbidden="rules.json", min_score=0.0)
                def test_forbidden(toolscore):
                    toolscore.assert_tools([{"tool": "a"}], [{"tool": "drop_table"}])

                @pytest.mark.toolscore(forbidden="missing.json")
                def test_missing(toolscore):
                    pass
            """,
        },
    )
    for cwd in (project, project / "tests"):
        proc = run_pytest(cwd, "-rA")
        out = proc.stdout
        assert "1 failed, 1 error" in out, out
        assert "FORBIDDEN call 1 drop_table matches forbidden rule 1" in out
        missing = project / "tests" / "missing.json"
        assert (
            f"toolscore: forbidden rule file {missing} not found ('missing.json', relative to "
            "the test file's directory)" in out
        )
        assert "Traceback" not in out and "FileNotFoundError" not in out
