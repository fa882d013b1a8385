"""Every trace format is read as a stream: calls/s, MB/s and flat peak RSS per format.

For each format and layout below, a seeded trace of about ``--size`` bytes (and one of
``--base-size``, 10 MB by default) is written as a stream under ``benchmarks/data/``, then read
in a fresh interpreter (``sys.executable -c ...``) that counts the calls
``toolscore.sources.iter_batches(path, format="auto")`` yields. The parent measures the wall
time and the child's peak RSS (its own ``VmHWM``). The detected format and the call
count must be exactly what was written; anything else fails the run.

Formats and layouts:

* ``custom``/json: a JSON array of custom call dicts; ``jsonl``: one custom call per line;
* ``openai``/json: ``{"messages": [...]}`` with ``tool_calls`` and ``role: tool`` results;
  ``openai``/jsonl: the same messages, one per line;
* ``anthropic``/json: ``{"messages": [...]}`` with ``tool_use``/``tool_result`` blocks;
* ``gemini``/json: ``{"contents": [...]}`` with ``functionCall``/``functionResponse`` parts;
* ``langchain``/json: a list of ``{"tool", "tool_input", "log"}`` agent actions;
* ``mcp``/json: ``{"format": "mcp", "messages": [...]}`` JSON-RPC messages (``initialize``,
  ``tools/list``, notifications, ``tools/call`` requests and responses); ``mcp``/jsonl: the
  same, one message per line;
* ``otel``/json: one OTLP export ``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``
  with ``execute_tool`` spans (and some chat spans, which are not calls); ``otel``/jsonl: one
  export per line, each a turn of one chat span and 1 to 6 tool spans.

Each call is about 1 KB with nested arguments; about 5% fail; some turns make two calls at
once. Usage::

    python benchmarks/formats.py                    # 100 MB and 10 MB, every format
    python benchmarks/formats.py --size 1GB --only otel,mcp
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "formats_results.md"
MB = 1_000_000

Items = tuple[list[Any], int]
"""A unit of a trace: the JSON items it adds (array elements or lines) and its calls."""


@dataclass(frozen=True)
class Case:
    """One benchmarked trace kind."""

    format: str
    """The ``format`` name the reader must detect (``jsonl`` is custom calls per line)."""
    layout: str
    """``json`` (one document) or ``jsonl`` (one value per line)."""
    head: bytes = b""
    """Document opening, before the first item (``json`` only)."""
    tail: bytes = b""
    """Document closing, after the last item (``json`` only)."""

    @property
    def key(self) -> str:
        return f"{self.format}-{self.layout}"

    @property
    def dialect(self) -> str:
        """The dialect module the detector must choose."""
        return "custom" if self.format == "jsonl" else self.format


_OTLP_RESOURCE = {
    "attributes": [
        {"key": "service.name", "value": {"stringValue": "bench-agent"}},
        {"key": "telemetry.sdk.language", "value": {"stringValue": "python"}},
    ]
}
_OTLP_SCOPE = {"name": "toolscore.bench", "version": "1.0"}

CASES: tuple[Case, ...] = (
    Case("custom", "json", b"[\n", b"\n]\n"),
    Case("jsonl", "jsonl"),
    Case("openai", "json", b'{"messages": [\n', b"\n]}\n"),
    Case("openai", "jsonl"),
    Case("anthropic", "json", b'{"messages": [\n', b"\n]}\n"),
    Case("gemini", "json", b'{"contents": [\n', b"\n]}\n"),
    Case("langchain", "json", b"[\n", b"\n]\n"),
    Case("mcp", "json", b'{"format": "mcp", "messages": [\n', b"\n]}\n"),
    Case("mcp", "jsonl"),
    Case(
        "otel",
        "json",
        b'{"resourceSpans": [{"resource": '
        + orjson.dumps(_OTLP_RESOURCE)
        + b', "scopeSpans": [{"scope": '
        + orjson.dumps(_OTLP_SCOPE)
        + b', "spans": [\n',
        b"\n]}]}]}\n",
    ),
    Case("otel", "jsonl"),
)

# ---------------------------------------------------------------------------------------------
# Calls

_WORDS = (
    "agent invoice customer report quarterly revenue forecast shipment warehouse ledger "
    "account balance transfer refund policy contract clause renewal schedule meeting "
    "calendar reminder incident outage latency cluster replica database index query cache "
    "deploy rollback release branch commit review test coverage metric dashboard alert "
    "budget vendor purchase order approval region europe asia america north south market "
    "segment churn retention cohort funnel campaign email newsletter subscriber ticket "
    "priority escalation support answer summary draft translate document page section"
).split()

_TOOLS = (
    ("search", 30),
    ("read_file", 16),
    ("fetch_url", 12),
    ("run_shell", 9),
    ("write_file", 8),
    ("sql_query", 7),
    ("list_directory", 5),
    ("http_post", 4),
    ("send_email", 3),
    ("get_weather", 3),
    ("create_calendar_event", 2),
    ("transfer_funds", 1),
)

_POOL = 256
_FAIL_RATE = 0.05


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def _args_template(rng: random.Random) -> dict[str, Any]:
    """Nested arguments, about 650 bytes serialized."""
    ops = ("eq", "ne", "lt", "gt", "in", "contains")
    return {
        "query": _text(rng, 6, 14),
        "options": {
            "limit": rng.randint(1, 200),
            "offset": rng.randint(0, 5000),
            "sort": {"field": rng.choice(_WORDS), "order": rng.choice(("asc", "desc"))},
            "filters": [
                {
                    "field": rng.choice(_WORDS),
                    "op": rng.choice(ops),
                    "value": rng.choice((rng.choice(_WORDS), rng.randint(0, 10**6), True)),
                }
                for _ in range(rng.randint(2, 4))
            ],
            "include_archived": rng.random() < 0.2,
        },
        "context": {
            "path": [rng.choice(_WORDS) for _ in range(rng.randint(2, 5))],
            "tags": [rng.choice(_WORDS) for _ in range(rng.randint(1, 4))],
            "notes": _text(rng, 12, 30),
            "score": round(rng.random(), 4),
        },
    }


@dataclass(slots=True)
class Call:
    """One generated call, with its outcome."""

    n: int
    tool: str
    args: dict[str, Any]
    result: str
    error: str | None
    start_ns: int
    duration_ns: int

    @property
    def id(self) -> str:
        return f"call_{self.n:08d}"

    @property
    def seconds(self) -> float:
        return self.start_ns / 1e9

    @property
    def duration(self) -> float:
        return round(self.duration_ns / 1e9, 6)


class CallSource:
    """A seeded, endless supply of calls, from pools built once (memory stays flat)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tools = [name for name, _ in _TOOLS]
        self.weights = [weight for _, weight in _TOOLS]
        self.args = [_args_template(rng) for _ in range(_POOL)]
        self.results = [_text(rng, 30, 55) for _ in range(_POOL)]
        self.errors = [f"Error: {_text(rng, 4, 10)}" for _ in range(16)]
        self.n = 0
        self.clock = 1_767_225_600_000_000_000  # 2026-01-01, in ns

    def next(self) -> Call:
        rng = self.rng
        self.n += 1
        tool = rng.choices(self.tools, self.weights)[0]
        args = dict(self.args[rng.randrange(_POOL)])
        args["request"] = {"id": f"req-{self.n}", "attempt": 1}
        failed = rng.random() < _FAIL_RATE
        duration = rng.randint(5_000_000, 900_000_000)
        self.clock += rng.randint(10_000_000, 2_000_000_000)
        call = Call(
            self.n,
            tool,
            args,
            self.results[rng.randrange(_POOL)],
            self.errors[rng.randrange(16)] if failed else None,
            self.clock,
            duration,
        )
        self.clock += duration
        return call

    def turn(self) -> list[Call]:
        """The calls of one assistant turn: usually one, sometimes two in parallel."""
        return [self.next(), self.next()] if self.rng.random() < 0.15 else [self.next()]

    def prose(self) -> str:
        return _text(self.rng, 8, 24)


