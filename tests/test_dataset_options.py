"""Options of the run carried to every dataset worker: ``--pii`` and ``--max-value-bytes``
reach the process pool (the real command line) as they reach the inline engine (the Dask
cluster's side is in ``test_dataset_cluster.py``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from _cli import run_cli

EMAIL = "jane.doe@example.com"


def write_dataset(directory: Path, traces: int) -> Path:
    """``traces`` single-trace files (more than one part's worth of files), each with a long
    value every third trace and an email address every other one; returns the gold."""
    directory.mkdir()
    for i in range(traces):
        body = "y" * (3000 if i % 3 == 0 else 10)
        calls = [
            {"tool": "search", "args": {"q": "flights"}},
            {
                "tool": "send",
                "args": {"to": EMAIL if i % 2 else "ops", "body": body},
            },
        ]
        (directory / f"t{i:03d}.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    gold = directory.parent / "gold.json"
    gold.write_text(json.dumps([{"tool": "search", "args": {"q": "flights"}}]))
    return gold


def expected_counts(traces: int) -> tuple[int, int]:
    """(traces over the value limit of 1,000 bytes, traces with an email read: a line over
    the limit is skipped, its email unseen)."""
    too_large = sum(1 for i in range(traces) if i % 3 == 0)
    return too_large, sum(1 for i in range(traces) if i % 2 and i % 3)


def test_pool_workers_get_pii_and_the_value_limit(tmp_path: Path) -> None:
    count = 70  # 64 single-trace files a part at most: two parts, so the pool runs them
    gold = write_dataset(tmp_path / "traces", count)
    per = tmp_path / "per.jsonl"
    proc = run_cli(
        "eval", str(gold), str(tmp_path / "traces"), "-o", str(tmp_path / "r.json"),
        "--per-trace", str(per), "--workers", "2", "--pii", "--max-value-bytes", "1000",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr  # the long lines are input problems
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["engine"] == "local"
    kinds: Counter[str] = Counter()
    for line in per.read_text().splitlines():
        kinds.update(json.loads(line)["findings"])
    too_large, emails = expected_counts(count)
    assert kinds["input/too_large"] == too_large
    assert kinds["pii/email"] == emails
    assert EMAIL not in proc.stdout + proc.stderr
    # without the options: no personal-data finding, nothing over the default limit
    plain = run_cli(
        "eval", str(gold), str(tmp_path / "traces"), "-o", str(tmp_path / "r2.json"),
        "--per-trace", str(per), "--workers", "2",
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    kinds.clear()
    for line in per.read_text().splitlines():
        kinds.update(json.loads(line)["findings"])
    assert kinds["input/too_large"] == 0 and kinds["pii/email"] == 0
