"""Seeded generator of realistic Toolscore custom-format traces, at any size.

The trace is written as a stream: a pool of pre-serialized call templates is built once per
seed (with orjson), and each emitted call is a cheap byte-level join of a template's pieces, a
per-call counter, a result or an error, and a duration. Memory stays flat whatever the size.

What the traces contain, per call on average:

* one of 15 tool names with Zipf-like frequencies (``search`` most common, ``transfer_funds``
  rarest);
* nested ``args`` (dicts and lists two or three levels deep), about 1 KB per call on average,
  with some multi-KB strings (file contents, e-mail bodies, HTML, shell output);
* about 5% failed calls (``"is_error": true`` plus an ``"error"`` string), some of which are
  followed by an unchanged retry, and about 3% of calls identical to a recent earlier call;
* a ``duration`` in seconds;
* no credentials; about 0.1% of argument strings carry text that trips a credential scan's cheap
  prefix test ("sk-learn", "AKIA" in prose, "-----BEGIN CERTIFICATE-----") without being one;
* a few calls (about 0.1%) that the rules in ``benchmarks/forbidden10.json`` forbid, including
  a rare 16th tool, ``shutdown_server``, that only a forbidden call uses.

Usage::

    python benchmarks/generate.py --size 100MB --layout jsonl --seed 1 -o FILE

Sizes take the decimal units B, KB, MB, GB (10**3 steps) or the binary KiB, MiB, GiB. The file
ends as soon as the size is reached, so it is at most one call longer than asked.
"""

from __future__ import annotations

import argparse
import bisect
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

import orjson

Layout = Literal["json", "jsonl"]

LAYOUTS: tuple[Layout, ...] = ("json", "jsonl")

#: The 15 tool names, most frequent first; frequencies follow 1/rank**1.1.
TOOLS: tuple[str, ...] = (
    "search",
    "read_file",
    "fetch_url",
    "run_shell",
    "write_file",
    "sql_query",
    "list_directory",
    "http_post",
    "python_exec",
    "send_email",
    "get_weather",
    "create_calendar_event",
    "git_commit",
    "delete_file",
    "transfer_funds",
)

#: Placeholder put in every template's arguments; replaced by the call number, so that most
#: calls have distinct signatures as they do in real traces.
_MARK = b"@N@"

_TEMPLATES_PER_TOOL = 256
_FAIL_RATE = 0.05
_RETRY_AFTER_FAIL = 0.4
_RETRY_FAILS_AGAIN = 0.3
_IDENTICAL_RATE = 0.03
_RECENT = 256
_SPECIAL_TEMPLATES = 4  # per tool, in the bait and the forbidden pools
_BAIT_RATE = 0.003  # per call; calls have about 3.4 strings, so about 0.1% of strings
_FORBIDDEN_RATE = 0.002  # per call; the rules in forbidden10.json match these
_SPECIAL_RATE = _BAIT_RATE + _FORBIDDEN_RATE
_FLUSH_BYTES = 1 << 20

_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
}
_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")

_WORDS = (
    "agent tool call result error retry latency timeout cache index query table user order "
    "invoice customer report summary weather forecast flight booking hotel payment refund "
    "shipment inventory product review rating account profile session token budget quarter "
    "revenue growth metric dashboard pipeline deploy build test release branch commit merge "
    "config server client request response header payload schema field value record batch "
    "stream buffer chunk window model prompt context memory vector embedding search ranking "
    "the a of to and in for on with by from at as is was are be this that it not or"
).split()

_BAIT = (
    "compare sk-learn pipelines with the xgboost baseline",
    "task-runner restarted the worker pool after the deploy",
    "IAM access key ids start with AKIA or ASIA followed by sixteen characters",
    "-----BEGIN CERTIFICATE----- block is a public certificate, not a key",
    "classic GitHub tokens begin with ghp_ and the fine-grained ones with github_pat_",
    "Google API keys look like AIza plus thirty-five characters",
    "Slack bot tokens use the xoxb- prefix; rotate them in the admin console",
    "Stripe keys beginning sk_live_ must stay on the server",
    "ask-me-anything session notes for the sk- prefix discussion",
)