# ---------------------------------------------------------------------------------------------
# Formats: each yields units (items, calls) forever


def _custom(src: CallSource) -> Iterator[Items]:
    while True:
        c = src.next()
        item: dict[str, Any] = {
            "tool": c.tool,
            "args": c.args,
            "timestamp": c.seconds,
            "duration": c.duration,
        }
        if c.error is None:
            item["result"] = c.result
        else:
            item["is_error"] = True
            item["error"] = c.error
        yield [item], 1


def _openai(src: CallSource) -> Iterator[Items]:
    yield (
        [
            {"role": "system", "content": "You are a careful operations assistant."},
            {"role": "user", "content": src.prose()},
        ],
        0,
    )
    while True:
        if src.rng.random() < 0.05:
            yield (
                [
                    {"role": "assistant", "content": src.prose()},
                    {"role": "user", "content": src.prose()},
                ],
                0,
            )
        calls = src.turn()
        items: list[Any] = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.tool, "arguments": orjson.dumps(c.args).decode()},
                    }
                    for c in calls
                ],
            }
        ]
        for c in calls:
            message: dict[str, Any] = {"role": "tool", "tool_call_id": c.id}
            if c.error is None:
                message["content"] = c.result
            else:
                message["content"] = c.error
                message["is_error"] = True
            items.append(message)
        yield items, len(calls)


