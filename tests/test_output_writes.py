"""Every output goes through one writer (:class:`toolscore.outputs.AtomicOutput`): an exclusive
temporary file of an unpredictable name beside the report, renamed onto it at the end; a link
named as the output stays a link; an old file survives a run that fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _cli import run_cli
from toolscore.outputs import AtomicOutput, write_report

CALL = b'{"tool": "search", "args": {"q": "x"}}\n'


def _dataset(tmp_path: Path, traces: int = 3) -> tuple[Path, Path]:
    folder = tmp_path / "traces"
    folder.mkdir()
    for i in range(traces):
        (folder / f"t{i}.jsonl").write_bytes(CALL * (i + 1))
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "search", "args": {"q": "x"}}]', encoding="utf-8")
    return gold, folder


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and "part" in p.name]


def test_a_report_commits_on_success_and_an_old_one_survives_a_failure(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_bytes(b"old")
    with pytest.raises(RuntimeError), AtomicOutput(report) as output:
        output.file.write(b"half")
        raise RuntimeError("the run failed")
    assert report.read_bytes() == b"old"
    write_report(report, iter([b"new ", b"report"]))
    assert report.read_bytes() == b"new report"
    assert _leftovers(tmp_path) == []


def test_the_temporary_name_is_not_predictable(tmp_path: Path) -> None:
    names = set()
    for _ in range(3):
        output = AtomicOutput(tmp_path / "r.json")
        names.add(os.path.basename(output.temp))
        output.discard()
    assert len(names) == 3 and all(name.startswith(".toolscore-") for name in names)


def test_a_planted_link_at_the_old_fixed_temporary_name_redirects_nothing(
    tmp_path: Path,
) -> None:
    gold, traces = _dataset(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    (out / ".r.json.part").symlink_to(victim)  # the dataset report's name before
    done = run_cli("eval", str(gold), str(traces), "-o", str(out / "r.json"))
    assert done.returncode == 0, done.stderr
    assert victim.read_text(encoding="utf-8") == "precious"
    report = out / "r.json"
    assert not report.is_symlink() and json.loads(report.read_bytes())["summary"]["traces"] == 3


@pytest.mark.parametrize("option", ["-o", "--per-trace", "--markdown", "--html"])
def test_a_dataset_output_onto_a_link_writes_its_target_and_keeps_the_link(
    tmp_path: Path, option: str
) -> None:
    gold, traces = _dataset(tmp_path)
    target = tmp_path / "kept" / "report.out"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.out"
    link.symlink_to(target)
    extra = [] if option == "-o" else ["-o", str(tmp_path / "r.json")]
    done = run_cli("eval", str(gold), str(traces), option, str(link), *extra)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") != "old"
    assert _leftovers(target.parent) == [] and _leftovers(tmp_path) == []


def test_an_old_per_trace_file_survives_a_run_that_fails(tmp_path: Path) -> None:
    gold, traces = _dataset(tmp_path)
    per_trace = tmp_path / "per-trace.jsonl"
    old = b'{"trace_id": "kept"}\n' * 1000
    per_trace.write_bytes(old)
    # the gold is read after the per-trace file is opened: a broken one ends the run
    gold.write_text("[{", encoding="utf-8")
    done = run_cli("eval", str(gold), str(traces), "--per-trace", str(per_trace))
    assert done.returncode == 2, done.stderr
    # said once, before any trace is read (not as every part's "not evaluated")
    assert "not valid JSON" in done.stderr and "not evaluated" not in done.stderr
    assert per_trace.read_bytes() == old
    assert _leftovers(tmp_path) == []


def test_a_per_trace_file_is_renamed_into_place_only_at_the_end(tmp_path: Path) -> None:
    gold, traces = _dataset(tmp_path)
    per_trace = tmp_path / "per-trace.jsonl"
    done = run_cli("eval", str(gold), str(traces), "--per-trace", str(per_trace))
    assert done.returncode == 0, done.stderr
    lines = per_trace.read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["trace_id"] for line in lines) == ["t0", "t1", "t2"]
    assert _leftovers(tmp_path) == []
