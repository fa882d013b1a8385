"""Benchmark of ``toolscore serve``: spans per second sustained, arrival-to-finding latency,
and memory with many open sessions. The load generator is in this script.

    python benchmarks/serve.py                   # 60 s at 5,000 spans/s, then 10,000 sessions
    python benchmarks/serve.py --duration 10 --rate 2000 --sessions 2000   # a quick look

The server runs as the real command (``python -m toolscore serve --quiet``) in its own
process; the generator runs in ``--senders`` processes, each with one keep-alive connection,
sending OTLP/HTTP protobuf requests of ``--batch`` spans on a fixed schedule (a late request
is sent at once, so the rate is kept when the server is slow to answer). Every span is a GenAI
``execute_tool`` span (one call each), one in 20 a forbidden call, spread over traces that
live for about ten requests each. A ``429`` is retried after its ``Retry-After``, so nothing
is dropped: at the end, spans accepted must equal the calls the server counted.

Phases:

1. **Throughput**: ``--rate`` spans/s for ``--duration`` s. Prints spans/s accepted and
   evaluated, the server's arrival-to-finding p50/p99 (its histogram
   ``toolscore_finding_latency_seconds``, interpolated within buckets), the requests'
   round-trip p50/p99 seen by the senders, 429s, and spans sent = calls counted.
2. **Open sessions**: ``--sessions`` traces of 3 spans each, left open (idle time of an
   hour); prints the server's RSS (``/proc/PID/status``) before and after.
3. **Overload**: ``2 * --senders`` processes send as fast as they can for 3 s to a server with
   a queue of 4 requests; prints the 429s seen, then that a request is accepted afterwards.

Also prints the load average (``/proc/loadavg``) before and after: the figures depend on it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SPANS_PER_TRACE = 50


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def encode(spans: list[tuple[bytes, bytes, str, str]]) -> bytes:
    """(trace id, span id, tool, arguments JSON) -> an ExportTraceServiceRequest."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    attr = resource.resource.attributes.add(key="service.name")
    attr.value.string_value = "bench-agent"
    scope = resource.scope_spans.add()
    now = time.time_ns()
    for trace_id, span_id, tool, args in spans:
        span = scope.spans.add(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=b"\x01" * 8,
            name=f"execute_tool {tool}",
            start_time_unix_nano=now,
            end_time_unix_nano=now + 1000,
        )
        for key, value in (
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", tool),
            ("gen_ai.tool.call.arguments", args),
        ):
            kv = span.attributes.add(key=key)
            kv.value.string_value = value
    return request.SerializeToString()


class Load:
    """Spans of traces that live for :data:`SPANS_PER_TRACE` spans each."""

    def __init__(self, seed: int, active: int) -> None:
        self.rng = random.Random(seed)
        self.traces = [self._trace() for _ in range(active)]
        self.sent = 0

    def _trace(self) -> list[Any]:
        return [self.rng.randbytes(16), 0]

    def spans(self, n: int) -> list[tuple[bytes, bytes, str, str]]:
        out = []
        for _ in range(n):
            slot = self.rng.randrange(len(self.traces))
            trace = self.traces[slot]
            trace[1] += 1
            if trace[1] >= SPANS_PER_TRACE:
                self.traces[slot] = self._trace()
            self.sent += 1
            forbidden = self.sent % 20 == 0
            tool = "delete_database" if forbidden else ("search", "fetch", "read")[self.sent % 3]
            args = json.dumps({"q": f"item {self.sent}", "limit": 10})
            out.append((trace[0], self.rng.randbytes(8), tool, args))
        return out


def post(conn: http.client.HTTPConnection, body: bytes) -> tuple[int, float]:
    conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
    response = conn.getresponse()
    response.read()
    retry = float(response.getheader("Retry-After") or 0)
    return response.status, retry


def sender(args: tuple[int, int, float, float, int, int, Any]) -> dict[str, Any]:
    """One sending process: ``rate`` spans/s (0: as fast as it can) for ``duration`` s."""
    seed, port, rate, duration, batch, active, _ = args
    load = Load(seed, active)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    interval = batch / rate if rate else 0.0
    started = time.perf_counter()
    accepted = refused = 0
    latencies: list[float] = []
    i = 0
    while True:
        due = started + i * interval
        now = time.perf_counter()
        if now - started >= duration:
            break
        if due > now:
            time.sleep(due - now)
        body = encode(load.spans(batch))
        while True:
            sent_at = time.perf_counter()
            status, retry = post(conn, body)
            latencies.append(time.perf_counter() - sent_at)
            if status == 200:
                accepted += batch
                break
            if status in (429, 503):
                refused += 1
                if not rate:
                    break  # overload phase: count it and go on
                time.sleep(retry)
                continue
            raise RuntimeError(f"unexpected status {status}")
        i += 1
    conn.close()
    return {"accepted": accepted, "refused": refused, "latencies": latencies}


