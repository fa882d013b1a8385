"""A real ``toolscore serve`` receiver on 127.0.0.1, on a free port, in a thread of the test."""

from __future__ import annotations

import io
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from toolscore.api import read_rules
from toolscore.gold import gold_from_dicts
from toolscore.result import normalize_weights
from toolscore.serve.app import Receiver, ServeConfig, create_app
from toolscore.serve.outputs import Outputs
from toolscore.serve.sessions import Limits, SessionChecks

FORBIDDEN = [{"tool": "delete_database", "reason": "destructive"}]


class _Gold:
    """A gold lookup by session key (the ``GoldLookup.get`` seam)."""

    def __init__(self, gold: dict[str, list[dict[str, Any]]]) -> None:
        self.gold = {key: gold_from_dicts(calls) for key, calls in gold.items()}

    def get(self, trace_id: str | None, name: str | None) -> Any:
        return self.gold.get(trace_id or "", self.gold.get("*"))


def post(
    url: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    """POST ``body``; (status, body, headers), also for an error status."""
    request = urllib.request.Request(url, body, headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@dataclass
class Running:
    url: str
    receiver: Receiver
    console: io.StringIO

    def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics``, by name and sorted labels."""
        text = get(f"{self.url}/metrics")[1].decode()
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                out[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return out

    def wait(self, predicate: Any, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for the server")
            time.sleep(0.01)


@contextmanager
def serve(
    *,
    gold: dict[str, list[dict[str, Any]]] | None = None,
    forbidden: Any = FORBIDDEN,
    config: ServeConfig | None = None,
    limits: Limits | None = None,
    **outputs: Any,
) -> Iterator[Running]:
    """Start a receiver; stop it (closing its sessions) when the block ends."""
    console = io.StringIO()
    checks = SessionChecks(
        gold=None if gold is None else _Gold(gold),  # type: ignore[arg-type]
        gold_by=None,
        rules=read_rules(forbidden),
        weights=normalize_weights(None),
        strict=False,
    )
    config = config or ServeConfig()
    if limits is not None:
        config = replace(config, limits=limits)
    receiver = Receiver(config, checks, Outputs(console=console, **outputs))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(receiver), log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.005)
    try:
        yield Running(f"http://127.0.0.1:{port}", receiver, console)
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
        assert not thread.is_alive(), "the server did not stop"
