"""``toolscore validate``: a trace, a gold file and a rule file checked by the readers ``eval``
uses; OK, or what is wrong where (file and line or byte offset), exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _cli import EXAMPLE, run_cli
from _secrets import PLANTED, assert_no_secrets

GOLD = EXAMPLE / "gold.json"
RULES = EXAMPLE / "forbidden.json"
TRACE = EXAMPLE / "trace.json"


def test_good_files_are_ok() -> None:
    done = run_cli("validate", str(TRACE), "--gold", str(GOLD), "--forbidden", str(RULES))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"OK gold {GOLD}: 2 expected call(s)",
        f"OK rule file {RULES}: 4 forbidden rule(s)",
        f"OK trace {TRACE}: 5 call(s)",
        '  first call: run_shell {"command": "make test"}',
    ]


def test_bad_files_say_where_and_exit_2(tmp_path: Path) -> None:
    lines = tmp_path / "trace.jsonl"
    lines.write_text('{"tool": "a", "args": {}}\n{"tool": \n{"tool": "b"}\n', encoding="utf-8")
    skipped = run_cli("validate", str(lines))
    assert skipped.returncode == 2
    assert skipped.stdout.splitlines()[0] == f"BAD trace {lines}: 2 call(s) read, but:"
    assert f"{lines}:2: malformed JSON" in skipped.stdout

    cut = tmp_path / "cut.json"
    cut.write_text('[{"tool": "a"},', encoding="utf-8")
    truncated = run_cli("validate", str(cut), "--gold", str(cut), "--rules", str(TRACE))
    assert truncated.returncode == 2
    out = truncated.stdout
    assert f"BAD gold: {cut}:1: not valid JSON" in out
    assert f"BAD rule file: {TRACE}: unknown rule key 'calls'" in out
    assert f"{cut}:1: the input ends inside a JSON value at byte 15 (truncated)" in out

    missing = run_cli("validate", str(tmp_path / "absent.json"))
    assert missing.returncode == 2 and "BAD trace:" in missing.stdout
    nothing = run_cli("validate")
    assert nothing.returncode == 2 and "give a trace" in nothing.stderr


def test_first_call_is_redacted(tmp_path: Path) -> None:
    secrets = [s for kind in PLANTED.values() for s in kind]
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"tool": "post", "args": {"k": secrets}}) + "\n", encoding="utf-8")
    done = run_cli("validate", str(trace))
    assert done.returncode == 0, done.stderr
    assert "first call: post" in done.stdout and "[REDACTED" in done.stdout
    assert_no_secrets(done.stdout + done.stderr)


def test_click_runner_drives_validate(tmp_path: Path) -> None:
    from toolscore.cli import main

    runner = CliRunner()
    good = runner.invoke(main, ["validate", str(TRACE), "-g", str(GOLD)])
    assert good.exit_code == 0, good.output
    assert f"OK trace {TRACE}: 5 call(s)" in good.output
    bad = tmp_path / "gold.json"
    bad.write_text('[{"args": {}}]', encoding="utf-8")
    result = runner.invoke(main, ["validate", "-g", str(bad)])
    assert result.exit_code == 2 and result.output.startswith(f"BAD gold: {bad}")


_FIXTURE = [HealthCheck.function_scoped_fixture]  # one file, rewritten by each example


@settings(max_examples=40, deadline=None, suppress_health_check=_FIXTURE)
@given(
    st.lists(
        st.one_of(
            st.just('{"tool": "a", "args": {"x": 1}}'),
            st.text(alphabet='{}[]":,tool 1a\\', max_size=30),
        ),
        max_size=6,
    )
)
def test_any_jsonl_is_ok_or_bad_never_an_internal_error(tmp_path: Path, lines: list[str]) -> None:
    from toolscore.cli import main

    trace = tmp_path / "any.jsonl"
    trace.write_text("\n".join(lines), encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(trace), "-f", "jsonl"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 2), result.output
    first = result.output.splitlines()[0]
    assert first.startswith(("OK trace", "BAD trace")), result.output
    assert (result.exit_code == 0) == first.startswith("OK trace")
