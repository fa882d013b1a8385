"""A user check for toolscore: post an alert for each call to a forbidden tool.

Give it to ``evaluate_stream``, ``watch``, ``evaluate_trace`` or ``evaluate`` with
``checks=[AlertCheck(url, {"run_shell", "delete_repository"})]``. The async drivers await its
``afeed``, which POSTs one JSON alert per forbidden call with plain asyncio-compatible I/O
(anyio's TCP streams, no HTTP library needed) before it returns the batch's findings; the
sync drivers call ``feed``, which posts with :mod:`urllib`. Its findings (``check="alert"``)
go to the same sinks and reports as the built-in checks' findings, and ``state()`` counts
the alerts sent (a metric of the result: ``alert_metrics``).
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio

from toolscore import Finding
from toolscore.calls import Batch
from toolscore.checks import State


@dataclass(frozen=True)
class AlertState(State):
    """The alerts sent so far: their count merges by addition."""

    sent: int = 0
    check: str = field(default="alert", kw_only=True)

    def merge(self, later: AlertState) -> AlertState:
        return AlertState(self.sent + later.sent)

    def metrics(self) -> dict[str, Any]:
        return {"alert_metrics": {"alerts_sent": self.sent}}


class AlertCheck:
    """Posts ``{"call", "tool"}`` to ``url`` for each call to one of ``tools``."""

    name = "alert"

    def __init__(self, url: str, tools: set[str]) -> None:
        self.url = url
        self.tools = frozenset(tools)
        self.sent = 0

    def _forbidden(self, batch: Batch) -> list[tuple[int, str]]:
        cols = batch.columns()  # column at a time: no per-call work for other tools
        tools = cols.tools
        return [(cols.index(i), t) for i, t in enumerate(tools) if t in self.tools]

    def _findings(self, hits: list[tuple[int, str]]) -> list[Finding]:
        return [
            Finding(
                "alert",
                "alert_sent",
                "warning",
                None,
                index,
                tool,
                template="call {call} {tool}: alert sent",
            )
            for index, tool in hits
        ]

    def feed(self, batch: Batch) -> list[Finding]:
        """The sync path (``evaluate``, ``evaluate_trace``): posts with urllib."""
        hits = self._forbidden(batch)
        for index, tool in hits:
            body = json.dumps({"call": index + 1, "tool": tool}).encode()
            request = urllib.request.Request(
                self.url, body, {"Content-Type": "application/json"}, method="POST"
            )
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
            self.sent += 1
        return self._findings(hits)

    async def afeed(self, batch: Batch) -> list[Finding]:
        """The async path (``evaluate_stream``, ``watch``): real async I/O, one POST per
        forbidden call, awaited before the batch's findings are reported."""
        hits = self._forbidden(batch)
        for index, tool in hits:
            await self._post(json.dumps({"call": index + 1, "tool": tool}).encode())
            self.sent += 1
        return self._findings(hits)

    async def _post(self, body: bytes) -> None:
        url = urlsplit(self.url)
        host, port = url.hostname or "127.0.0.1", url.port or 80
        request = (
            f"POST {url.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode() + body
        with anyio.fail_after(5):
            async with await anyio.connect_tcp(host, port) as stream:
                await stream.send(request)
                reply = b""
                try:
                    while b"\r\n\r\n" not in reply:
                        reply += await stream.receive()
                except anyio.EndOfStream:
                    pass
        status = reply.split(b" ", 2)[1:2]
        if status != [b"204"] and status != [b"200"]:
            raise RuntimeError(f"the alert server answered {reply[:40]!r}")

    def state(self) -> AlertState:
        return AlertState(self.sent)
