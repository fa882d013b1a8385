"""The ``toolscore`` command line (typer): one module per command, registered here.

* :mod:`~toolscore.cli.eval`: ``eval`` on one trace; :mod:`~toolscore.cli.dataset`: ``eval``
  on a dataset; :mod:`~toolscore.cli.watch`: ``watch``; :mod:`~toolscore.cli.regression`,
  :mod:`~toolscore.cli.validate`, :mod:`~toolscore.cli.report`: the commands of those names.
* :mod:`~toolscore.cli._options`: typer's declarations and the typed option objects each
  command builds from its parameters at once; :mod:`~toolscore.cli._util`: the error line,
  option parsing, what an unexpected exception becomes; :mod:`~toolscore.cli._progress`: the
  progress bars; :mod:`~toolscore.cli._ci`: ``eval``'s CI outputs;
  :mod:`~toolscore.cli._params`: typer's coercion, built only for a value that needs it.

The commands are thin: no scoring logic; exit statuses come from
:func:`toolscore._exitcodes.exit_code`. ``import toolscore`` never imports this package (nor
typer or rich).

Other commands may live in their own modules and register themselves on :data:`app`: a module
named in :data:`EXTRA_COMMANDS` exposes ``register(app: typer.Typer) -> None``, which is
called before the command line is parsed. Such a module may reuse :func:`error_line`,
:func:`parse_weights` and :func:`toolscore.reports.console.make_console`.
"""

from __future__ import annotations

import gc
import importlib
from typing import Annotated, Any

import typer
import typer.main

import toolscore

from ..limits import ensure_recursion_limit
from ._options import EvalOptions
from ._params import defer_coercion
from ._util import closed_output_status, error_line, is_closed_output, parse_weights
from .eval import eval_command, run_eval
from .regression import regression_command
from .report import report_command
from .validate import validate_command
from .watch import watch_command

__all__ = [
    "EXTRA_COMMANDS",
    "EvalOptions",
    "app",
    "closed_output_status",
    "error_line",
    "is_closed_output",
    "main",
    "parse_weights",
    "run_eval",
]

EXTRA_COMMANDS: tuple[str, ...] = ("toolscore.serve.command",)  # toolscore serve
"""Modules that add commands: each exposes ``register(app)``."""

app = typer.Typer(
    name="toolscore",
    help="Evaluate LLM-agent tool calls against a gold file: score, grade, safety checks.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"toolscore, version {getattr(toolscore, '__version__', '0.0.0')}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Evaluate LLM-agent tool calls against a gold file: score, grade, safety checks."""


app.command("eval")(eval_command)
app.command("watch")(watch_command)  # issue 4
app.command("regression")(regression_command)  # Toolscore 1.10's regression check
app.command("validate")(validate_command)  # Toolscore 1.10's validate, gold and rules too
app.command("report")(report_command)  # a JSON report rendered as Markdown, HTML, CSV


def _register_extra_commands() -> None:
    for module in EXTRA_COMMANDS:
        importlib.import_module(module).register(app)


def _command() -> Any:
    """The whole command line as a click-style command (typer's), extra commands registered."""
    global _COMMAND
    if _COMMAND is None:
        _register_extra_commands()
        command = typer.main.get_command(app)
        defer_coercion(command)  # pydantic only for a value that needs it
        _COMMAND = command
    return _COMMAND


_COMMAND: Any = None


class _Main:
    """``toolscore.cli.main``: the console-script entry point, and a command that click's
    ``CliRunner`` drives as it drove Toolscore's ``main`` group:
    ``CliRunner().invoke(main, ["eval", "gold.json", "trace.json"])``.

    Typer (0.29 on) carries its own copy of click, so this is not a ``click.Command``; it has
    what ``CliRunner.invoke`` uses: ``name`` and ``main(args, prog_name, standalone_mode,
    ...)``, which runs the typer application.
    """

    name = "toolscore"

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:
        """Run the command line on ``args`` (``sys.argv[1:]`` when None), as click's
        ``Command.main`` does (``standalone_mode`` and the other keywords are passed on)."""
        return _command().main(args=args, prog_name=prog_name or "toolscore", **extra)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _command()
        ensure_recursion_limit()
        # A run allocates millions of short-lived objects that reference counting frees; the
        # cyclic collector need not rescan the modules loaded so far each time it runs.
        gc.freeze()
        gc.set_threshold(50_000, 20, 50)
        return self.main(*args, **kwargs)

    def __repr__(self) -> str:
        return "<toolscore command line>"


main = _Main()
"""The console-script entry point (``toolscore``), also a command for click's ``CliRunner``."""
