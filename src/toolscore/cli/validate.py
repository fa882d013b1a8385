"""``toolscore validate [TRACE] [--gold FILE] [--forbidden FILE]``: check input files and say
what is wrong where (exit 0: all good; 2: one is bad, or nothing was given).

The command is thin: each file goes through the reader ``eval`` uses (the gold through
:func:`toolscore.gold.read_gold_file`, the rule file through :func:`toolscore.api.read_rules`,
the trace through :func:`toolscore.api.evaluate_trace` with no gold, which reads it once,
streamed, and counts what its readers skipped). Toolscore 1.10's ``validate TRACE`` checked a
trace only and exited 1 on a bad one; this one also checks gold and rule files, calls a trace
bad when a line or item was skipped as unreadable (1.10 skipped them silently) or when no
reader fits it (1.10 read zero calls), and exits 2, the status of every input error here. An
empty trace is OK, with a warning.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._exitcodes import EXIT_OK, Outcome, exit_code
from ..errors import ToolscoreError
from ..sanitize import shown
from . import _options as opt
from ._util import os_error_text

if TYPE_CHECKING:
    from ..calls import ToolCall

__all__ = ["check_gold", "check_rules", "check_trace", "validate_command"]

_ARGS_SHOWN = 200
"""Characters of the first call's arguments shown."""

OptionalTraceArgument = Annotated[
    str | None,
    typer.Argument(help="A trace to check: a file, a .gz file, or - (stdin).", show_default=False),
]
GoldFileOption = Annotated[
    str | None, typer.Option("--gold", "-g", help="A gold (expected calls) file to check.")
]
RuleFileOption = Annotated[
    str | None,
    typer.Option("--forbidden", "--rules", help="A rule file (forbidden calls, hard rules)."),
]


def validate_command(
    trace_file: OptionalTraceArgument = None,
    gold: GoldFileOption = None,
    forbidden: RuleFileOption = None,
    format: opt.FormatOption = "auto",
) -> None:
    """Check a trace, a gold file and a rule file: OK, or what is wrong where (exit 2)."""
    if trace_file is None and gold is None and forbidden is None:
        raise typer.BadParameter(
            "give a trace, --gold FILE or --forbidden FILE", param_hint="TRACE_FILE"
        )
    ok = True
    if gold is not None:
        ok = _say(check_gold(gold)) and ok
    if forbidden is not None:
        ok = _say(check_rules(forbidden)) and ok
    if trace_file is not None:
        ok = _say(check_trace(trace_file, format)) and ok
    raise typer.Exit(EXIT_OK if ok else exit_code(Outcome(input_error=True)))


def _say(lines: tuple[bool, list[str]]) -> bool:
    good, text = lines
    for line in text:
        typer.echo(shown(line))
    return good


def _error(what: str, exc: BaseException) -> tuple[bool, list[str]]:
    # the readers' errors name the file and the line or byte offset
    text = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
    return False, [f"BAD {what}: {text}"]


def check_gold(path: str) -> tuple[bool, list[str]]:
    """Read a gold file as ``eval`` does: ``(good, lines to show)``."""
    # the gold reader (and the hard rules a gold may hold) load only when asked: start-up
    from ..gold import read_gold_file

    try:
        gold = read_gold_file(path)
    except (ToolscoreError, ValueError, OSError) as exc:
        return _error("gold", exc)
    rules = ", with rules of its own" if gold.rules is not None else ""
    return True, [f"OK gold {path}: {len(gold)} expected call(s){rules}"]


def check_rules(path: str) -> tuple[bool, list[str]]:
    """Read a rule file as ``eval --forbidden`` does: ``(good, lines to show)``."""
    # the rule reader loads only when asked: start-up
    from ..api import read_rules

    try:
        rules = read_rules(path)
    except (ToolscoreError, ValueError, OSError) as exc:
        return _error("rule file", exc)
    forbidden = 0 if rules is None else len(rules.forbidden)
    hard = ", hard rules" if rules is not None and rules.hard else ""
    return True, [f"OK rule file {path}: {forbidden} forbidden rule(s){hard}"]


def check_trace(path: str, format: str = "auto") -> tuple[bool, list[str]]:
    """Read a trace once, as ``eval`` does, with no gold: ``(good, lines to show)``; a line
    the readers skipped, or an error that stopped them, makes it bad (each is named where)."""
    # the evaluation and the reports' helpers load only when asked: start-up
    from ..api import evaluate_trace
    from ..reports import input_lines

    first: list[ToolCall] = []

    def keep_first(calls: list[ToolCall]) -> None:
        if not first and calls:
            first.append(calls[0])

    try:
        result = evaluate_trace(
            None, path, format, validate_side_effects=False, on_calls=keep_first, workers=1
        )
    except (ToolscoreError, ValueError, OSError) as exc:
        return _error("trace", exc)
    lines, hidden = input_lines(result)
    problems = [f"  {severity} {message}" for severity, message in lines]
    if hidden:
        problems.append(f"  ... and {hidden} more input error(s)")
    if result.input_error is not None:
        problems.append(f"  error {result.input_error}")
    n = result.trace_calls_count
    if result.input_problems or result.input_error is not None:
        return False, [f"BAD trace {path}: {n} call(s) read, but:", *problems]
    out = [f"OK trace {path}: {n} call(s)", *problems]  # warnings only
    if first:
        out.append(f"  first call: {first[0].tool} {_args(first[0].args)}")
    return True, out


def _args(args: Any) -> str:
    # redacted before it is cut, so that a cut credential is not left unrecognized
    text = shown(json.dumps(args, ensure_ascii=False, default=repr, sort_keys=True))
    return text if len(text) <= _ARGS_SHOWN else text[: _ARGS_SHOWN - 1] + "…"
