"""Ctrl-C and SIGTERM for the command line: the first one stops reading and lets the run
finish on what was read (summary, reports, exit 130 or 143); a second one stops at once.

::

    with StopOnSignal() as stop:
        result = evaluate_trace(..., on_bytes=stop.check_bytes)   # raises Interrupted in a read
    code = stop.exit_status(code)

The first signal only sets a flag. Whoever reads the trace calls :meth:`StopOnSignal.check`
between chunks (``on_bytes``), which raises :class:`Interrupted`, an ``OSError``: the reader
ends the trace there as at a read error, so the checks finish on every call read and the result
says the trace was incomplete. When the flag is not taken up within ``escalate_after`` seconds
(the main thread waits in a read of a pipe that brings nothing), the main thread is signalled
again and its handler raises :class:`Interrupted` in that read. ``watch`` passes its own
``on_first`` (stop the live run) instead.

The handlers are Python-level (:func:`signal.signal`), so they run between two bytecodes of
whatever the main thread is doing, a check's loop included: the second signal raises
:class:`KeyboardInterrupt` (SIGINT) or :class:`Terminated` (SIGTERM) there, and ``finally``
blocks remove temporary files and stop worker processes. Should the main thread be stuck in C
code that never returns to the interpreter, a watchdog thread ends the process :data:`GRACE`
seconds after the second signal with the signal's status.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType

from ._exitcodes import EXIT_ERROR, EXIT_SIGINT, EXIT_SIGTERM

__all__ = [
    "GRACE",
    "Interrupted",
    "StopOnSignal",
    "Terminated",
    "active",
    "run_until_signal",
    "status_for",
    "unescalated",
]

GRACE = 3.0
"""Seconds after a second signal before the process is ended whatever it is doing."""

_NAMES: dict[int, str] = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


class Terminated(BaseException):
    """Raised in the main thread by a second SIGTERM (as :class:`KeyboardInterrupt` for
    SIGINT): not an ``Exception``, so that nothing on the way swallows it."""


class Interrupted(OSError):
    """Raised by :meth:`StopOnSignal.check` once a signal asked to stop: the trace's reader
    treats it as the end of what could be read."""


def status_for(signum: int) -> int:
    """130 for SIGINT, 143 for SIGTERM."""
    return EXIT_SIGTERM if signum == signal.SIGTERM else EXIT_SIGINT


class StopOnSignal:
    """SIGINT and SIGTERM handlers for one run (see the module's docstring).

    Args:
        on_first: called (in the main thread, from the handler) at the first signal, besides
            setting :attr:`signum`.
    """

    def __init__(
        self,
        on_first: Callable[[int], None] | None = None,
        *,
        escalate_after: float | None = None,
    ) -> None:
        self.on_first = on_first
        self.escalate_after = escalate_after
        self.signum: int | None = None
        """The first signal received, if any."""
        self._previous: dict[int, object] = {}
        self._installed = False
        self._consumed = False
        self._escalating = False
        self._held = 0
        """Blocks running in which the stop is not escalated (:func:`unescalated`)."""

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)
            self._installed = True
            _ACTIVE.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._installed:
            for signum, previous in self._previous.items():
                signal.signal(signum, previous)  # type: ignore[arg-type]
            self._installed = False
            _ACTIVE.remove(self)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._escalating:  # sent by _escalate: a read that blocks (a pipe, a FIFO) ends
            self._escalating = False
            self._consumed = True
            raise Interrupted(self.describe())
        if self.signum is None:
            self.signum = signum
            if self.on_first is not None:
                self.on_first(signum)
            self._arm()
            return
        _watchdog(status_for(self.signum))
        if signum == signal.SIGTERM:
            raise Terminated
        raise KeyboardInterrupt

    @property
    def requested(self) -> bool:
        """Whether a signal asked to stop."""
        return self.signum is not None

    def describe(self) -> str:
        """``"interrupted by SIGINT (Ctrl-C)"`` (or SIGTERM)."""
        return f"interrupted by {_NAMES.get(self.signum or signal.SIGINT, 'a signal')}"

    def check(self) -> None:
        """Raise :class:`Interrupted` once a signal asked to stop."""
        if self.signum is not None:
            self._consumed = True
            raise Interrupted(self.describe())

    def check_bytes(self, n: int) -> None:
        """:meth:`check`, shaped as an ``on_bytes`` callback."""
        self.check()

    def _arm(self) -> None:
        """Escalate the stop after ``escalate_after`` seconds unless it is taken up."""
        if self.escalate_after is not None:
            timer = threading.Timer(self.escalate_after, self._escalate)
            timer.daemon = True
            timer.start()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """:func:`unescalated` for this run's handlers."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self.signum is not None:
                self._arm()

    def _escalate(self) -> None:
        """In a timer thread: the stop was not taken up (the main thread waits in a read that
        blocks): signal the main thread again, whose handler then raises there."""
        if self._consumed or not self._installed or self.signum is None or self._held:
            return
        self._escalating = True
        main = threading.main_thread().ident
        if main is not None:
            signal.pthread_kill(main, self.signum)

    def exit_status(self, code: int) -> int:
        """``code``, or 130/143 when a signal stopped the run."""
        return code if self.signum is None else status_for(self.signum)


def run_until_signal(run: Callable[[], int], on_abort: Callable[[], None]) -> int:
    """``run()``'s exit status under one :class:`StopOnSignal`: a first signal lets it end
    with what it read (130/143); a second stops it at once (``on_abort()``, then 130/143)."""
    stop = StopOnSignal(escalate_after=1.0)
    try:
        with stop:
            return stop.exit_status(run())
    except (KeyboardInterrupt, Terminated):  # a second signal: stopped at once, cleaned up
        on_abort()
        return stop.exit_status(EXIT_ERROR)


@contextlib.contextmanager
def unescalated() -> Iterator[None]:
    """Within the block, a first signal is not escalated into it (it is let finish: one
    that ends by itself, such as a local cluster starting, where an exception raised
    midway would end the run without its report); the run then sees the stop, and a
    second signal still ends it at once. Past the block, a stop not yet taken up is
    escalated again after the usual delay."""
    stop = active()
    if stop is None:
        yield
        return
    with stop.held():
        yield


_ACTIVE: list[StopOnSignal] = []


def active() -> StopOnSignal | None:
    """The handlers installed now (the innermost), if any."""
    return _ACTIVE[-1] if _ACTIVE else None


def _watchdog(status: int) -> None:
    """End the process ``GRACE`` seconds from now unless it has ended by then."""

    def end() -> None:
        try:
            sys.stderr.write("toolscore: error: interrupted (did not stop in time)\n")
            sys.stderr.flush()
        finally:
            os._exit(status)

    timer = threading.Timer(GRACE, end)
    timer.daemon = True
    timer.start()
