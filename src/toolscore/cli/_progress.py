"""Progress bars on stderr (rich), shown only when stderr is a terminal: the bytes of one
large trace being read (``eval``), and the traces of a dataset being evaluated."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Progress, ProgressColumn

    from ..calls import ToolCall
    from ..columns import Columns
    from ..reports.json import JsonReport

__all__ = ["PROGRESS_MIN_BYTES", "PROGRESS_REFRESH", "dataset_progress", "trace_progress"]

PROGRESS_MIN_BYTES = 20 * 1024 * 1024
"""Trace size from which a progress bar is shown (when stderr is a terminal)."""
PROGRESS_REFRESH = 10
"""Progress bar redraws per second at most."""


def _bar(*columns: ProgressColumn | str, auto_refresh: bool = True) -> Progress:
    # rich.progress loads only when a bar is shown (a terminal, a large input): start-up
    from rich.console import Console
    from rich.progress import Progress

    return Progress(
        *columns, console=Console(stderr=True), transient=True, auto_refresh=auto_refresh
    )


def _calls_column() -> ProgressColumn:
    # rich.progress loads only when a bar is shown (a terminal, a large input): start-up
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class CallsColumn(ProgressColumn):
        """Calls read so far and calls per second."""

        def render(self, task: Task) -> Text:
            calls = int(task.fields.get("calls", 0))
            elapsed = task.elapsed or 0.0
            rate = calls / elapsed if elapsed > 0 else 0.0
            return Text(f"{calls:,} calls ({rate:,.0f}/s)", style="cyan")

    return CallsColumn()


def wants_progress(trace: str) -> bool:
    """Whether reading ``trace`` shows a bar: a file over :data:`PROGRESS_MIN_BYTES`, read
    with stderr on a terminal."""
    if trace == "-" or not sys.stderr.isatty():
        return False
    try:
        return os.path.getsize(trace) > PROGRESS_MIN_BYTES
    except OSError:
        return False


@contextlib.contextmanager
def trace_progress(
    trace: str, on_calls: JsonReport, check: Callable[[int], None] | None
) -> Iterator[tuple[Any, Callable[[int], None]]]:
    """A bar over the bytes of ``trace`` while the block reads it: yields the call spool
    (``on_calls``, counting the calls for the bar on the way) and the ``on_bytes`` callback
    (``check`` first, when given)."""
    # rich.progress loads only when a bar is shown (a terminal, a large input): start-up
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn

    # No refresh thread: the bar is redrawn from the reads themselves, so that the process
    # has no other thread when it forks the processes that read parts of a large trace.
    progress = _bar(
        TextColumn("Reading"),
        BarColumn(),
        DownloadColumn(),
        _calls_column(),
        TimeRemainingColumn(),
        auto_refresh=False,
    )
    task = progress.add_task("trace", total=os.path.getsize(trace), calls=0)
    shown = [0.0]

    def redraw() -> None:
        now = time.monotonic()
        if now - shown[0] >= 1 / PROGRESS_REFRESH:
            shown[0] = now
            progress.refresh()

    def advance(n: int) -> None:
        if check is not None:
            check(n)
        progress.advance(task, n)
        redraw()

    class Counting:
        """The spool, counting the calls for the progress bar on the way."""

        counted = 0

        def _count(self, n: int) -> None:
            self.counted += n
            progress.update(task, calls=self.counted)

        def __call__(self, calls: list[ToolCall]) -> None:
            on_calls(calls)
            self._count(len(calls))

        def take_columns(self, columns: Columns) -> None:
            on_calls.take_columns(columns)
            self._count(columns.n)

        def adopt(self, path: str, count: int) -> None:
            on_calls.adopt(path, count)
            self._count(count)

        @property
        def directory(self) -> str | None:
            return on_calls.directory

    with progress:
        yield Counting(), advance


@contextlib.contextmanager
def dataset_progress() -> Iterator[Callable[[int, int | None, int, int], None] | None]:
    """A bar of the traces done and traces/s while the block evaluates a dataset: yields its
    ``on_progress`` callback (``None`` when stderr is not a terminal)."""
    if not sys.stderr.isatty():
        yield None
        return
    # rich.progress loads only when a bar is shown (a terminal): start-up
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn

    progress = _bar(
        TextColumn("Evaluating"),
        BarColumn(),
        TextColumn("{task.fields[traces]} traces ({task.fields[rate]:,.0f}/s)"),
        TimeElapsedColumn(),
    )
    task = progress.add_task("dataset", total=None, traces="0", rate=0.0)
    started = time.monotonic()

    def update(records: int, expected: int | None, done_bytes: int, total_bytes: int) -> None:
        elapsed = time.monotonic() - started
        traces = f"{records:,}" if expected is None else f"{records:,} of {expected:,}"
        progress.update(
            task,
            completed=done_bytes,
            total=total_bytes,
            traces=traces,
            rate=records / elapsed if elapsed > 0 else 0.0,
        )

    with progress:
        yield update
