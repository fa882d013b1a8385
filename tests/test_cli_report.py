"""``toolscore report REPORT.json``: a JSON report rendered as Markdown, HTML and CSV gives the
files ``eval`` writes from the run itself (redacted), without reading the trace again."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from _cli import EXAMPLE, run_cli
from _secrets import PLANTED, assert_no_secrets

GOLD = EXAMPLE / "gold.json"
RULES = EXAMPLE / "forbidden.json"
TRACE = EXAMPLE / "trace.json"


def _undated(text: str) -> str:
    """The report without its time of writing."""
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<time>", text)


def _eval(tmp_path: Path, trace: Path, *more: str) -> tuple[Path, Path]:
    """Run eval with every report; the JSON report and the directory of the others."""
    out = tmp_path / "run"
    out.mkdir()
    done = run_cli(
        "eval", str(GOLD), str(trace), "-o", str(out / "r.json"), "--markdown",
        str(out / "r.md"), "--html", str(out / "r.html"), "--csv", str(out / "r.csv"), *more,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stderr
    assert "> CSV report: " in done.stdout
    return out / "r.json", out


def _same_as_eval(tmp_path: Path, report: Path, run: Path) -> str:
    again = tmp_path / "again"
    again.mkdir()
    done = run_cli(
        "report", str(report), "--markdown", str(again / "r.md"),
        "--html", str(again / "r.html"), "--csv", str(again / "r.csv"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"> Markdown report: {again / 'r.md'}",
        f"> HTML report: {again / 'r.html'}",
        f"> CSV report: {again / 'r.csv'}",
    ]
    texts = []
    for name in ("r.md", "r.html", "r.csv"):
        made = (again / name).read_text(encoding="utf-8")
        assert _undated(made) == _undated((run / name).read_text(encoding="utf-8")), name
        texts.append(made)
    return "\n".join(texts)


def test_reports_from_the_json_report_are_eval_s(tmp_path: Path) -> None:
    report, run = _eval(tmp_path, TRACE, "--forbidden", str(RULES))
    text = _same_as_eval(tmp_path, report, run)
    assert "matches forbidden rule 1" in text and "2 of 5 tool calls failed (deploy x2)" in text
    assert_no_secrets(text)


def test_a_truncated_run_with_every_secret_renders_the_same(tmp_path: Path) -> None:
    secrets = [s for kind in PLANTED.values() for s in kind]
    trace = tmp_path / "t.jsonl"
    lines = [json.dumps({"tool": "run_shell", "args": {"command": "make test"}})]
    lines.append(json.dumps({"tool": "post", "args": {"k": secrets}, "error": "503"}))
    lines.append('{"tool": ')  # skipped as malformed
    lines.append(json.dumps({"tool": "deploy", "args": {"env": "staging"}}))
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report, run = _eval(tmp_path, trace)
    assert json.loads(report.read_text(encoding="utf-8"))["input_problems"] == 1
    text = _same_as_eval(tmp_path, report, run)
    assert "malformed JSON" in text
    assert_no_secrets(text)


def test_bad_report_exits_2_naming_it(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_text('{"metrics": {"a": ', encoding="utf-8")
    done = run_cli("report", str(cut), "--csv", str(tmp_path / "r.csv"))
    assert done.returncode == 2 and f"{cut}: invalid JSON" in done.stderr
    other = tmp_path / "other.json"
    other.write_text('{"calls": []}', encoding="utf-8")
    done = run_cli("report", str(other), "--csv", str(tmp_path / "r.csv"))
    assert done.returncode == 2 and "not a toolscore JSON report" in done.stderr
    assert not (tmp_path / "r.csv").exists()
    nothing = run_cli("report", str(other))
    assert nothing.returncode == 2 and "--markdown, --html or --csv" in nothing.stderr
    same = run_cli("report", str(other), "--csv", str(other))
    assert same.returncode == 2


def test_click_runner_drives_report(tmp_path: Path) -> None:
    from toolscore.cli import main

    report, run = _eval(tmp_path, TRACE)
    md = tmp_path / "again.md"
    result = CliRunner().invoke(main, ["report", str(report), "--markdown", str(md)])
    assert result.exit_code == 0, result.output
    assert _undated(md.read_text(encoding="utf-8")) == _undated(
        (run / "r.md").read_text(encoding="utf-8")
    )
