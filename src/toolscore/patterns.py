"""User patterns (``$regex`` rules, :class:`~toolscore.matchers.Regex`) with Python ``re``'s
meaning, run in linear time on RE2.

A pattern is first compiled by Python's ``re`` (so its syntax and its errors are exactly
Python's), then read once by :func:`translate`, a small reader of Python's documented regular
expression syntax, which writes the same pattern for RE2:

- ``\\d``, ``\\w``, ``\\s`` and their negations become the exact sets of characters Python's
  ``re`` gives them (read from ``re`` itself, once per process), not RE2's ASCII ones;
- ``^``, ``$``, ``.`` and case are written out per flag scope (``re.MULTILINE``, ``re.DOTALL``,
  ``re.IGNORECASE``, ``re.ASCII``, ``re.VERBOSE`` and their inline forms);
- ``\\Z`` becomes ``\\z``, ``{,n}`` becomes ``{0,n}``, character escapes (``\\x``, ``\\u``,
  ``\\U``, ``\\N{...}``, octal) become code points.

A pattern that needs what RE2 cannot run in linear time (backreferences, lookahead and
lookbehind, conditional groups, atomic groups, possessive quantifiers, repetition counts over
1000) runs on Python's ``re`` under a time bound instead, or is refused
(:class:`PatternError`, with the position in the pattern) when the caller asks so.

Three things RE2 cannot say exactly as Python does; where a text makes them matter, that one
match also runs on Python's ``re`` under the bound: ``\\b``/``\\B`` and ``re.IGNORECASE``
on a text that is not ASCII (RE2's word boundary is ASCII, its case folding Unicode's rather
than Python's; a non-ASCII letter under ``re.IGNORECASE`` sends every text there), and a
``$`` without ``re.MULTILINE`` on a text ending with a newline (Python's ``$`` also matches
before that newline).

The bound: one match on Python's ``re`` may take :data:`TIME_LIMIT` seconds, and one
pattern's such matches :data:`TIME_BUDGET` seconds in all (plus :data:`RUN_ALLOWANCE` a
match); past either, :class:`PatternTimeout`. It is a ``SIGALRM`` timer, so it holds in the
main thread on Python 3.11+ (whose ``re`` stops for signals); elsewhere those matches run
unbounded.

Where things are: the errors, the time bound and :class:`UserPattern` here; the reader of
Python's syntax that writes a pattern for RE2 (:func:`translate`) in ``_pattern_reader``;
the character sets of Python's ``re`` (:func:`class_ranges`) in ``_pattern_sets``.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable

import re2

from ._pattern_reader import Translation, translate
from ._pattern_sets import class_ranges

__all__ = [
    "TIME_LIMIT",
    "PatternError",
    "PatternTimeout",
    "Translation",
    "UserPattern",
    "class_ranges",
    "translate",
]

TIME_LIMIT = 0.25
"""Seconds one match run by Python's ``re`` (see the module docstring) may take."""
TIME_BUDGET = 1.0
RUN_ALLOWANCE = 50e-6
"""Seconds one pattern's matches on Python's ``re`` may take in all: ``TIME_BUDGET`` plus
``RUN_ALLOWANCE`` for each such match (so ordinary matches never run out); past it, its
matches on Python's ``re`` time out at once."""


class PatternError(re.error, ValueError):
    """A pattern that is not valid Python syntax, or that needs what RE2 does not run.

    A :class:`re.error` (as Python's ``re`` raises for a bad pattern) and a ``ValueError``.
    Its message is ``problem``, then Python's ``at position N`` (with the line and column for
    a pattern of several lines).

    Args:
        problem: what is wrong, in a few words.
        pattern: the pattern.
        position: 0-based index in the pattern, when known.
        refused: True when the pattern is valid Python but needs backtracking (or exceeds
            RE2's limits); False when it is not valid at all.
    """

    def __init__(
        self, problem: str, pattern: str, position: int | None = None, *, refused: bool = False
    ) -> None:
        super().__init__(problem, pattern, position)
        self.problem = problem
        self.position = position
        self.refused = refused


class PatternTimeout(Exception):
    """A match run by Python's ``re`` took longer than :data:`TIME_LIMIT`."""


# -- matching --------------------------------------------------------------------------------

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 64 << 20
_OPTIONS.never_capture = True


def _re2(text: str) -> re2._Regexp:
    return re2.compile(text, _OPTIONS)


class _Alarm(Exception):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    if _armed:
        raise _Alarm


_armed = False


