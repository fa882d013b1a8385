"""Run the real ``toolscore`` command line in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "guardrails"


def cli_env() -> dict[str, str]:
    """The environment for a toolscore subprocess: this source tree first, no colors forced."""
    env = dict(os.environ)
    src = str(REPO / "src")
    env["PYTHONPATH"] = src + os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else src
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    env["PYTHONIOENCODING"] = "utf-8"
    env["COLUMNS"] = "80"
    return env


def run_cli(
    *args: str, cwd: Path | str | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m toolscore ARGS`` with stdout and stderr captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "toolscore", *args],
        cwd=cwd,
        input=stdin,
        env=cli_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def assert_stamped(records: list[dict[str, Any]], since: datetime) -> None:
    """Each ``--findings`` record carries ``time``: when it was written, ISO 8601 in UTC
    (``...Z``), to the millisecond, not before ``since``."""
    now = datetime.now(timezone.utc)
    assert records
    for record in records:
        text = record["time"]
        stamp = datetime.fromisoformat(text)
        assert text.endswith("Z") and stamp.utcoffset() == timedelta(0), text
        assert since - timedelta(milliseconds=1) <= stamp <= now, (text, since, now)
