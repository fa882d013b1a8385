"""The OTLP/HTTP receiver: a Starlette application, one evaluation task behind a bounded queue.

Routes: ``POST /v1/traces`` and ``POST /v1/logs`` (protobuf or JSON, gzip or not; the
standard ``Export*ServiceResponse``, with ``partial_success`` for spans without ids),
``GET /metrics`` (Prometheus) and ``GET /healthz``.

A request is read (``413`` past ``max_body`` bytes, sent or inflated), decoded (``400`` with
what is wrong), and its spans queued for the one task that runs them through their sessions
(:class:`~toolscore.serve.sessions.Sessions`), so checks never run concurrently and a session
needs no lock. The queue is bounded in requests and in spans: when full the request is
refused with ``429`` and ``Retry-After`` (the exporter retries it later, as OTLP says); while
the server shuts down, with ``503``. Nothing waits in an unbounded queue.

Shutdown (SIGTERM through uvicorn, or the end of the lifespan): refuse new requests, run what
was queued, close every open session with its summary, flush the outputs.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..cli._util import error_line
from .metrics import CONTENT_TYPE
from .otlp import (
    JSON,
    PROTOBUF,
    BadRequest,
    SpanIn,
    TooLarge,
    decode_logs,
    decode_traces,
    response_body,
    unpack,
)
from .outputs import Outputs
from .sessions import Limits, SessionChecks, Sessions

__all__ = ["Receiver", "ServeConfig", "create_app"]


@dataclass(frozen=True)
class ServeConfig:
    """The receiver's limits (the sessions' are :class:`~toolscore.serve.sessions.Limits`)."""

    token: str | None = None
    """The bearer token every OTLP request must carry; None: none needed (loopback only)."""
    max_body: int = 8 << 20
    """Bytes a request body may have, sent or once inflated."""
    max_queue: int = 256
    """Requests accepted and waiting for the checks, at most."""
    max_queued_spans: int = 200_000
    """Spans accepted and waiting for the checks, at most."""
    retry_after: int = 1
    """Seconds a refused exporter is told to wait."""
    tick: float = 0.05
    """Seconds between two looks for sessions whose grace or idle time is over."""
    limits: Limits = field(default_factory=Limits)


Item = tuple[list[SpanIn], float]
_MERGE_SPANS = 2000
"""Spans of queued requests read together at most (the arrival of the first is theirs)."""


class Receiver:
    """The state behind the routes: the queue, the sessions and the outputs."""

    def __init__(self, config: ServeConfig, checks: SessionChecks, outputs: Outputs) -> None:
        self.config = config
        self.outputs = outputs
        self.metrics = outputs.metrics
        self.sessions = Sessions(config.limits, checks, outputs)
        self.draining = False
        self.queued_spans = 0
        self._late_counted = 0
        send, receive = anyio.create_memory_object_stream[Item](config.max_queue)
        self._send: MemoryObjectSendStream[Item] = send
        self._receive: MemoryObjectReceiveStream[Item] = receive
        self._idle = anyio.Event()
        self.closed = anyio.Event()
        """Set once every session is closed and the outputs are flushed."""

    # -- the evaluation task ------------------------------------------------------------------

    async def work(self) -> None:
        """Run queued spans through their sessions until the queue is closed and empty."""
        metrics = self.metrics
        sessions = self.sessions
        receive = self._receive
        async with receive:
            async for spans, arrival in receive:
                started = time.perf_counter()
                count = len(spans)
                while count < _MERGE_SPANS:
                    # requests that queued up meanwhile go in too: a session's spans then
                    # cross the checks in one batch, so a backlog is read in fewer batches
                    try:
                        more, _ = receive.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    spans = spans + more
                    count += len(more)
                try:
                    sessions.add(spans, arrival)
                except Exception as exc:  # a bug must not stop the server: said, counted
                    metrics.internal_errors.inc()
                    error_line(f"internal error: {type(exc).__name__}: {exc}")
                self.queued_spans -= count
                metrics.queued_spans.set(self.queued_spans)
                if sessions.late != self._late_counted:
                    metrics.late_spans.inc(sessions.late - self._late_counted)
                    self._late_counted = sessions.late
                metrics.check_seconds.observe(time.perf_counter() - started)

    async def sweep(self) -> None:
        """Close sessions whose grace or idle time is over, every ``tick`` seconds."""
        while True:
            await anyio.sleep(self.config.tick)
            self.sessions.sweep()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The lifespan: the evaluation and sweeping tasks while the block runs; then the
        shutdown described in the module's doc."""
        async with anyio.create_task_group() as tg:
            done = anyio.Event()

            async def work() -> None:
                try:
                    await self.work()
                finally:
                    done.set()

            tg.start_soon(work)
            tg.start_soon(self.sweep)
            try:
                yield
            finally:
                self.draining = True
                self._send.close()
                with anyio.CancelScope(shield=True):
                    await done.wait()
                tg.cancel_scope.cancel()
        self.shutdown()

    def shutdown(self) -> None:
        """Close every open session (with its summary) and flush the outputs."""
        self.sessions.close_all("shutdown")
        self.outputs.close()
        self.closed.set()

    # -- the routes ---------------------------------------------------------------------------

    def _refuse(self, status: int, message: str, content_type: str = "text/plain") -> Response:
        headers = {"Retry-After": str(self.config.retry_after)} if status in (429, 503) else None
        return Response(message + "\n", status, headers=headers, media_type=content_type)

    def _authorized(self, request: Request) -> bool:
        token = self.config.token
        if token is None:
            return True
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())

    async def _body(self, request: Request) -> bytes:
        limit = self.config.max_body
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise TooLarge(f"request body of {length} bytes is over the limit of {limit}")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"request body is over the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def export(self, request: Request) -> Response:
        """``POST /v1/traces`` and ``POST /v1/logs``."""
        arrival = time.perf_counter()
        path = request.url.path
        logs = path.endswith("/logs")
        response = await self._export(request, logs, arrival)
        self.metrics.requests.labels(path, str(response.status_code)).inc()
        self.metrics.request_seconds.labels(path).observe(time.perf_counter() - arrival)
        return response

    async def _export(self, request: Request, logs: bool, arrival: float) -> Response:
        if self.draining:
            return self._refuse(503, "shutting down")
        if not self._authorized(request):
            return self._refuse(401, "a bearer token is required (Authorization: Bearer ...)")
        kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind not in (PROTOBUF, JSON):
            return self._refuse(415, f"unsupported Content-Type {kind!r}: {PROTOBUF} or {JSON}")
        try:
            body = await self._body(request)
            data = unpack(body, request.headers.get("content-encoding"), self.config.max_body)
            decode = decode_logs if logs else decode_traces
            spans, rejected = decode(data, kind)
        except TooLarge as exc:
            return self._refuse(413, str(exc))
        except BadRequest as exc:
            return self._refuse(400, str(exc))
        if spans:
            if self.queued_spans + len(spans) > self.config.max_queued_spans:
                return self._refuse(429, "the evaluation queue is full; retry later")
            try:
                self._send.send_nowait((spans, arrival))
            except anyio.WouldBlock:
                return self._refuse(429, "the evaluation queue is full; retry later")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return self._refuse(503, "shutting down")
            self.queued_spans += len(spans)
            self.metrics.queued_spans.set(self.queued_spans)
            self.metrics.spans.inc(len(spans))
        if rejected:
            self.metrics.spans_rejected.inc(rejected)
        what = "log records" if logs else "spans"
        message = f"{rejected} {what} without a trace or span id" if rejected else ""
        return Response(response_body(kind, logs, rejected, message), media_type=kind)

    async def prometheus(self, request: Request) -> Response:
        """``GET /metrics``."""
        self.metrics.sessions_open.set(len(self.sessions))
        return Response(self.metrics.exposition(), media_type=CONTENT_TYPE)

    async def healthz(self, request: Request) -> Response:
        """``GET /healthz``: ``{"status": "ok" | "draining", ...counters}``."""
        body = {
            "status": "draining" if self.draining else "ok",
            "queued_spans": self.queued_spans,
            **self.sessions.stats(),
        }
        return Response(orjson.dumps(body), 503 if self.draining else 200, media_type=JSON)


def create_app(receiver: Receiver) -> Starlette:
    """The ASGI application over ``receiver``."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with receiver.running():
            yield

    post: Callable[[Request], Awaitable[Response]] = receiver.export
    return Starlette(
        routes=[
            Route("/v1/traces", post, methods=["POST"]),
            Route("/v1/logs", post, methods=["POST"]),
            Route("/metrics", receiver.prometheus, methods=["GET"]),
            Route("/healthz", receiver.healthz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
