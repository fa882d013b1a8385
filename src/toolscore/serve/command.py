"""``toolscore serve``: the command line of the OTLP receiver.

::

    toolscore serve --forbidden rules.json --gold gold.jsonl --findings findings.jsonl
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python my_agent.py

It listens on 127.0.0.1:4318 (``--host``/``--port``; ``--port 0`` picks a free port, printed
on stderr as ``toolscore serve: listening on http://HOST:PORT``). On another interface it
requires a bearer token (``--token`` or ``TOOLSCORE_SERVE_TOKEN``). Findings and closed
sessions are printed on stdout as they happen. SIGTERM or Ctrl-C stops accepting, closes every
open session with its summary and flushes the outputs; the exit status is then 0; 2 for a
usage or input error (a bad option, an unreadable gold or rule file, a port in use).
"""

from __future__ import annotations

import ipaddress
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer

from ..cli._options import ForbiddenOption, PiiOption, WeightOption
from ..cli._util import error_line, failure_status
from ..errors import ToolscoreError
from ..redact import use_pii
from ..result import normalize_weights, parse_weights

__all__ = ["ServeOptions", "register", "run_serve"]

TOKEN_ENV = "TOOLSCORE_SERVE_TOKEN"


@dataclass
class ServeOptions:
    """The options of ``toolscore serve``, as parsed by typer."""

    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    gold: str | None = None
    gold_by: str | None = None
    forbidden: str | None = None
    weights: list[str] = field(default_factory=list)
    strict: bool = False
    session_key: str | None = None
    idle: float = 30.0
    grace: float = 1.0
    max_sessions: int = 20_000
    max_pending: int = 100_000
    max_body: int = 8 << 20
    max_queue: int = 256
    findings: str | None = None
    per_trace: str | None = None
    export_otlp: str | None = None
    show_calls: bool = False
    quiet: bool = False


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def build(opts: ServeOptions, workdir: str) -> Any:
    """The :class:`~toolscore.serve.app.Receiver` for ``opts`` (gold and rules read now).

    Raises:
        ToolscoreError: an unreadable gold or rule file.
        ValueError: a bad weight.
    """
    # start-up of `toolscore --version`: the server's modules load only for `serve`
    from ..api import read_rules
    from ..dataset.gold import GoldLookup, build_gold
    from .app import Receiver, ServeConfig
    from .events import Events
    from .outputs import Outputs
    from .sessions import Limits, SessionChecks

    weights = normalize_weights(parse_weights(opts.weights))
    lookup = None if opts.gold is None else GoldLookup(build_gold(opts.gold, workdir, key=None))
    rules = read_rules(opts.forbidden)  # a session's gold adds its own rules
    checks = SessionChecks(
        gold=lookup, gold_by=opts.gold_by, rules=rules, weights=weights, strict=opts.strict
    )
    events = None
    if opts.export_otlp is not None:
        events = Events(opts.export_otlp)
    outputs = Outputs(
        console=None if opts.quiet else sys.stdout,
        findings=opts.findings,
        per_trace=opts.per_trace,
        events=events,
        show_calls=opts.show_calls,
    )
    limits = Limits(
        key=opts.session_key,
        idle=opts.idle,
        grace=opts.grace,
        max_sessions=opts.max_sessions,
        max_pending=opts.max_pending,
    )
    config = ServeConfig(
        token=opts.token, max_body=opts.max_body, max_queue=opts.max_queue, limits=limits
    )
    return Receiver(config, checks, outputs)


