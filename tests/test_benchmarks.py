"""Smoke tests for the benchmark trace generator (the benchmark itself never runs here)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _bench import load_benchmark

REPO = Path(__file__).resolve().parents[1]
SIZE = 100_000


gen = load_benchmark("generate")

# Toolscore 1.10's credential formats: the generated traces must contain none of them.
_CREDENTIALS = [
    re.compile(p)
    for p in (
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
        r"\bsk-ant-[A-Za-z0-9_-]{20,}",
        r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}",
        r"\bsk-[A-Za-z0-9]{32,}",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b",
        r"\bgithub_pat_[A-Za-z0-9_]{60,}",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"\bAIza[0-9A-Za-z_-]{35}\b",
        r"\bxox[abprs]-[0-9A-Za-z-]{10,}",
        r"\b(?:sk|rk)_live_[0-9A-Za-z]{24,}",
    )
]


def _read(path: Path, layout: str) -> list[dict[str, Any]]:
    if layout == "json":
        data = json.loads(path.read_bytes())
        assert isinstance(data, list)
        return data
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""  # ends with a newline
    return [json.loads(line) for line in lines[:-1]]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int]]:
    out = tmp_path_factory.mktemp("bench")
    return {
        layout: (out / f"t.{layout}", gen.generate(out / f"t.{layout}", SIZE, layout, 7))
        for layout in gen.LAYOUTS
    }


@pytest.mark.parametrize("layout", ["json", "jsonl"])
def test_trace_parses_with_realistic_calls(
    traces: dict[str, tuple[Path, int]], layout: str
) -> None:
    path, count = traces[layout]
    size = path.stat().st_size
    assert SIZE <= size < SIZE + 64_000
    calls = _read(path, layout)
    assert len(calls) == count > 50
    tools = set(gen.TOOLS) | {"shutdown_server"}
    for call in calls:
        assert call["tool"] in tools
        assert isinstance(call["args"], dict) and call["args"]
        assert isinstance(call["duration"], float) and call["duration"] > 0
        if call.get("is_error"):
            assert call["is_error"] is True
            assert isinstance(call["error"], str) and call["error"]
            assert "result" not in call
        else:
            assert "result" in call and "error" not in call
    assert {c["tool"] for c in calls} >= {"search", "read_file", "fetch_url"}
    assert any(c.get("is_error") for c in calls)
    for call in calls:
        for text in _strings(call["args"]):
            assert not any(p.search(text) for p in _CREDENTIALS), text


def test_both_layouts_hold_the_same_calls(traces: dict[str, tuple[Path, int]]) -> None:
    json_calls = _read(traces["json"][0], "json")
    jsonl_calls = _read(traces["jsonl"][0], "jsonl")
    shorter = min(len(json_calls), len(jsonl_calls))
    assert json_calls[:shorter] == jsonl_calls[:shorter]


@pytest.mark.parametrize("layout", ["json", "jsonl"])
def test_deterministic_for_a_seed(
    traces: dict[str, tuple[Path, int]], layout: str, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    other = tmp_path / "other"
    gen.generate(again, SIZE, layout, 7)
    gen.generate(other, SIZE, layout, 8)
    assert again.read_bytes() == traces[layout][0].read_bytes()
    assert other.read_bytes() != again.read_bytes()


def test_cli_writes_the_same_file(traces: dict[str, tuple[Path, int]], tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    assert gen.main(["--size", "100KB", "--layout", "jsonl", "--seed", "7", "-o", str(out)]) == 0
    assert out.read_bytes() == traces["jsonl"][0].read_bytes()


@pytest.mark.parametrize(
    ("text", "size"),
    [("2000", 2000), ("100KB", 100_000), ("1.5MB", 1_500_000), ("1GB", 10**9), ("2MiB", 2 << 20)],
)
def test_parse_size(text: str, size: int) -> None:
    assert gen.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MB", "10 parsecs", "-1MB"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        gen.parse_size(text)


def test_unknown_layout(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown layout"):
        gen.generate(tmp_path / "x", 10, "csv", 1)


def test_rule_and_gold_files_are_valid() -> None:
    rules = json.loads((REPO / "benchmarks" / "forbidden10.json").read_text())
    gold = json.loads((REPO / "benchmarks" / "gold.json").read_text())
    assert len(rules) == 10 and len(gold) == 7
    assert all(r["tool"] in set(gen.TOOLS) | {"shutdown_server"} for r in rules)
    assert all(g["tool"] in gen.TOOLS for g in gold)


def test_the_all_rules_file_has_every_hard_rule_kind() -> None:
    from toolscore.hardrules import load_rules

    rules = load_rules(REPO / "benchmarks" / "rules_all.json")
    assert len(rules.forbidden) == 10 and rules.allow is not None
    assert rules.order and rules.counts and rules.data_flow and rules.match
    assert rules.schemas is not None and len(rules.schemas) == len(gen.TOOLS)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_the_builds_comparison_runs_each_build_in_turn(tmp_path: Path) -> None:
    """benchmarks/builds.py, run for real: one build given twice, one round, in one process
    (``--inline``): a table row per run and each build's median."""
    gold = tmp_path / "gold.jsonl"
    traces = tmp_path / "traces.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"trace_id": f"t{i}", "expected": [{"tool": "a"}]}) + "\n" for i in range(3)
        )
    )
    traces.write_text(
        "".join(json.dumps({"trace_id": f"t{i}", "tool": "a", "args": {}}) + "\n" for i in range(3))
    )
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "builds.py"), str(gold), str(traces),
         sys.executable, sys.executable, "--rounds", "1", "--inline"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| 1 |")]
    assert len(rows) == 2 and all("| 3 |" in row for row in rows)  # 3 traces each
    assert out.count("median") == 2 and "(1.00x the first)" in out
