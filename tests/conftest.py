from __future__ import annotations

from pathlib import Path

import pytest

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
