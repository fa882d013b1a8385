"""Terminal- and log-safe text: the sanitizer alone, and every human-facing output of a trace
whose tool names, error texts and rule reasons carry escape sequences (on a pipe and on a pty)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from _cli import cli_env, run_cli
from toolscore.sanitize import UNSAFE, shown, visible

HOSTILE = (
    "\x1b]0;pwned\x07",  # window title
    "\x1b[2J",  # clear screen
    "\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\u202e",  # right-to-left override
    "\x00",  # NUL
    "\x08",  # backspace
    "\u2066",  # isolate
    "\x9b31m",  # C1 CSI
)
COMMAND = "::error title=pwned::owned"


def test_visible_escapes_each_kind() -> None:
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("x\ny\rz\t") == "x\\ny\\rz\\t"
    assert visible("exe.\u202etxt") == "exe.\\u202etxt"
    assert visible("nul\x00") == "nul\\x00"
    assert visible("\x7f\x9b") == "\\x7f\\x9b"
    assert visible("\ud800 lone") == "\\ud800 lone"
    assert visible("\ufeffbom\u200b") == "\\ufeffbom\\u200b"


def test_visible_defuses_workflow_commands() -> None:
    assert visible(COMMAND) == "\\x3a:error title=pwned::owned"
    assert visible("  ::warning::x") == "  \\x3a:warning::x"
    assert visible("tool\n::error::x") == "tool\\n::error::x"  # one line: not at a line start
    assert visible("a ##[error]b") == "a \\x23#[error]b"
    assert visible("mcp::search") == "mcp::search"  # inside a name: harmless, kept
    assert visible("a ::error::x") == "a \\x3a:error::x"  # a wrapped console line could start here


def test_plain_text_is_unchanged() -> None:
    text = "run_shell ünïcode 東京 🚀 C:\\path\\x [b] <i> 50%"
    assert visible(text) is text


@given(st.text())
def test_visible_output_is_one_safe_line(text: str) -> None:
    out = visible(text)
    assert UNSAFE.search(out) is None
    assert not out.lstrip().startswith("::")
    assert re.search(r"\s::", out) is None
    assert "##[" not in out
    assert len(out.splitlines()) <= 1
    out.encode("utf-8")  # no lone surrogate left


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_visible_keeps_printable_text(text: str) -> None:
    if re.search(r"(^|\s)::", text) is None and "##[" not in text:
        assert visible(text) == text


def test_shown_redacts_before_escaping() -> None:
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    out = shown(f"token:\n{key}")
    assert key[4:] not in out
    assert out.startswith("token:\\n[REDACTED")


# -- every output of a hostile trace ------------------------------------------------------


def _hostile_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    calls = []
    for i, seq in enumerate(HOSTILE):
        calls.append(
            {"tool": f"tool{i}{seq}\n{COMMAND}", "args": {}, "error": f"fail{seq}\n{COMMAND}"}
        )
    calls.append({"tool": "run_shell", "args": {"command": "rm -rf /"}})
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"tool": f"gold\x1b[2J\n{COMMAND}"}]), encoding="utf-8")
    rules = tmp_path / "rules.json"
    reason = "".join(HOSTILE) + "\n" + COMMAND
    rules.write_text(json.dumps([{"tool": "run_shell", "reason": reason}]), encoding="utf-8")
    return gold, trace, rules


def _assert_safe(text: str, *, terminal: bool = False) -> None:
    """No hostile sequence acts: only rich's own SGR/cursor codes may remain on a terminal."""
    if terminal:
        # rich's own codes: CSI with digits/semicolons/? ending in a letter, never 2J
        text = re.sub(r"\x1b\[(?!2J)\??[0-9;]*[A-HJKSTfhlmsu]", "", text)
    for bad in ("\x1b", "\x07", "\x00", "\x08", "\u202e", "\u2066", "\x9b"):
        assert bad not in text, (bad, text)
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
    assert "\\x1b[2J" in text  # shown, visibly escaped
    assert "\\u202e" in text


def test_eval_outputs_on_a_pipe_are_safe(tmp_path: Path) -> None:
    gold, trace, rules = _hostile_files(tmp_path)
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    proc = run_cli(
        "eval", str(gold), str(trace), "--forbidden", str(rules), "-v",
        "-o", str(tmp_path / "r.json"), "--markdown", str(md), "--html", str(page),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _assert_safe(proc.stdout)
    _assert_safe(md.read_text(encoding="utf-8"))
    _assert_safe(page.read_text(encoding="utf-8"))
    # the JSON record keeps the data as recorded
    record = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert record["calls"]["actual"][1]["tool"] == f"tool1\x1b[2J\n{COMMAND}"


def test_watch_on_a_pipe_is_safe(tmp_path: Path) -> None:
    _, trace, rules = _hostile_files(tmp_path)
    proc = run_cli("watch", str(trace), "--forbidden", str(rules))
    assert proc.returncode == 0, proc.stderr
    _assert_safe(proc.stdout)


def test_error_line_is_safe(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"tool": "a"}\n', encoding="utf-8")
    proc = run_cli("eval", str(tmp_path / "gold\x1b[2J\u202e\n::error::x.json"), str(trace))
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1
    _assert_safe(proc.stderr)


def _run_on_pty(args: list[str], cwd: Path) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal; everything it wrote."""
    main, sub = pty.openpty()
    env = cli_env()
    env["TERM"] = "xterm-256color"
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolscore", *args],
        stdin=subprocess.DEVNULL, stdout=sub, stderr=sub, cwd=cwd, env=env,
    )  # fmt: skip
    os.close(sub)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_eval_on_a_terminal_is_safe(tmp_path: Path) -> None:
    gold, trace, rules = _hostile_files(tmp_path)
    out = _run_on_pty(
        ["eval", str(gold), str(trace), "--forbidden", str(rules), "-v", "-o", "r.json"], tmp_path
    )
    assert "Toolscore Evaluation Results" in out
    _assert_safe(out, terminal=True)


def test_watch_on_a_terminal_is_safe(tmp_path: Path) -> None:
    _, trace, rules = _hostile_files(tmp_path)
    out = _run_on_pty(["watch", str(trace), "--forbidden", str(rules)], tmp_path)
    assert "Calls read" in out
    _assert_safe(out, terminal=True)
