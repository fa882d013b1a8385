"""The real command line, run in a subprocess: exit codes, error lines, reports, redaction."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _cli import EXAMPLE, cli_env, run_cli
from _secrets import ALL_KEYS, PLANTED, assert_no_secrets

GOLD = EXAMPLE / "gold.json"
TRACE = EXAMPLE / "trace.json"
RULES = EXAMPLE / "forbidden.json"


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def assert_one_error_line(stderr: str, *needles: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("toolscore: error: "), line
    for needle in needles:
        assert needle in line, line
    return line


def evaluate(tmp_path: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / "out.json"
    proc = run_cli("eval", *args, "-o", str(out))
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return proc, report


# -- success and gates ---------------------------------------------------------------------


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert re.fullmatch(r"toolscore, version \S+\n", proc.stdout)


def test_eval_exit_0_and_report_lines(tmp_path: Path) -> None:
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    out = tmp_path / "out.json"
    proc = run_cli(
        "eval", str(GOLD), str(TRACE), "-o", str(out), "--markdown", str(md), "--html", str(page)
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-4:] == [
        f"> JSON report: {out}",
        f"> HTML report: {page}",
        f"> Markdown report: {md}",
        "",
    ]
    assert "│ Overall Score      │  74.0% │" in lines
    assert any(line.startswith("│ Grade C   FAIL (74.0%)") for line in lines)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["summary"]["trace_calls_count"] == 5
    assert len(report["calls"]["actual"]) == 5
    assert report["calls"]["actual"][2]["args"]["body"]["text"].endswith("AKIAIOSFODNN7EXAMPLE")
    for text in (proc.stdout, md.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")):
        assert_no_secrets(text)
    assert "- 🟡 **warning**: 2 of 5 tool calls failed (deploy x2)" in md.read_text("utf-8")


def test_default_output_is_toolscore_json(tmp_path: Path) -> None:
    proc = run_cli("eval", str(GOLD), str(TRACE), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "toolscore.json").is_file()
    assert "> JSON report: toolscore.json" in proc.stdout.splitlines()


@pytest.mark.parametrize(
    ("gate", "code", "message"),
    [
        ("0.5", 0, None),
        ("0.74", 0, None),
        ("0.9", 1, "FAIL score 74.0% is below --fail-under 0.9"),
        ("C", 0, None),
        ("b", 1, "FAIL grade C is below --fail-under B"),
    ],
)
def test_fail_under(tmp_path: Path, gate: str, code: int, message: str | None) -> None:
    proc, report = evaluate(tmp_path, str(GOLD), str(TRACE), "--fail-under", gate)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.splitlines() == ([] if message is None else [message])
    assert report["summary"]["grade"] == "C"  # the report is written whatever the gate says


def test_perfect_score_passes_fail_under_one(tmp_path: Path) -> None:
    gold = write(tmp_path / "g.json", [{"tool": "a", "args": {"x": 1}}])
    trace = write(tmp_path / "t.json", [{"tool": "a", "args": {"x": 1}}])
    proc, report = evaluate(tmp_path, str(gold), str(trace), "--fail-under", "1")
    assert report["score"] < 1.0  # 0.9999999999999999, as in Toolscore
    assert proc.returncode == 0, proc.stderr


def test_both_gates(tmp_path: Path) -> None:
    proc, _ = evaluate(
        tmp_path,
        str(GOLD),
        str(TRACE),
        "--forbidden",
        str(RULES),
        "--fail-on-violations",
        "--fail-under",
        "A",
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "ERROR 2 violation(s) found (1 forbidden call(s), 1 credential(s)) (--fail-on-violations)",
        "FAIL grade C is below --fail-under A",
    ]


def test_no_violations_passes_gate(tmp_path: Path) -> None:
    gold = write(tmp_path / "g.json", [{"tool": "a"}])
    trace = write(tmp_path / "t.json", [{"tool": "a", "args": {"q": "fine"}}])
    proc, _ = evaluate(
        tmp_path, str(gold), str(trace), "--forbidden", str(RULES), "--fail-on-violations"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_weights(tmp_path: Path) -> None:
    proc, report = evaluate(tmp_path, str(GOLD), str(TRACE), "--weight", "required_call_recall=0.3")
    assert proc.returncode == 0, proc.stderr
    weights = report["weights"]
    assert weights["required_call_recall"] == pytest.approx(0.3 / 1.3)
    assert report["summary"]["weights"] == weights


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ("foo", "--weight: expected NAME=VALUE, got 'foo'"),
        ("a=abc", "--weight: expected NAME=VALUE, got 'a=abc'"),
        ("nope=1", "Unknown weight keys"),
        ("argument_f1=-1", "must be non-negative"),
        ("argument_f1=nan", "must be a finite number"),
    ],
)
def test_bad_weight_exit_2(tmp_path: Path, item: str, needle: str) -> None:
    proc, report = evaluate(tmp_path, str(GOLD), str(TRACE), "--weight", item)
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, needle)
    assert report == {}


def test_bad_fail_under_exit_2(tmp_path: Path) -> None:
    proc, _ = evaluate(tmp_path, str(GOLD), str(TRACE), "--fail-under", "G")
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "'G'")


# -- input errors ------------------------------------------------------------------------------


def test_missing_files_exit_2(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")
    for args in ((missing, str(TRACE)), (str(GOLD), missing)):
        proc, _ = evaluate(tmp_path, *args)
        assert proc.returncode == 2
        assert_one_error_line(proc.stderr, "nope.json")
    proc, _ = evaluate(tmp_path, str(GOLD), str(TRACE), "--forbidden", missing)
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "nope.json")


def test_bad_json_at_start_exit_2(tmp_path: Path) -> None:
    trace = write(tmp_path / "bad.json", '{"calls": [ nope ]}')
    proc, _ = evaluate(tmp_path, str(GOLD), str(trace))
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "bad.json", "byte")


def test_truncated_trace_writes_report_then_exit_2(tmp_path: Path) -> None:
    calls = [{"tool": "run_shell", "args": {"command": "make test"}}] * 3
    text = json.dumps({"calls": calls})
    trace = write(tmp_path / "cut.json", text[: text.rindex("{") + 10])
    md = tmp_path / "r.md"
    proc, report = evaluate(tmp_path, str(GOLD), str(trace), "--markdown", str(md))
    assert proc.returncode == 2
    line = assert_one_error_line(proc.stderr, "cut.json", "byte")
    assert report["summary"]["complete"] is False
    assert report["summary"]["trace_calls_count"] == 2
    assert len(report["calls"]["actual"]) == 2
    assert "incomplete" in report
    assert "Trace incomplete: " in proc.stdout
    assert "evaluated the 2 calls read before it" in proc.stdout
    assert "Trace incomplete:" in md.read_text(encoding="utf-8")
    assert line.removeprefix("toolscore: error: ") in proc.stdout


def test_malformed_lines_are_shown_evaluated_around_then_exit_2(tmp_path: Path) -> None:
    good = json.dumps({"tool": "run_shell", "args": {"command": "make test"}})
    lines = [good, '{"tool": "deploy", "args": {"env": ', good, "not json at all", good]
    write(tmp_path / "t.jsonl", "\n".join(lines) + "\n")
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    proc = run_cli(
        "eval", str(GOLD), "t.jsonl", "-o", "out.json", "--markdown", "r.md", "--html", "r.html",
        cwd=tmp_path,
    )  # fmt: skip
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert proc.returncode == 2
    line = assert_one_error_line(proc.stderr, "2 parts of the trace were unreadable", "t.jsonl:2")
    assert "first: t.jsonl:2: malformed JSON" in line
    # the three good lines are evaluated and reported; the two bad ones are named
    assert report["summary"]["trace_calls_count"] == 3
    assert report["summary"]["complete"] is True
    assert report["summary"]["input_problems"] == 2
    assert report["input_problems"] == 2
    assert len(report["calls"]["actual"]) == 3
    shown = proc.stdout[proc.stdout.index("\nInput\n") :]
    assert re.search(r"ERROR +t\.jsonl:2: malformed JSON", shown)
    assert re.search(r"ERROR +t\.jsonl:4: malformed JSON", shown)
    assert "t.jsonl:2: malformed JSON" in md.read_text(encoding="utf-8")
    assert "t.jsonl:4: malformed JSON" in page.read_text(encoding="utf-8")


def test_many_malformed_lines_are_capped_in_the_console_and_counted(tmp_path: Path) -> None:
    good = json.dumps({"tool": "run_shell", "args": {"command": "make test"}})
    write(tmp_path / "t.jsonl", good + "\n" + "{oops\n" * 300 + good + "\n")
    proc = run_cli("eval", str(GOLD), "t.jsonl", "-o", "out.json", cwd=tmp_path)
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert proc.returncode == 2
    assert report["summary"]["input_problems"] == 300
    assert report["summary"]["trace_calls_count"] == 2
    assert len(re.findall(r"ERROR +t\.jsonl:\d+: malformed JSON", proc.stdout)) == 50
    assert "... and 250 more (see the JSON report)" in proc.stdout


def test_invalid_utf8_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "latin.json"
    trace.write_bytes(b'[{"tool": "a", "args": {"q": "caf\xe9"}}]')
    proc, _ = evaluate(tmp_path, str(GOLD), str(trace))
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "latin.json")


def test_bad_gold_file_exit_2(tmp_path: Path) -> None:
    gold = write(tmp_path / "gold.json", '{"not": "a list"')
    proc, _ = evaluate(tmp_path, str(gold), str(TRACE))
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "gold.json")


def test_bad_rule_file_exit_2(tmp_path: Path) -> None:
    rules = write(tmp_path / "rules.json", [{"args": {"x": 1}}])
    proc, _ = evaluate(tmp_path, str(GOLD), str(TRACE), "--forbidden", str(rules))
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "rules.json")
    rules = write(tmp_path / "rules.json", "[{")
    proc, _ = evaluate(tmp_path, str(GOLD), str(TRACE), "--forbidden", str(rules))
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "rules.json")


def test_unknown_format_exit_2(tmp_path: Path) -> None:
    proc, _ = evaluate(tmp_path, str(GOLD), str(TRACE), "--format", "nope")
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "nope")


def test_unwritable_report_exit_2(tmp_path: Path) -> None:
    proc = run_cli("eval", str(GOLD), str(TRACE), "-o", str(tmp_path / "no" / "such" / "x.json"))
    assert proc.returncode == 2
    assert_one_error_line(proc.stderr, "x.json")


# -- data that is not markup, credentials that are not printed -----------------------------------


def test_markup_unsafe_tool_names(tmp_path: Path) -> None:
    names = ["x[/bar]", "[bold]y", "[link=http://e.x]z[/link]"]
    gold = write(tmp_path / "g.json", [{"tool": names[0]}, {"tool": "missing[/]"}])
    trace = write(
        tmp_path / "t.json", [{"tool": n, "args": {}, "error": "[red]boom"} for n in names]
    )
    proc, _ = evaluate(tmp_path, str(gold), str(trace), "-v")
    assert proc.returncode == 0, proc.stderr
    assert "3 of 3 tool calls failed (x[/bar], [bold]y, [link=http://e.x]z[/link])" in proc.stdout
    assert "unexpected extra call to `[bold]y`" in proc.stdout
    assert "expected call to `missing[/]` never happened" in proc.stdout


def test_no_credential_in_any_human_output(tmp_path: Path) -> None:
    calls = [
        {"tool": "http_post", "args": {"headers": {"Authorization": f"Bearer {key}"}}}
        for key in ALL_KEYS
    ]
    calls.append({"tool": f"tool {PLANTED['github_token'][0]}", "args": {"k": ALL_KEYS}})
    gold = write(tmp_path / "g.json", [{"tool": "http_post", "args": {"headers": {"x": 1}}}])
    trace = write(tmp_path / "t.json", {"calls": calls})
    rules = write(tmp_path / "r.json", [{"tool": "http_post", "reason": " ".join(ALL_KEYS)}])
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    proc, report = evaluate(
        tmp_path,
        str(gold),
        str(trace),
        "--forbidden",
        str(rules),
        "--markdown",
        str(md),
        "--html",
        str(page),
        "-v",
        "--fail-on-violations",
    )
    assert proc.returncode == 1, proc.stderr
    assert "[REDACTED" in proc.stdout
    for text in (proc.stdout, proc.stderr, md.read_text("utf-8"), page.read_text("utf-8")):
        assert_no_secrets(text)
    # the JSON record keeps the arguments as recorded
    assert report["calls"]["actual"][0]["args"]["headers"]["Authorization"].endswith(ALL_KEYS[0])


def test_stdin_trace(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    proc = run_cli("eval", str(GOLD), "-", "-o", str(out), stdin=TRACE.read_text("utf-8"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text("utf-8"))["summary"]["trace_calls_count"] == 5


def test_corpus_runs_clean(tmp_path: Path, corpus: Path) -> None:
    gold = write(
        tmp_path / "g.json", [{"tool": "get_user_details"}, {"tool": "transfer_to_human_agents"}]
    )
    # one trace of the corpus (a file of many is read trace by trace: tests/test_dataset.py)
    trace = tmp_path / "one.jsonl"
    with (corpus / "toolbench.jsonl").open("rb") as f:
        lines = [line for line in f if b"G1_answer/10_ChatGPT_DFS_woFilter_w2" in line]
    trace.write_bytes(b"".join(lines))
    proc, report = evaluate(tmp_path, str(gold), str(trace))
    assert proc.returncode == 0, proc.stderr
    assert report["summary"]["trace_calls_count"] == len(lines) > 1
    assert report["summary"]["secrets"] == 0
    assert len(report["calls"]["actual"]) == len(lines)


def test_import_toolscore_does_not_import_typer_or_rich() -> None:
    code = (
        "import sys, toolscore; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('typer', 'rich')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- helpers, in process -------------------------------------------------------------------------


def test_exit_code_table() -> None:
    from toolscore._exitcodes import Outcome, exit_code

    assert exit_code(Outcome()) == 0
    assert exit_code(Outcome(violations=True)) == 1
    assert exit_code(Outcome(below_threshold=True)) == 1
    assert exit_code(Outcome(usage_error=True)) == 2
    assert exit_code(Outcome(input_error=True, violations=True)) == 2
    assert exit_code(Outcome(internal_error=True)) == 2


def test_parse_weights() -> None:
    from toolscore.cli import parse_weights

    assert parse_weights([]) is None
    assert parse_weights(["a=1", " b = 0.5"]) == {"a": 1.0, "b": 0.5}
    with pytest.raises(ValueError, match="expected NAME=VALUE"):
        parse_weights(["a=1=2"])
    with pytest.raises(ValueError, match="got '=1'"):
        parse_weights(["=1"])


def test_progress_counts_the_bytes_of_the_file_as_it_is_read(tmp_path: Path) -> None:
    import gzip

    from toolscore.sources import iter_batches

    lines = b"".join(b'{"tool": "t%d", "args": {}}\n' % i for i in range(3000))
    plain = tmp_path / "t.jsonl"
    plain.write_bytes(lines)
    packed = tmp_path / "t.jsonl.gz"
    packed.write_bytes(gzip.compress(lines))
    for path, size in ((plain, len(lines)), (packed, packed.stat().st_size)):
        seen: list[int] = []
        calls = 0
        for batch in iter_batches(path, chunk_size=4096, on_bytes=seen.append):
            calls += batch.n_calls
            assert sum(seen) <= size
        assert calls == 3000
        assert sum(seen) == size  # compressed bytes for the .gz: what a progress bar's total is
        assert len(seen) > 1
