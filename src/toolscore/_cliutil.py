"""What the commands' front ends (``eval``, ``watch``, datasets) share: the one error line
and the parsing of options whose failure is an exit status rather than an exception."""

from __future__ import annotations

import sys

from ._exitcodes import Outcome, exit_code

__all__ = [
    "error_line",
    "failure_status",
    "os_error_text",
    "parse_run_options",
    "parse_weights",
]


def error_line(message: str) -> None:
    """Print ``toolscore: error: {message}`` (redacted, on one line) to stderr."""
    from .sanitize import shown

    text = shown(message)
    sys.stderr.write(f"toolscore: error: {text}\n")
    sys.stderr.flush()


def parse_weights(items: list[str]) -> dict[str, float] | None:
    """Parse repeated ``--weight NAME=VALUE`` options (``None`` when none were given).

    Only the form is checked here; names and values are checked by the evaluation.

    Raises:
        ValueError: an item is not ``NAME=VALUE`` with a number as value.
    """
    if not items:
        return None
    weights: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            weights[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--weight: expected NAME=VALUE, got {item!r}") from None
    return weights


def parse_run_options(
    weight_items: list[str], fail_under: str | None
) -> tuple[dict[str, float] | None, float | str | None] | int:
    """Parse ``--weight`` and ``--fail-under``; an exit status (after the error line) if bad."""
    from .verdict import parse_fail_under

    try:
        weights = parse_weights(weight_items)
        threshold = None if fail_under is None else parse_fail_under(fail_under)
    except ValueError as exc:
        error_line(str(exc))
        return exit_code(Outcome(usage_error=True))
    return weights, threshold


def failure_status(exc: BaseException) -> int:
    """Print the one error line for an error raised before a result exists; its exit status."""
    from .errors import InputError

    if isinstance(exc, OSError):
        error_line(os_error_text(exc))
        return exit_code(Outcome(input_error=True))
    error_line(str(exc))
    if isinstance(exc, InputError):
        return exit_code(Outcome(input_error=True))
    return exit_code(Outcome(usage_error=True))


def os_error_text(exc: OSError) -> str:
    """An OS error as one line naming the path: ``path: reason``."""
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)
