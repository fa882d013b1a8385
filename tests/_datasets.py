"""The dataset benchmark's generator (``benchmarks/datasets.py``), for tests that need a
dataset of many traces with trials."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _benchmark() -> Any:
    name = "benchmarks_datasets"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / "datasets.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def generate_dataset(traces: Path, gold: Path, count: int, *, seed: int) -> None:
    """Write ``count`` traces (JSON Lines keyed by ``trace_id``) and their keyed gold."""
    _benchmark().generate(traces, gold, count, seed=seed)


def shaped_dataset(traces: Path, shape: str) -> Path:
    """The benchmark's ``traces`` file as ``shape`` (``gzip``, ``interleaved``)."""
    path: Path = _benchmark().shaped(traces, shape)
    return path
