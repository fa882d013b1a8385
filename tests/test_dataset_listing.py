"""What a dataset run lists and reads: symbolic links out of the trace or gold directory are
skipped and named (nothing of their target reaches a report) unless ``--follow-symlinks``; a
``**`` glob over a loop of links ends; a file name that is not UTF-8 is read, its bytes
written out in every output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import cli_env, run_cli
from toolscore.dataset.inputs import list_inputs

CALL = b'{"tool": "search", "args": {"q": "x"}}\n'
GOLD = '[{"tool": "search", "args": {"q": "x"}}]'
SECRET = b"TARGET-BYTES-NOBODY-MAY-SEE-0123456789\n"


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    traces = tmp_path / "traces"
    (traces / "sub").mkdir(parents=True)
    (traces / "a.jsonl").write_bytes(CALL)
    (traces / "sub" / "c.jsonl").write_bytes(CALL * 2)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(SECRET)
    (traces / "b.jsonl").symlink_to(outside / "secret.jsonl")
    (traces / "linked").symlink_to(outside)
    gold = tmp_path / "gold.json"
    gold.write_text(GOLD, encoding="utf-8")
    return gold, traces


def test_links_out_of_the_trace_directory_are_skipped_and_named(tmp_path: Path) -> None:
    gold, traces = _tree(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    done = run_cli(
        "eval", str(gold), str(traces), "-o", str(out / "r.json"),
        "--markdown", str(out / "r.md"), "--html", str(out / "r.html"),
        "--per-trace", str(out / "p.jsonl"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{traces / 'b.jsonl'}: a symbolic link out of the directory read: skipped" in (
        done.stderr
    )
    assert f"{traces / 'linked'}: a symbolic link out of the directory read" in done.stderr
    report = json.loads((out / "r.json").read_bytes())
    assert report["summary"]["traces"] == 2
    assert any("b.jsonl" in problem for problem in report["problems"])
    for text in (done.stdout, done.stderr, *(p.read_bytes().decode() for p in out.iterdir())):
        assert "TARGET-BYTES" not in text


def test_follow_symlinks_reads_them(tmp_path: Path) -> None:
    gold, traces = _tree(tmp_path)
    done = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"), "--follow-symlinks"
    )
    assert done.returncode == 2  # the linked file is not a trace: an input error, named
    report = json.loads((tmp_path / "r.json").read_bytes())
    assert report["summary"]["traces"] == 4  # a, b (the link), linked/secret, sub/c


def test_a_link_out_of_a_gold_directory_is_skipped(tmp_path: Path) -> None:
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "a.json").write_text(GOLD, encoding="utf-8")
    (tmp_path / "elsewhere.json").write_text(GOLD, encoding="utf-8")
    (gold / "b.json").symlink_to(tmp_path / "elsewhere.json")
    skipped: list[str] = []
    listed = list_inputs(str(gold), skipped=skipped)
    assert [item.name for item in listed] == ["a"]
    assert skipped == [
        f"{gold / 'b.json'}: a symbolic link out of the directory read: skipped "
        "(--follow-symlinks reads it)"
    ]


def test_a_link_inside_the_directory_is_read(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "a.jsonl").write_bytes(CALL)
    (traces / "b.jsonl").symlink_to(traces / "a.jsonl")
    skipped: list[str] = []
    assert [i.name for i in list_inputs(str(traces), skipped=skipped)] == ["a", "b"]
    assert skipped == []


@pytest.mark.parametrize("follow", [False, True])
def test_a_recursive_glob_over_a_loop_of_links_ends(tmp_path: Path, follow: bool) -> None:
    gold, traces = _tree(tmp_path)
    for name in ("loop1", "loop2", "loop3"):  # glob.glob walks 3^40 paths
        (traces / "sub" / name).symlink_to(traces)
    args = [str(gold), str(traces / "**" / "*.jsonl"), "-o", str(tmp_path / "r.json")]
    done = subprocess.run(
        [sys.executable, "-m", "toolscore", "eval", *args, *(["--follow-symlinks"] * follow)],
        env=cli_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    report = json.loads((tmp_path / "r.json").read_bytes())
    assert report["summary"]["traces"] == (4 if follow else 2), done.stderr


def test_the_glob_matches_as_glob_does(tmp_path: Path) -> None:
    for name in ("a.jsonl", "x/b.jsonl", "x/y/c.jsonl", ".h/d.jsonl", "x/.e.jsonl", "f.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(CALL)
    import glob

    for pattern in ("**/*.jsonl", "*/*.jsonl", "x/**", "*.jsonl", "x/*/c.*", "**/.e.jsonl"):
        full = str(tmp_path / pattern)
        expected = sorted(p for p in glob.glob(full, recursive=True) if os.path.isfile(p))
        assert [item.url for item in list_inputs(full)] == expected, pattern


def test_a_file_name_that_is_not_utf8_is_read_and_written_out(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in (b"a.jsonl", b"b\xff\xfe.jsonl", b"c.jsonl"):
        with open(os.path.join(os.fsencode(traces), name), "wb") as f:
            f.write(CALL)
    with open(os.path.join(os.fsencode(traces), b"d\xff.jsonl"), "wb") as f:
        f.write(b"not json\n")
    gold = tmp_path / "gold.json"
    gold.write_text(GOLD, encoding="utf-8")
    per_trace = tmp_path / "p.jsonl"
    done = run_cli(
        "eval", str(gold), str(traces), "-o", str(tmp_path / "r.json"),
        "--per-trace", str(per_trace), "--markdown", str(tmp_path / "r.md"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr  # d\xff is not a trace: one error record
    records = [json.loads(line) for line in per_trace.read_bytes().splitlines()]
    assert [r["trace_id"] for r in records] == ["a", "b\\xff\\xfe", "c", "d\\xff"]
    assert records[3]["status"] == "error" and "d\\xff.jsonl" in records[3]["source"]
    assert "(trace d\\xff)" in (tmp_path / "r.md").read_text(encoding="utf-8")