def _run_bounded(run: Callable[[str], object], text: str, limit: float) -> bool:
    """``run(text) is not None``, stopped after ``limit`` seconds where a timer can be set.

    A timer someone else had set (``ITIMER_REAL``) is put back afterwards with the time it
    had left, and so is their ``SIGALRM`` handler; one due first is left to fire."""
    global _armed
    if (
        limit <= 0
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
    ):
        return run(text) is not None
    earlier, interval = signal.getitimer(signal.ITIMER_REAL)
    if earlier and earlier <= limit:
        return run(text) is not None  # another timer is due first: run as it is
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    began = time.monotonic()
    try:
        _armed = True
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return run(text) is not None
        finally:
            _armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Alarm:
        raise PatternTimeout(f"the match took longer than {limit:g} s") from None
    finally:
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if earlier:
            left = max(earlier - (time.monotonic() - began), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, interval)


class UserPattern:
    """A user's pattern, compiled for RE2 with Python's meaning.

    Args:
        pattern: Python ``re`` syntax.
        flags: ``re`` flags.
        allow_backtracking: run a pattern that needs what RE2 does not run (see the module
            docstring) on Python's ``re`` under the time bound; False: refuse it.

    Raises:
        PatternError: not valid Python syntax, or (``allow_backtracking=False``) it needs
            what RE2 does not run; ``position`` is the index in the pattern.
    """

    def __init__(self, pattern: str, flags: int = 0, *, allow_backtracking: bool = True) -> None:
        try:
            self.python = re.compile(pattern, flags)
        except re.error as exc:
            raise PatternError(exc.msg, pattern, exc.pos) from exc
        except (ValueError, OverflowError) as exc:
            raise PatternError(str(exc), pattern) from exc
        self.pattern = pattern
        self.flags = flags
        done = translate(pattern, self.python.flags)
        self.translation = done
        self.backtracking = done.refused
        """What RE2 cannot run in this pattern (None: nothing): then every match runs on
        Python's ``re`` under the time bound."""
        self.re2: re2._Regexp | None = None
        self.joined: re2._Regexp | None = None
        if done.refused is not None:
            if not allow_backtracking:
                raise PatternError(done.refused, pattern, done.refused_at, refused=True)
        else:
            try:
                self.re2 = _re2(done.pattern)
                self.joined = None if done.joined is None else _re2(done.joined)
            except re2.error as exc:
                if not allow_backtracking:
                    raise PatternError(
                        f"RE2 cannot run it: {_decode(exc)}", pattern, refused=True
                    ) from exc
                self.backtracking = f"RE2 cannot run it: {_decode(exc)}"
        self._ascii_only = done.boundary or done.casefold
        self._nonboundary = done.nonboundary
        self._never = done.casefold_wide or self.re2 is None
        self._dollar = done.dollar
        self._spent = 0.0
        self._runs = 0

    def exact(self, text: str) -> bool:
        """Whether RE2 answers for ``text`` exactly as Python's ``re`` does."""
        if self._never:
            return False
        if self._ascii_only and not text.isascii():
            return False
        if self._nonboundary and not text:
            return False
        return not (self._dollar and text[-1:] == "\n")

    def _python(self, run: Callable[[str], object], text: str) -> bool:
        self._runs += 1
        left = TIME_BUDGET + RUN_ALLOWANCE * self._runs - self._spent
        if left <= 0:
            raise PatternTimeout(f"its {TIME_BUDGET:g} s budget for slow matches is spent")
        began = time.perf_counter()
        try:
            return _run_bounded(run, text, min(TIME_LIMIT, left))
        finally:
            self._spent += time.perf_counter() - began

    def search(self, text: str) -> bool:
        """Whether the pattern is found in ``text`` (``re.search``).

        Raises:
            PatternTimeout: a match that Python's ``re`` runs took too long.
        """
        if self.exact(text):
            return self.re2.search(text) is not None  # type: ignore[union-attr]
        return self._python(self.python.search, text)

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches (``re.fullmatch``).

        Raises:
            PatternTimeout: as for :meth:`search`.
        """
        if self.exact(text):
            return self.re2.fullmatch(text) is not None  # type: ignore[union-attr]
        return self._python(self.python.fullmatch, text)

    def search_joined(self, texts: list[str]) -> bool | None:
        """False when the pattern is found in none of ``texts`` (one search of their
        newline-joined text); None when that cannot be told this way (test them one by one).
        True: maybe."""
        if self.joined is None or self._never:
            return None
        joined = "\n".join(texts)
        if self._ascii_only and not joined.isascii():
            return None
        return self.joined.search(joined) is not None


def _decode(exc: BaseException) -> str:
    msg = exc.args[0] if exc.args else exc
    if isinstance(msg, bytes):
        return msg.decode("utf-8", "replace")
    return str(msg)