_ERRORS = (
    "TimeoutError: request timed out after 30s",
    "HTTP 503 Service Unavailable",
    "HTTP 429 Too Many Requests: retry after 2s",
    "ConnectionResetError: connection reset by peer",
    "PermissionError: [Errno 13] Permission denied",
    "FileNotFoundError: [Errno 2] No such file or directory",
    "sqlite3.OperationalError: database is locked",
    "ValueError: invalid literal for int() with base 10",
    "KeyError: 'id'",
    "RuntimeError: tool sandbox exited with status 137",
)


@dataclass(frozen=True, slots=True)
class _Template:
    """One pre-serialized call: the bytes around the call-number marks, and its result."""

    head: bytes  # b'{"tool":"name","args":' plus the args up to the first mark
    pieces: tuple[bytes, ...]  # the rest of the args, split at the marks
    result: bytes  # b',"result":...'


def parse_size(text: str) -> int:
    """Parse a size such as ``100MB``, ``1GB``, ``512KiB`` or ``2000`` into bytes.

    Args:
        text: A number with an optional unit (B, KB, MB, GB decimal; KiB, MiB, GiB binary).

    Returns:
        The size in bytes.

    Raises:
        ValueError: If the text is not a size.
    """
    match = _SIZE_RE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in _UNITS):
        raise ValueError(f"not a size: {text!r} (use e.g. 100MB, 1GB, 512KiB)")
    return int(float(match.group(1)) * _UNITS[unit or "b"])


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_WORDS, k=n))


def _slug(rng: random.Random) -> str:
    return "-".join(rng.choices(_WORDS[:80], k=rng.randint(1, 3)))


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        indent = "    " * rng.randint(0, 2)
        kind = rng.random()
        if kind < 0.2:
            out.append(f"{indent}def {_slug(rng).replace('-', '_')}(self, value):")
        elif kind < 0.35:
            out.append(f"{indent}# {_words(rng, rng.randint(3, 9))}")
        elif kind < 0.5:
            out.append(f"{indent}return {{'{_slug(rng)}': value, 'line': {i}}}")
        else:
            name = _slug(rng).replace("-", "_")
            out.append(f"{indent}{name} = compute({name!r}, {rng.randint(0, 999)})")
    return "\n".join(out)


def _html(rng: random.Random, paragraphs: int) -> str:
    body = "".join(
        f'<div class="{_slug(rng)}"><h2>{_words(rng, 4)}</h2><p>{_words(rng, 40)}</p>'
        f'<a href="/{_slug(rng)}">{_words(rng, 2)}</a></div>\n'
        for _ in range(paragraphs)
    )
    head = f"<head><title>{_words(rng, 5)}</title></head>"
    return f"<!doctype html><html>{head}<body>{body}</body></html>"


def _path(rng: random.Random) -> str:
    root = rng.choice(("/srv/app", "/home/agent/project", "/workspace/repo", "/tmp/run"))
    ext = rng.choice(("py", "md", "json", "txt"))
    return f"{root}/{_slug(rng)}/{_slug(rng).replace('-', '_')}.{ext}"


