"""A file system that fills up: a 64 KiB tmpfs, for tests of a full disk (root only)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tiny_tmpfs(path: Path) -> Iterator[Path]:
    """Mount a 64 KiB tmpfs on ``path`` (made here) for the ``with`` block; skip the test
    where that is not possible (not root, no ``mount``, no tmpfs)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and a tmpfs mount")
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)],
        capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip("needs root and a tmpfs mount")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)
