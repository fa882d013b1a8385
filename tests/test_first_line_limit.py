"""A first line longer than the value limit, with ``--format auto``: the format is decided on
a bounded prefix, the line is an input error naming the file and byte offset, and the lines
after it are still evaluated (``eval`` and ``watch``), in memory well under the line's size."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import cli_env, run_cli
from sources._streamed import fed
from toolscore.limits import value_limit

RULES = json.dumps([{"tool": "delete_all", "reason": "destructive"}])


def _call(tool: str, q: str) -> str:
    return json.dumps({"tool": tool, "args": {"q": q}}) + "\n"


def _trace(path: Path, first: int) -> Path:
    """A first call ``first`` bytes of argument long, then a call, a broken line, and a
    forbidden call."""
    path.write_text(
        _call("search", "x" * first) + _call("search", "a") + "{broken\n" + _call("delete_all", "b")
    )
    return path


def _check(out: str, name: str) -> None:
    assert f"{name}:1: the line starting at byte 0 is 1,137 bytes, over the value limit" in out
    assert f"{name}:3: malformed JSON" in out  # (the lines after it keep their numbers)
    assert "call 2 delete_all matches forbidden rule 1" in out  # evaluated


def test_eval_skips_a_first_line_just_past_the_limit_and_reads_on(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.jsonl", 1100)
    (tmp_path / "rules.json").write_text(RULES)
    got = run_cli(
        "eval", "t.jsonl", "--forbidden", "rules.json", "--max-value-bytes", "1000", cwd=tmp_path
    )
    assert got.returncode == 2, got.stderr
    _check(got.stdout + got.stderr, trace.name)


def test_watch_skips_a_first_line_just_past_the_limit_and_reads_on(tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.jsonl", 1100)
    (tmp_path / "rules.json").write_text(RULES)
    got = run_cli(
        "watch",
        "--forbidden",
        "rules.json",
        "--max-value-bytes",
        "1000",
        cwd=tmp_path,
        stdin=trace.read_text(),
    )
    assert got.returncode == 2, got.stderr
    _check(got.stdout + got.stderr, "<stdin>")


_PEAK = textwrap.dedent(
    """
    import resource, subprocess, sys
    subprocess.run(sys.argv[1:], check=False, capture_output=True)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """
)


def _peak_kib(*args: str, cwd: Path) -> int:
    """The peak resident memory (KiB) of ``toolscore ARGS``, measured in a process of its
    own (the children this test process ran before do not count)."""
    cmd = [sys.executable, "-c", _PEAK, sys.executable, "-m", "toolscore", *args]
    got = subprocess.run(
        cmd, cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=120, check=True
    )
    return int(got.stdout.strip())


def test_a_200_mb_first_line_is_not_held(tmp_path: Path) -> None:
    # it was read whole (862 MB peak for 200 MB: a 1 GB line took 3.84 GB)
    size = 200 << 20
    with (tmp_path / "big.jsonl").open("wb") as f:
        f.write(b'{"tool": "search", "args": {"q": "')
        block = b"x" * (1 << 20)
        for _ in range(size >> 20):
            f.write(block)
        f.write(b'"}}\n' + _call("search", "a").encode())
    try:
        for command in ("eval", "watch"):
            peak = _peak_kib(command, "big.jsonl", "--max-value-bytes", "1000000", cwd=tmp_path)
            assert peak < 150 * 1024, (command, peak)
    finally:
        (tmp_path / "big.jsonl").unlink()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 3000), max_size=6),
    st.sampled_from(["", "\n", " \n\n"]),
    st.integers(0, 2),
)
def test_skipped_first_lines_read_the_same_in_any_chunks(
    cuts: list[int], before: str, long_lines: int
) -> None:
    # each long line is a finding with its line and offset; the calls after them are read,
    # wherever the chunks end
    data = (
        before
        + "".join(_call("search", "x" * 1100) for _ in range(long_lines))
        + _call("search", "a")
        + _call("delete_all", "b")
    ).encode()
    with value_limit(1000):
        calls, findings, error, _ = fed(data, cuts=cuts)
    assert error is None
    assert [c.tool for c in calls] == ["search", "delete_all"]
    first = before.count("\n") + 1
    assert [(f.kind, f.location and (f.location.line, f.location.offset)) for f in findings] == [
        ("too_large", (first + i, len(before) + 1138 * i)) for i in range(long_lines)
    ]