def _anthropic(src: CallSource) -> Iterator[Items]:
    yield [{"role": "user", "content": src.prose()}], 0
    while True:
        calls = src.turn()
        blocks: list[Any] = [{"type": "text", "text": src.prose()}]
        blocks += [
            {"type": "tool_use", "id": f"toolu_{c.n:012d}", "name": c.tool, "input": c.args}
            for c in calls
        ]
        results: list[Any] = []
        for c in calls:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"toolu_{c.n:012d}"}
            if c.error is None:
                block["content"] = [{"type": "text", "text": c.result}]
            else:
                block["content"] = c.error
                block["is_error"] = True
            results.append(block)
        yield (
            [
                {"role": "assistant", "content": blocks, "stop_reason": "tool_use"},
                {"role": "user", "content": results},
            ],
            len(calls),
        )


def _gemini(src: CallSource) -> Iterator[Items]:
    yield [{"role": "user", "parts": [{"text": src.prose()}]}], 0
    while True:
        calls = src.turn()
        parts: list[Any] = [{"text": src.prose()}] if src.rng.random() < 0.3 else []
        parts += [{"functionCall": {"id": c.id, "name": c.tool, "args": c.args}} for c in calls]
        responses = [
            {
                "functionResponse": {
                    "id": c.id,
                    "name": c.tool,
                    "response": {"output": c.result}
                    if c.error is None
                    else {"error": {"code": 500, "message": c.error}},
                }
            }
            for c in calls
        ]
        yield [{"role": "model", "parts": parts}, {"role": "user", "parts": responses}], len(calls)


def _langchain(src: CallSource) -> Iterator[Items]:
    while True:
        c = src.next()
        log = f"Thought: {src.prose()}\nAction: {c.tool}\nAction Input: {c.args['query']}\n"
        yield [{"tool": c.tool, "tool_input": c.args, "log": log}], 1


def _mcp(src: CallSource) -> Iterator[Items]:
    tools = [
        {
            "name": name,
            "description": f"{name.replace('_', ' ')} for the agent",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
        }
        for name in src.tools
    ]
    yield (
        [
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"},
                },
            },
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-server", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "list-1", "method": "tools/list"},
            {"jsonrpc": "2.0", "id": "list-1", "result": {"tools": tools}},
        ],
        0,
    )
    while True:
        c = src.next()
        request = {
            "jsonrpc": "2.0",
            "id": c.n,
            "method": "tools/call",
            "params": {"name": c.tool, "arguments": c.args},
            "timestamp": c.seconds,
        }
        response: dict[str, Any] = {"jsonrpc": "2.0", "id": c.n}
        if c.error is None:
            response["result"] = {"content": [{"type": "text", "text": c.result}]}
        elif c.n % 2:
            response["result"] = {"content": [{"type": "text", "text": c.error}], "isError": True}
        else:
            response["error"] = {"code": -32603, "message": c.error}
        response["timestamp"] = (c.start_ns + c.duration_ns) / 1e9
        items: list[Any] = [request, response]
        if src.rng.random() < 0.05:
            items.insert(
                1,
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": c.n, "progress": 50, "total": 100},
                },
            )
        yield items, 1


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _tool_span(c: Call, trace_id: str, parent: str) -> dict[str, Any]:
    attributes = [
        _attr("gen_ai.operation.name", "execute_tool"),
        _attr("gen_ai.tool.name", c.tool),
        _attr("gen_ai.tool.call.id", c.id),
        _attr("gen_ai.tool.type", "function"),
        _attr("gen_ai.tool.call.arguments", orjson.dumps(c.args).decode()),
    ]
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": f"{c.n:016x}",
        "parentSpanId": parent,
        "name": f"execute_tool {c.tool}",
        "kind": 1,
        "startTimeUnixNano": str(c.start_ns),
        "endTimeUnixNano": str(c.start_ns + c.duration_ns),
        "attributes": attributes,
    }
    if c.error is None:
        attributes.append(_attr("gen_ai.tool.call.result", c.result))
        span["status"] = {"code": 1}
    else:
        attributes.append(_attr("error.type", "ToolError"))
        span["status"] = {"code": 2, "message": c.error}
    return span