def _args_and_result(tool: str, rng: random.Random) -> tuple[dict[str, Any], Any]:
    """Realistic arguments (with one ``@N@`` mark) and a result for one tool."""
    big = rng.random() < 0.18
    if tool == "search":
        args: dict[str, Any] = {
            "query": _words(rng, rng.randint(3, 8)),
            "options": {"max_results": rng.choice((5, 10, 20)), "lang": "en", "safe": True},
            "request_id": "req-@N@",
        }
        result: Any = [
            {
                "title": _words(rng, 6),
                "url": f"https://{_slug(rng)}.example.com/{_slug(rng)}",
                "snippet": _words(rng, rng.randint(15, 30)),
            }
            for _ in range(rng.randint(2, 5))
        ]
    elif tool == "read_file":
        args = {"path": _path(rng), "encoding": "utf-8", "range": {"start": 0, "end": "@N@"}}
        result = {"content": _code(rng, rng.randint(60, 160) if big else rng.randint(3, 20))}
    elif tool == "fetch_url":
        args = {
            "url": f"https://{_slug(rng)}.example.org/{_slug(rng)}?page=@N@",
            "headers": {"Accept": "text/html", "User-Agent": "agent/1.0"},
            "timeout": rng.choice((10, 30, 60)),
        }
        result = {"status": 200, "body": _html(rng, rng.randint(6, 16) if big else 1)}
    elif tool == "run_shell":
        cmd = rng.choice(
            (
                f"pytest -q tests/{_slug(rng)}",
                f"ls -la {_path(rng)}",
                f"grep -rn '{_slug(rng)}' src/",
                f"git log --oneline -n {rng.randint(5, 50)}",
                "pip install -r requirements.txt",
            )
        )
        args = {"command": cmd, "cwd": "/workspace/repo", "env": {"RUN_ID": "@N@", "CI": "1"}}
        result = {
            "exit_code": 0,
            "stdout": "\n".join(_words(rng, 10) for _ in range(rng.randint(30, 80) if big else 3)),
        }
    elif tool == "write_file":
        args = {
            "path": _path(rng),
            "content": _code(rng, rng.randint(40, 120) if big else rng.randint(3, 15)),
            "options": {"mode": "0644", "create_dirs": True, "tag": "@N@"},
        }
        result = {"written": True}
    elif tool == "sql_query":
        table = rng.choice(("orders", "customers", "invoices", "shipments"))
        args = {
            "query": f"SELECT id, status, total FROM {table} WHERE region = ? AND id > ? LIMIT 50",
            "params": [rng.choice(("eu", "us", "apac")), "@N@"],
            "options": {"timeout_ms": 5000, "readonly": True},
        }
        result = {
            "rows": [
                [rng.randint(1, 10**6), rng.choice(("open", "paid", "late")), rng.random() * 500]
                for _ in range(rng.randint(1, 12))
            ]
        }
    elif tool == "list_directory":
        args = {"path": _path(rng).rsplit("/", 1)[0], "recursive": False, "cursor": "@N@"}
        result = {"entries": [f"{_slug(rng)}.py" for _ in range(rng.randint(3, 25))]}
    elif tool == "http_post":
        args = {
            "url": f"https://api.{_slug(rng)}.example.com/v1/{_slug(rng)}",
            "headers": {"Content-Type": "application/json", "X-Request-Id": "@N@"},
            "json": {
                "order": {
                    "items": [
                        {"sku": f"SKU-{rng.randint(1000, 9999)}", "qty": rng.randint(1, 5)}
                        for _ in range(rng.randint(1, 4))
                    ],
                    "customer": {"id": rng.randint(1, 10**5), "tier": rng.choice(("a", "b"))},
                },
                "note": _words(rng, rng.randint(5, 20)),
            },
        }
        result = {"status": 201, "id": rng.randint(1, 10**7)}
    elif tool == "python_exec":
        args = {"code": _code(rng, rng.randint(30, 80) if big else 6), "cell": "@N@"}
        result = {"stdout": _words(rng, 12), "value": rng.random()}
    elif tool == "send_email":
        args = {
            "to": [f"{rng.choice(_WORDS[:40])}@example.com"],
            "subject": _words(rng, 6),
            "body": "\n\n".join(_words(rng, 40) for _ in range(rng.randint(4, 12) if big else 1)),
            "meta": {"thread": "t-@N@", "priority": rng.choice(("low", "normal"))},
        }
        result = {"message_id": f"<{rng.randint(1, 10**9)}@mail.example.com>"}
    elif tool == "get_weather":
        args = {
            "location": {"city": rng.choice(("Paris", "Lagos", "Lima", "Osaka")), "country": "xx"},
            "units": "metric",
            "day_offset": "@N@",
        }
        result = {"temp_c": round(rng.uniform(-10, 35), 1), "conditions": _words(rng, 2)}
    elif tool == "create_calendar_event":
        args = {
            "event": {
                "title": _words(rng, 4),
                "start": f"2024-05-0{rng.randint(1, 9)}T09:00:00Z",
                "attendees": [{"email": f"{w}@example.com"} for w in rng.sample(_WORDS[:40], 3)],
            },
            "calendar_id": "cal-@N@",
        }
        result = {"event_id": f"ev{rng.randint(1, 10**8)}"}
    elif tool == "git_commit":
        args = {"message": _words(rng, 8), "files": [_path(rng) for _ in range(3)], "id": "@N@"}
        result = {"sha": f"{rng.getrandbits(160):040x}"}
    elif tool == "delete_file":
        args = {"path": _path(rng), "request": "@N@"}
        result = {"deleted": True}
    else:  # transfer_funds
        args = {
            "from_account": f"acct-{rng.randint(1000, 9999)}",
            "to_account": f"acct-{rng.randint(1000, 9999)}",
            "amount": {"value": round(rng.uniform(1, 900), 2), "currency": "EUR"},
            "reference": "tx-@N@",
        }
        result = {"status": "settled"}
    return args, result


