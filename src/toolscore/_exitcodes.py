"""Exit codes of the ``toolscore`` command line, decided in one place.

Every command maps its outcome to a status with :func:`exit_code`; nothing else in the CLI
picks a number.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EXIT_CLOSED_OUTPUT",
    "EXIT_ERROR",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "Outcome",
    "exit_code",
]

EXIT_OK = 0
"""The evaluation ran and every gate that was asked for passed."""
EXIT_FAILED = 1
"""The evaluation ran, but a gate failed (``--fail-under``, ``--fail-on-violations``)."""
EXIT_ERROR = 2
"""The evaluation could not run as asked: a usage error or an input error."""
EXIT_SIGINT = 130
"""Stopped by SIGINT (Ctrl-C), as a shell reports it (128 + 2)."""
EXIT_SIGTERM = 143
"""Stopped by SIGTERM (128 + 15)."""
EXIT_CLOSED_OUTPUT = 141
"""stdout was closed by its reader (``toolscore eval ... | head -1``): 128 + SIGPIPE, what a
shell reports for a program a closed pipe ended. The reports were written before the summary;
nothing is printed about it (as ``yes | head -1`` prints nothing)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened in one run of a command, as far as the exit status is concerned."""

    usage_error: bool = False
    """A bad option or argument (bad ``--weight``, unknown ``--format``, bad ``--fail-under``)."""
    input_error: bool = False
    """An input could not be read: a missing or malformed gold, rule or trace file, including an
    error in the middle of a trace (the reports then cover the calls before it) and parts of a
    trace skipped as unreadable (a malformed JSON line: the reports cover the rest)."""
    internal_error: bool = False
    """An unexpected exception inside toolscore: nothing trustworthy was evaluated."""
    violations: bool = False
    """``--fail-on-violations`` was given and a forbidden call or credential was found."""
    below_threshold: bool = False
    """``--fail-under`` was given and the score or grade is below it."""
    regression: bool = False
    """``--baseline`` was given and the run is worse than the baseline."""


def exit_code(outcome: Outcome) -> int:
    """Map an outcome to the process exit status.

    ====  ==========================================================================
    code  meaning
    ====  ==========================================================================
    0     evaluated; no gate was asked for, or every gate passed (whatever the score)
    1     evaluated; a gate failed: ``--fail-under`` (score or grade below the gate),
          ``--fail-on-violations`` (forbidden calls plus credentials > 0) or
          ``--baseline`` (a regression against the baseline)
    2     not (fully) evaluated: a usage error (bad option), an input error (missing
          or malformed gold, rule or trace file, also in the middle of a trace, or a
          part of the trace skipped as unreadable), or an internal error
    ====  ==========================================================================

    An error wins over a failed gate: a run that stopped at a truncated trace exits 2 even
    when the calls read before it already failed a gate.

    Args:
        outcome: what happened.

    Returns:
        0, 1 or 2.
    """
    if outcome.usage_error or outcome.input_error or outcome.internal_error:
        return EXIT_ERROR
    if outcome.violations or outcome.below_threshold or outcome.regression:
        return EXIT_FAILED
    return EXIT_OK