def _chat_span(src: CallSource, trace_id: str, span_id: str) -> dict[str, Any]:
    start = src.clock
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "chat gpt-4o",
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 700_000_000),
        "attributes": [
            _attr("gen_ai.operation.name", "chat"),
            _attr("gen_ai.request.model", "gpt-4o"),
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1234"}},
            {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "87"}},
        ],
        "status": {},
    }


def _otel_spans(src: CallSource) -> Iterator[Items]:
    turn = 0
    while True:
        turn += 1
        trace_id = f"{turn:032x}"
        parent = f"{turn:08x}00000000"
        items: list[Any] = [_chat_span(src, trace_id, parent)] if turn % 8 == 1 else []
        calls = src.turn()
        items += [_tool_span(c, trace_id, parent) for c in calls]
        yield items, len(calls)


def _otel_exports(src: CallSource) -> Iterator[Items]:
    turn = 0
    while True:
        turn += 1
        trace_id = f"{turn:032x}"
        parent = f"{turn:08x}00000000"
        calls = [src.next() for _ in range(src.rng.randint(1, 6))]
        spans = [_chat_span(src, trace_id, parent)]
        spans += [_tool_span(c, trace_id, parent) for c in calls]
        export = {
            "resourceSpans": [
                {"resource": _OTLP_RESOURCE, "scopeSpans": [{"scope": _OTLP_SCOPE, "spans": spans}]}
            ]
        }
        yield [export], len(calls)


_UNITS: dict[str, Callable[[CallSource], Iterator[Items]]] = {
    "custom-json": _custom,
    "jsonl-jsonl": _custom,
    "openai-json": _openai,
    "openai-jsonl": _openai,
    "anthropic-json": _anthropic,
    "gemini-json": _gemini,
    "langchain-json": _langchain,
    "mcp-json": _mcp,
    "mcp-jsonl": _mcp,
    "otel-json": _otel_spans,
    "otel-jsonl": _otel_exports,
}

_FLUSH = 1 << 20


def write_trace(path: Path, case: Case, size: int, seed: int = 1) -> int:
    """Write a trace of about ``size`` bytes as a stream; return the calls written.

    The file ends at the first unit boundary at or past ``size`` (minus the closing bytes).
    """
    src = CallSource(random.Random(f"{seed}-{case.key}"))
    document = case.layout == "json"
    sep = b",\n" if document else b"\n"
    tail = case.tail if document else b"\n"
    dumps = orjson.dumps
    calls = 0
    written = 0
    first = True
    with open(path, "wb") as f:
        if document:
            f.write(case.head)
            written = len(case.head)
        buffer: list[bytes] = []
        pending = 0
        for items, n in _UNITS[case.key](src):
            for item in items:
                data = dumps(item)
                if not first:
                    buffer.append(sep)
                    pending += len(sep)
                first = False
                buffer.append(data)
                pending += len(data)
            calls += n
            if pending >= _FLUSH:
                f.write(b"".join(buffer))
                written += pending
                buffer.clear()
                pending = 0
            if written + pending + len(tail) >= size:
                break
        f.write(b"".join(buffer))
        f.write(tail)
    return calls


# ---------------------------------------------------------------------------------------------
# Measuring