def _forbidden_variant(tool: str, args: dict[str, Any], rng: random.Random, i: int) -> None:
    """Rarely make a call match one of the rules in ``forbidden10.json`` (edits ``args``)."""
    if tool == "run_shell":
        args["command"] = ("rm -rf /tmp/build-cache", "sudo systemctl restart app")[i % 2]
    elif tool == "sql_query":
        args["query"] = "DROP TABLE staging_orders"
    elif tool == "write_file":
        args["path"] = "/etc/cron.d/agent-job"
    elif tool == "fetch_url":
        args["url"] = "http://169.254.169.254/latest/meta-data/"
    elif tool == "http_post":
        args["url"] = "http://api.internal.example.com/v1/orders"
    elif tool == "send_email":
        args["to"] = ["partner@competitor.example.net"]
    elif tool == "read_file":
        args["path"] = "/home/agent/.ssh/id_rsa"
    elif tool == "transfer_funds":
        args["to_account"] = rng.choice(("acct-6666", "acct-1313"))


def _bait(args: dict[str, Any], rng: random.Random) -> None:
    """Put a credential-prefix lookalike into one string argument (edits ``args``)."""
    text = rng.choice(_BAIT)
    for key, value in args.items():
        if isinstance(value, str) and "@N@" not in value:
            args[key] = f"{value} {text}"
            return
    args["note"] = text


def _template(tool: str, args: dict[str, Any], result: Any) -> _Template:
    head, *pieces = (b'{"tool":"%s","args":' % tool.encode() + orjson.dumps(args)).split(_MARK)
    return _Template(head, tuple(pieces), b',"result":' + orjson.dumps(result))


def _build_pools(seed: int) -> tuple[list[list[_Template]], ...]:
    """Per tool: ordinary templates, credential-prefix baits, and forbidden calls."""
    rng = random.Random(f"toolscore-bench-pool-{seed}")
    plain: list[list[_Template]] = []
    bait: list[list[_Template]] = []
    forbidden: list[list[_Template]] = []
    for tool in TOOLS:
        plain.append(
            [_template(tool, *_args_and_result(tool, rng)) for _ in range(_TEMPLATES_PER_TOOL)]
        )
        baits, bad = [], []
        for i in range(_SPECIAL_TEMPLATES):
            args, result = _args_and_result(tool, rng)
            _bait(args, rng)
            baits.append(_template(tool, args, result))
            args, result = _args_and_result(tool, rng)
            _forbidden_variant(tool, args, rng, i)
            bad.append(_template(tool, args, result))
        bait.append(baits)
        forbidden.append(bad)
    # A tool that only forbidden calls use (a tool-only rule forbids every call to it).
    forbidden[-1][0] = _template(
        "shutdown_server", {"host": "db-primary", "force": True, "ticket": "@N@"}, {"ok": True}
    )
    return plain, bait, forbidden


def _tool_table(rng: random.Random) -> list[float]:
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(TOOLS))]
    total = sum(weights)
    cum, acc = [], 0.0
    for w in weights:
        acc += w / total
        cum.append(acc)
    cum[-1] = 1.0
    return cum


