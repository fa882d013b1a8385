"""Start-up: `toolscore eval` on one small trace, and `import toolscore`, leave the modules
they do not need unimported (whole-process time on small traces is mostly start-up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _cli import EXAMPLE, cli_env

# what a single small trace never needs: typer's option coercion (pydantic), the dataset
# engine, the parallel reader, the hard rules' machinery, reports not asked for, CI outputs
NOT_FOR_ONE_TRACE = (
    "pydantic",
    "toolscore.parts.engine",
    "toolscore.dataset.gold",
    "toolscore.dataset.inputs",
    "toolscore.dataset.worker",
    "toolscore.parts.trace",
    "multiprocessing",
    "toolscore.hardrules.matching",
    "toolscore.hardrules.state",
    "toolscore.hardrules.schemas",
    "toolscore.checks.hardrules",
    "jsonschema",
    "sqlite3",
    "toolscore.reports.html",
    "toolscore.reports.markdown",
    "toolscore.reports.junit",
    "toolscore.reports.sarif",
    "toolscore.baseline",
    "toolscore.integrations",
)

NOT_FOR_IMPORT = (
    "typer",
    "rich",
    "pydantic",
    "toolscore.api",
    "toolscore.cli",
    "toolscore.parts.engine",
    "toolscore.hardrules.spec",
    "toolscore.reports.html",
    "toolscore.parts.trace",
    "jsonschema",
    "sqlite3",
)

_EVAL = """
import sys
from toolscore.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(code, sorted(m for m in {names!r} if m in sys.modules))
"""


def _run(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=EXAMPLE,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_eval_of_one_small_trace_imports_only_what_it_needs(tmp_path: Path) -> None:
    code = _EVAL.format(names=NOT_FOR_ONE_TRACE)
    # options given on the command line (a path, a weight) are read without typer's coercion
    args = ["eval", "gold.json", "trace.json", "--forbidden", "forbidden.json"]
    args += ["--weight", "selection_accuracy=2"]
    assert _run(code, *args, "-o", str(tmp_path / "r.json")) == "0 []"


def test_version_imports_no_evaluation() -> None:
    names = (*NOT_FOR_ONE_TRACE, "toolscore.api", "toolscore.sources", "toolscore.reports.json")
    assert _run(_EVAL.format(names=names), "--version") == "0 []"


def test_import_toolscore_imports_only_the_package() -> None:
    code = (
        f"import sys, toolscore; print(sorted(m for m in {NOT_FOR_IMPORT!r} if m in sys.modules))"
    )
    assert _run(code) == "[]"