#: Runs in a fresh interpreter: counts the calls iter_batches reads from argv[1] (format auto)
#: and records what the detector decided, then prints one JSON line.
CHILD = r"""
import json, sys, time
from toolscore.sources import _session, iter_batches
decided = []
_detect = _session.detect
def _spy(*args, **kwargs):
    found = _detect(*args, **kwargs)
    decided.append([found.layout, found.dialect, found.prefix])
    return found
_session.detect = _spy
start = time.perf_counter()
calls = done = findings = 0
error = None
for batch in iter_batches(sys.argv[1], format="auto"):
    calls += len(batch.calls)
    done += len(batch.done)
    findings += len(batch.findings)
    if batch.error is not None:
        error = str(batch.error)
seconds = time.perf_counter() - start
# This process's own peak RSS: VmHWM belongs to the address space made at exec. (wait4's
# ru_maxrss would also count the parent's pages at the fork before that exec.)
with open("/proc/self/status") as status:
    hwm = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")]
print(json.dumps({"calls": calls, "done": done, "findings": findings, "error": error,
                  "seconds": seconds, "detected": decided[-1] if decided else None,
                  "hwm_kb": hwm[0] if hwm else None}))
"""

#: The interpreter with toolscore.sources imported and nothing read: the RSS floor.
BASELINE = (
    "import json, toolscore.sources, toolscore.sources.detect\n"
    "with open('/proc/self/status') as s:\n"
    "    hwm = [int(x.split()[1]) for x in s if x.startswith('VmHWM:')]\n"
    "print(json.dumps({'hwm_kb': hwm[0] if hwm else None}))"
)


@dataclass
class Run:
    """One measured read of a trace."""

    case: Case
    size_label: str
    bytes: int
    written: int
    calls: int
    done: int
    findings: int
    wall: float
    inner: float
    rss_mb: float
    detected: list[str] | None
    error: str | None

    @property
    def mbps(self) -> float:
        return self.bytes / MB / self.inner if self.inner > 0 else 0.0

    def problems(self) -> list[str]:
        """Why this run is wrong; empty when the detection and the counts are right."""
        out: list[str] = []
        if self.error is not None:
            out.append(f"read error: {self.error}")
        if self.detected is None:
            out.append("no format was detected")
        elif (self.detected[0], self.detected[1]) != (self.case.layout, self.case.dialect):
            out.append(
                f"detected {self.detected[1]}/{self.detected[0]}, "
                f"expected {self.case.dialect}/{self.case.layout}"
            )
        if self.calls != self.written:
            out.append(f"read {self.calls} calls, {self.written} were written")
        if self.done != self.written:
            out.append(f"{self.done} calls completed, {self.written} were written")
        return out