class Server:
    def __init__(self, *extra: str) -> None:
        self.tmp = tempfile.mkdtemp(prefix="toolscore-bench-")
        rules = os.path.join(self.tmp, "rules.json")
        with open(rules, "w") as f:
            json.dump([{"tool": "delete_database", "reason": "destructive"}], f)
        gold = os.path.join(self.tmp, "gold.json")
        with open(gold, "w") as f:
            json.dump([{"tool": "search", "args": {"q": "item 1"}}, {"tool": "fetch"}], f)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolscore",
                "serve",
                "--port",
                "0",
                "--quiet",
                "--forbidden",
                rules,
                "--gold",
                gold,
                *extra,
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        match = re.search(r":(\d+)$", line.strip())
        if not match:
            raise RuntimeError(f"the server did not start: {line}")
        self.port = int(match.group(1))

    def get(self, path: str) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", path)
        data = conn.getresponse().read().decode()
        conn.close()
        return data

    def metrics(self) -> dict[str, Any]:
        from prometheus_client.parser import text_string_to_metric_families

        out: dict[str, Any] = {}
        for family in text_string_to_metric_families(self.get("/metrics")):
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    out.setdefault(sample.name, []).append(
                        (float(sample.labels["le"]), sample.value)
                    )
                elif not sample.labels:
                    out[sample.name] = sample.value
        return out

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """A quantile from cumulative histogram buckets, interpolated linearly within one."""
    total = buckets[-1][1]
    if not total:
        return float("nan")
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return prev_le
            width = count - prev_count
            return prev_le + (le - prev_le) * ((rank - prev_count) / width if width else 1)
        prev_le, prev_count = le, count
    return prev_le


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run_load(port: int, rate: float, duration: float, senders: int, batch: int) -> dict[str, Any]:
    per = rate / senders if rate else 0.0
    jobs = [(seed, port, per, duration, batch, 200, None) for seed in range(senders)]
    with multiprocessing.Pool(senders) as pool:
        results = pool.map(sender, jobs)
    latencies = [x for r in results for x in r["latencies"]]
    return {
        "accepted": sum(r["accepted"] for r in results),
        "refused": sum(r["refused"] for r in results),
        "latencies": latencies,
    }


def throughput(opts: argparse.Namespace) -> None:
    server = Server("--idle", "5")
    try:
        started = time.perf_counter()
        load = run_load(server.port, opts.rate, opts.duration, opts.senders, opts.batch)
        sent_for = time.perf_counter() - started
        while True:  # until the server has evaluated every span accepted
            m = server.metrics()
            if m.get("toolscore_calls_total", 0) >= load["accepted"]:
                break
            time.sleep(0.05)
        done_in = time.perf_counter() - started
        buckets = m["toolscore_finding_latency_seconds_bucket"]
        print(
            f"throughput: {load['accepted']:,} spans accepted in {sent_for:.1f} s "
            f"({load['accepted'] / sent_for:,.0f} spans/s sent), all evaluated "
            f"{done_in - sent_for:.2f} s after the last send "
            f"({load['accepted'] / done_in:,.0f} spans/s evaluated)"
        )
        print(
            f"  spans sent = calls counted: {load['accepted']:,} = "
            f"{int(m['toolscore_calls_total']):,}; 429s: {load['refused']}"
        )
        print(
            f"  arrival to finding (server): p50 {quantile(buckets, 0.5) * 1000:.1f} ms, "
            f"p99 {quantile(buckets, 0.99) * 1000:.1f} ms over "
            f"{int(buckets[-1][1]):,} findings"
        )
        lat = load["latencies"]
        print(
            f"  request round trip (senders): p50 {pct(lat, 0.5) * 1000:.1f} ms, "
            f"p99 {pct(lat, 0.99) * 1000:.1f} ms; server RSS {server.rss_mb():.0f} MB"
        )
    finally:
        server.stop()


def sessions(opts: argparse.Namespace) -> None:
    server = Server("--idle", "3600", "--max-sessions", str(opts.sessions + 1000))
    try:
        before = server.rss_mb()
        rng = random.Random(7)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        traces = [rng.randbytes(16) for _ in range(opts.sessions)]
        per = 100
        for start in range(0, len(traces), per):
            spans = [
                (t, rng.randbytes(8), tool, json.dumps({"q": i}))
                for i, t in enumerate(traces[start : start + per])
                for tool in ("search", "fetch", "read")
            ]
            status, _ = post(conn, encode(spans))
            assert status == 200, status
        conn.close()
        while json.loads(server.get("/healthz"))["open"] < opts.sessions:
            time.sleep(0.05)
        print(
            f"open sessions: {opts.sessions:,} open, server RSS {server.rss_mb():.0f} MB "
            f"(empty: {before:.0f} MB)"
        )
    finally:
        server.stop()


def overload(opts: argparse.Namespace) -> None:
    server = Server("--max-queue", "4", "--idle", "5")
    try:
        load = run_load(server.port, 0, 3.0, 2 * opts.senders, opts.batch)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        status, _ = post(conn, encode(Load(99, 5).spans(10)))
        health = json.loads(server.get("/healthz"))["status"]
        print(
            f"overload: {load['refused']:,} requests refused with 429, "
            f"{load['accepted']:,} spans accepted in 3 s; afterwards: {status}, {health}"
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=5000, help="spans/s to send")
    parser.add_argument("--duration", type=float, default=60, help="seconds")
    parser.add_argument("--batch", type=int, default=100, help="spans per request")
    parser.add_argument("--senders", type=int, default=4, help="sending processes")
    parser.add_argument("--sessions", type=int, default=10_000, help="open sessions")
    opts = parser.parse_args()
    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)")
    throughput(opts)
    sessions(opts)
    overload(opts)
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