def run_serve(opts: ServeOptions) -> int:
    """Serve until SIGTERM or Ctrl-C; returns the exit status."""
    # optional dependency: uvicorn, for `serve` only
    import uvicorn

    # start-up of `toolscore --version`: the server's modules load only for `serve`
    from .app import create_app

    if not _loopback(opts.host) and not opts.token:
        error_line(
            f"--host {opts.host} is not a loopback address: give a bearer token "
            f"(--token or {TOKEN_ENV})"
        )
        return 2
    workdir = tempfile.mkdtemp(prefix="toolscore-serve-")
    try:
        try:
            receiver = build(opts, workdir)
            family = socket.AF_INET6 if ":" in opts.host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((opts.host, opts.port))
            sock.listen(2048)  # connections wait in the backlog until uvicorn serves them
        except (ToolscoreError, ValueError, OSError) as exc:
            return failure_status(exc)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        sys.stderr.write(f"toolscore serve: listening on http://{shown}:{port}\n")
        sys.stderr.flush()
        config = uvicorn.Config(
            create_app(receiver),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=10,
        )
        _server_class()(config).run(sockets=[sock])
        sock.close()
        closed = receiver.outputs.closed_count
        sys.stderr.write(f"toolscore serve: stopped; {closed} session(s) closed\n")
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _server_class() -> Any:
    # optional dependency: uvicorn, for `serve` only
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, whose SIGTERM or SIGINT only starts the graceful shutdown: the
        command then prints its last line and exits 0 (uvicorn raises the signal again once
        shut down, which would kill the process)."""

        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            signals = (signal.SIGINT, signal.SIGTERM)
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server


def serve_command(
    host: Annotated[
        str, typer.Option("--host", help="Interface to listen on (a token is then required).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")
    ] = 4318,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar=TOKEN_ENV,
            help="Bearer token OTLP requests must carry.",
            show_default=False,
        ),
    ] = None,
    gold: Annotated[
        str | None,
        typer.Option(
            "--gold",
            help="Gold: one file for every session, a keyed JSON Lines file, or a directory.",
        ),
    ] = None,
    gold_by: Annotated[
        str | None,
        typer.Option(
            "--gold-by",
            help="Span or resource attribute naming a session's gold (default: its key).",
        ),
    ] = None,
    forbidden: ForbiddenOption = None,
    weight: WeightOption = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Compare argument types exactly.")
    ] = False,
    session_key: Annotated[
        str | None,
        typer.Option(
            "--session-key",
            help="Group spans by this attribute (e.g. gen_ai.conversation.id), not trace id.",
        ),
    ] = None,
    idle: Annotated[
        float, typer.Option("--idle", min=0.01, help="Close a session after this idle time (s).")
    ] = 30.0,
    grace: Annotated[
        float,
        typer.Option("--grace", min=0.0, help="Late spans counted this long after the root (s)."),
    ] = 1.0,
    max_sessions: Annotated[
        int, typer.Option("--max-sessions", min=1, help="Open sessions at most.")
    ] = 20_000,
    max_pending: Annotated[
        int, typer.Option("--max-pending", min=1, help="Calls awaiting a result at most.")
    ] = 100_000,
    max_body: Annotated[
        int, typer.Option("--max-body", min=1, help="Largest request body, in bytes.")
    ] = 8 << 20,
    max_queue: Annotated[
        int, typer.Option("--max-queue", min=1, help="Requests waiting for the checks at most.")
    ] = 256,
    findings: Annotated[
        str | None, typer.Option("--findings", help="Append every finding as a JSON line.")
    ] = None,
    per_trace: Annotated[
        str | None,
        typer.Option("--per-trace", help="Append each closed session's record (JSON Lines)."),
    ] = None,
    export_otlp: Annotated[
        str | None,
        typer.Option("--export-otlp", help="Send gen_ai.evaluation.result events to this URL."),
    ] = None,
    calls: Annotated[
        bool, typer.Option("--calls", help="Also print a line per session opened and call.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No live lines.")] = False,
    pii: PiiOption = False,
) -> None:
    """Receive OpenTelemetry (OTLP/HTTP) from live agents and evaluate each session."""
    use_pii(pii)
    opts = ServeOptions(
        host=host, port=port, token=token or None, gold=gold, gold_by=gold_by,
        forbidden=forbidden, weights=list(weight or ()), strict=strict,
        session_key=session_key, idle=idle, grace=grace, max_sessions=max_sessions,
        max_pending=max_pending, max_body=max_body, max_queue=max_queue, findings=findings,
        per_trace=per_trace, export_otlp=export_otlp, show_calls=calls, quiet=quiet,
    )  # fmt: skip
    raise typer.Exit(run_serve(opts))


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to the ``toolscore`` app (called by ``cli.main``)."""
    if any(getattr(c, "name", None) == "serve" for c in app.registered_commands):
        return
    app.command("serve")(serve_command)