def run_child(code: str, *args: str) -> tuple[dict[str, Any], float, float]:
    """Run ``sys.executable -c code args``; return its JSON output, wall seconds and peak RSS
    in MB: the ``hwm_kb`` it reports (its own ``VmHWM``), else ``os.wait4``'s ``ru_maxrss``,
    which on Linux is never below this process's own RSS at the fork."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"reader subprocess failed:\n{err.read().decode(errors='replace')}")
        info: dict[str, Any] = json.loads(out.read())
    kib = info.get("hwm_kb") or usage.ru_maxrss  # both in KiB on Linux
    return info, wall, kib / 1024


def measure(path: Path, case: Case, written: int, size_label: str) -> Run:
    """Read ``path`` in a fresh interpreter and measure it."""
    info, wall, rss = run_child(CHILD, str(path))
    return Run(
        case,
        size_label,
        path.stat().st_size,
        written,
        int(info["calls"]),
        int(info["done"]),
        int(info["findings"]),
        wall,
        float(info["seconds"]),
        rss,
        info["detected"],
        info["error"],
    )


def _script_version() -> str:
    return hashlib.sha1(Path(__file__).read_bytes()).hexdigest()[:12]


def ensure_trace(data_dir: Path, case: Case, size: int, label: str, seed: int) -> tuple[Path, int]:
    """The trace for (case, size, seed), generated unless an up-to-date copy is cached."""
    data_dir.mkdir(parents=True, exist_ok=True)
    ignore = data_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    suffix = "jsonl" if case.layout == "jsonl" else "json"
    path = data_dir / f"fmt-{case.key}-{label}-s{seed}.{suffix}"
    meta_path = path.with_name(path.name + ".meta.json")
    version = _script_version()
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("version") == version and meta.get("bytes") == path.stat().st_size:
            return path, int(meta["calls"])
    tmp = path.with_name(path.name + ".part")
    calls = write_trace(tmp, case, size, seed)
    os.replace(tmp, path)
    meta = {"calls": calls, "bytes": path.stat().st_size, "seed": seed, "version": version}
    meta_path.write_text(json.dumps(meta))
    return path, calls


_UNITS_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$")
_FACTORS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
}


def parse_size(text: str) -> int:
    """``"100MB"`` -> 100_000_000 (decimal KB/MB/GB, binary KiB/MiB/GiB)."""
    match = _UNITS_RE.match(text)
    factor = _FACTORS.get(match.group(2).lower()) if match else None
    if match is None or factor is None:
        raise argparse.ArgumentTypeError(f"bad size {text!r}; use e.g. 10MB, 512KiB, 1GB")
    return int(float(match.group(1)) * factor)


def table(runs: list[Run]) -> list[str]:
    """The Markdown table; the RSS ratio is against the same case's base-size run."""
    base = {run.case.key: run for run in runs if run.size_label == runs[0].size_label}
    lines = [
        "| format | layout | size | calls | MB/s | peak RSS MB | RSS ratio vs 10 MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        ref = base.get(run.case.key)
        ratio = "—" if ref is None or ref is run else f"{run.rss_mb / ref.rss_mb:.2f}x"
        lines.append(
            f"| {run.case.format} | {run.case.layout} | {run.size_label} | {run.calls:,} | "
            f"{run.mbps:.1f} | {run.rss_mb:.1f} | {ratio} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="100MB", help="trace size (default 100MB)")
    parser.add_argument("--base-size", default="10MB", help="the RSS reference size (10MB)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="comma-separated formats (default: all)")
    parser.add_argument("--data-dir", type=Path, default=DATA)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    labels = list(dict.fromkeys([args.base_size.replace(" ", ""), args.size.replace(" ", "")]))
    sizes = {label: parse_size(label) for label in labels}
    wanted = {name.strip() for name in args.only.split(",") if name.strip()}
    cases = [case for case in CASES if not wanted or case.format in wanted]
    if not cases:
        parser.error(f"--only matches no format; known: {', '.join(c.format for c in CASES)}")

    _, _, floor = run_child(BASELINE)
    print(f"interpreter + toolscore.sources imported: {floor:.1f} MB peak RSS", flush=True)
    runs: list[Run] = []
    failures: list[str] = []
    for label in labels:
        for case in cases:
            path, written = ensure_trace(args.data_dir, case, sizes[label], label, args.seed)
            run = measure(path, case, written, label)
            runs.append(run)
            print(
                f"  {case.format:<9} {case.layout:<5} {label:>6}: {run.calls:>9,} calls "
                f"{run.mbps:7.1f} MB/s {run.rss_mb:6.1f} MB RSS "
                f"({run.wall:.2f}s wall)",
                flush=True,
            )
            failures += [f"{case.key} {label}: {p}" for p in run.problems()]

    rows = table(runs)
    header = [
        "# Streaming every trace format",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M')}",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        f"- python: {platform.python_version()}",
        f"- command: `python benchmarks/formats.py --size {args.size} "
        f"--base-size {args.base_size} --seed {args.seed}`",
        "- reader: `toolscore.sources.iter_batches(path, format='auto')` in a fresh "
        "interpreter, counting calls; MB/s timed inside it (start-up excluded); peak RSS of "
        "that process (its own VmHWM, start-up and imports included)",
        f"- floor: the interpreter with `toolscore.sources` imported peaks at {floor:.1f} MB",
        "- every run detected the expected format and read exactly the calls written"
        if not failures
        else "- FAILURES: see below",
        "",
    ]
    text = "\n".join([*header, *rows, ""])
    if failures:
        text += "\n## Failures\n\n" + "\n".join(f"- {f}" for f in failures) + "\n"
    print()
    print("\n".join(rows))
    args.results.write_text(text)
    print(f"\nwritten to {args.results}")
    if failures:
        print("\nFAILED:\n" + "\n".join(f"  {f}" for f in failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
