from __future__ import annotations

from pathlib import Path

import pytest

from _datasets import generate_dataset
from toolscore.limits import ensure_recursion_limit

# Reading a trace raises Python's recursion limit (values 1,000 levels deep are walked
# recursively); raise it once up front, so that hypothesis does not see it change mid-test.
ensure_recursion_limit()

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def corpus() -> Path:
    """The shared corpus of real agent tool calls; skips where it is absent."""
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not present")
    return CORPUS


@pytest.fixture(scope="module")
def generated60(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small generated dataset: ``(keyed gold, traces)``, 60 traces (seed 5)."""
    base = tmp_path_factory.mktemp("gen")
    traces, gold = base / "traces.jsonl", base / "gold.jsonl"
    generate_dataset(traces, gold, 60, seed=5)
    return gold, traces
