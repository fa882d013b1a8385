from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path

import pytest

from _datasets import dataset_in
from toolscore.limits import ensure_recursion_limit

# Reading a trace raises Python's recursion limit (values 1,000 levels deep are walked
# recursively); raise it once up front, so that hypothesis does not see it change mid-test.
ensure_recursion_limit()

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"


def pytest_configure(config: pytest.Config) -> None:
    """Once, before the workers start: bytecode is written for this run. The package's is
    compiled now (an editable install has none), so that the hundreds of ``python -m
    toolscore`` processes the tests start load it instead of compiling every module (0.7 s a
    process instead of 0.2 s); and ``PYTHONDONTWRITEBYTECODE`` is lifted for the workers
    and every process they start, so that pytest's cache of the modules it rewrites is
    written once and read by the other pytest processes (1.1 s to start one, else 0.45 s)."""
    if not hasattr(config, "workerinput"):
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        sys.dont_write_bytecode = False
        compileall.compile_dir(REPO / "src" / "toolscore", quiet=1)


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
    return dataset_in(tmp_path_factory.mktemp("gen"), 60, seed=5)