def write_trace(out: BinaryIO, size_bytes: int, layout: Layout, seed: int) -> int:
    """Write a trace of at least ``size_bytes`` bytes to an open binary file.

    Args:
        out: Where to write.
        size_bytes: The size to reach; the file ends after the call that reaches it.
        layout: ``"json"`` for one JSON array of calls, ``"jsonl"`` for one call per line.
        seed: The same seed always gives the same bytes.

    Returns:
        The number of calls written.

    Raises:
        ValueError: If the layout is unknown.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; use one of {', '.join(LAYOUTS)}")
    plain, baits, forbidden = _build_pools(seed)
    rng = random.Random(f"toolscore-bench-calls-{seed}")
    cum = _tool_table(rng)
    durations = [b',"duration":%.3f}' % rng.lognormvariate(-1.0, 1.0) for _ in range(4096)]
    errors = [b',"is_error":true,"error":' + orjson.dumps(e) for e in _ERRORS]
    sep = b"\n" if layout == "jsonl" else b",\n"
    rand, choose = rng.random, bisect.bisect_left
    n_templates = _TEMPLATES_PER_TOOL

    recent: list[tuple[_Template, bytes]] = []
    buf: list[bytes] = [] if layout == "jsonl" else [b"[\n"]
    buffered = sum(map(len, buf))
    written = 0
    calls = 0
    prev: tuple[_Template, bytes] | None = None
    prev_failed = False
    while True:
        if prev is not None and prev_failed and rand() < _RETRY_AFTER_FAIL:
            template, mark = prev  # an unchanged retry of the failed call
            failed = rand() < _RETRY_FAILS_AGAIN
        else:
            if recent and rand() < _IDENTICAL_RATE:
                template, mark = recent[int(rand() * len(recent))]
            else:
                tool = choose(cum, rand())
                r = rand()
                if r >= _SPECIAL_RATE:
                    template = plain[tool][int(rand() * n_templates)]
                elif r < _BAIT_RATE:
                    template = baits[tool][int(rand() * _SPECIAL_TEMPLATES)]
                else:
                    template = forbidden[tool][int(rand() * _SPECIAL_TEMPLATES)]
                mark = b"%d" % calls
                if len(recent) < _RECENT:
                    recent.append((template, mark))
                else:
                    recent[calls % _RECENT] = (template, mark)
            failed = rand() < _FAIL_RATE
        parts = [template.head]
        for piece in template.pieces:
            parts.append(mark)
            parts.append(piece)
        parts.append(errors[int(rand() * len(errors))] if failed else template.result)
        parts.append(durations[calls & 4095])
        if calls:
            buf.append(sep)
        call = b"".join(parts)
        buf.append(call)
        buffered += len(call) + len(sep)
        calls += 1
        prev, prev_failed = (template, mark), failed
        if buffered >= _FLUSH_BYTES or written + buffered >= size_bytes:
            if written + buffered >= size_bytes:
                buf.append(b"\n" if layout == "jsonl" else b"\n]\n")
                out.write(b"".join(buf))
                return calls
            out.write(b"".join(buf))
            written += buffered
            buf.clear()
            buffered = 0


def generate(path: str | Path, size_bytes: int, layout: Layout, seed: int = 1) -> int:
    """Write a trace file of about ``size_bytes`` bytes.

    Args:
        path: The file to write (replaced if it exists).
        size_bytes: The size to reach.
        layout: ``"json"`` (a JSON array of calls) or ``"jsonl"`` (one call per line).
        seed: The same seed always gives the same file.

    Returns:
        The number of calls written.
    """
    with open(path, "wb") as out:
        return write_trace(out, size_bytes, layout, seed)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``generate.py --size 100MB --layout jsonl --seed 1 -o FILE``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--size", required=True, type=parse_size, help="e.g. 1MB, 100MB, 1GB")
    parser.add_argument("--layout", choices=LAYOUTS, default="jsonl")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", required=True, type=Path)
    ns = parser.parse_args(argv)
    calls = generate(ns.output, ns.size, ns.layout, ns.seed)
    print(f"{ns.output}: {calls} calls, {ns.output.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
