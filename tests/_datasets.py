"""The dataset benchmark's generator (``benchmarks/datasets.py``), for tests that need a
dataset of many traces with trials."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path
from typing import Any

import zstandard

from _bench import load_benchmark

COMPRESS = {".gz": gzip.compress, ".zst": zstandard.ZstdCompressor().compress}
"""Compress bytes as a file ending so is compressed."""


def can_unshare_mount() -> bool:
    """Whether this process may start one in a mount namespace of its own (root on Linux)."""
    try:
        done = subprocess.run(
            ["unshare", "--mount", "true"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _benchmark() -> Any:
    return load_benchmark("datasets")


def generate_dataset(traces: Path, gold: Path, count: int, *, seed: int, **shape: int) -> None:
    """Write ``count`` traces (JSON Lines keyed by ``trace_id``) and their keyed gold
    (``shape``: the generator's ``trials``, ``min_calls``, ``max_calls``)."""
    _benchmark().generate(traces, gold, count, seed=seed, **shape)


def dataset_in(base: Path, count: int, *, seed: int, **shape: int) -> tuple[Path, Path]:
    """``(keyed gold, traces)``: :func:`generate_dataset`'s files, written in ``base`` as
    ``gold.jsonl`` and ``traces.jsonl``."""
    traces, gold = base / "traces.jsonl", base / "gold.jsonl"
    generate_dataset(traces, gold, count, seed=seed, **shape)
    return gold, traces


def shaped_dataset(traces: Path, shape: str) -> Path:
    """The benchmark's ``traces`` file as ``shape`` (``gzip``, ``interleaved``)."""
    path: Path = _benchmark().shaped(traces, shape)
    return path
