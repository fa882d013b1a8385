"""Bad input and overload: 400/413/429/503 with clear messages, and the server goes on."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import pytest
from _server import Running, get, post, serve
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from toolscore.serve.app import ServeConfig
from toolscore.serve.sessions import Limits

MAX_BODY = 4096
PROTO = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}


def request(n: int, trace: bytes = b"\x01" * 16, tool: str = "search") -> bytes:
    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add()
    for i in range(n):
        span = spans.spans.add(trace_id=trace, span_id=(i + 1).to_bytes(8, "big"))
        span.parent_span_id = b"\x09" * 8
        for key, value in (("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", tool)):
            attr = span.attributes.add(key=key)
            attr.value.string_value = value
    return req.SerializeToString()


VALID = request(3)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with serve(config=ServeConfig(max_body=MAX_BODY), limits=Limits(grace=60)) as srv:
        yield srv


def still_up(srv: Running) -> None:
    assert get(f"{srv.url}/healthz")[0] == 200
    assert post(f"{srv.url}/v1/traces", VALID, PROTO)[0] == 200


FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(cut=st.integers(1, len(VALID) - 1), noise=st.binary(max_size=64))
def test_malformed_protobuf(server: Running, cut: int, noise: bytes) -> None:
    status, body, _ = post(f"{server.url}/v1/traces", VALID[:cut] + noise, PROTO)
    assert status in (200, 400)
    if status == 400:
        assert body.startswith(b"malformed protobuf ExportTraceServiceRequest")
    still_up(server)


@FUZZ
@given(
    doc=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "resourceSpans",
                        "scopeSpans",
                        "spans",
                        "attributes",
                        "traceId",
                        "spanId",
                        "key",
                        "value",
                        "resource",
                    ]
                ),
                inner,
                max_size=3,
            )
        ),
        max_leaves=12,
    ),
    junk=st.binary(max_size=8),
)
def test_malformed_json(server: Running, doc: object, junk: bytes) -> None:
    data = json.dumps(doc).encode() + junk
    status, body, _ = post(f"{server.url}/v1/traces", data, JSON)
    assert status in (200, 400), body
    if status == 400:
        assert body.startswith((b"malformed JSON at byte", b"expected", b"'", b"each of"))
    still_up(server)


@FUZZ
@given(data=st.binary(max_size=200), cut=st.integers(1, 40))
def test_malformed_gzip(server: Running, data: bytes, cut: int) -> None:
    headers = {**PROTO, "Content-Encoding": "gzip"}
    status, body, _ = post(f"{server.url}/v1/traces", data, headers)
    assert status == 400 and b"gzip body" in body
    truncated = gzip.compress(VALID)[:-cut]
    status, body, _ = post(f"{server.url}/v1/traces", truncated, headers)
    assert status == 400 and body.startswith((b"truncated gzip body", b"corrupt gzip body"))
    still_up(server)


@FUZZ
@given(extra=st.integers(1, 50_000))
def test_oversized_bodies(server: Running, extra: int) -> None:
    status, body, _ = post(f"{server.url}/v1/traces", b"\0" * (MAX_BODY + extra), PROTO)
    assert status == 413 and b"over the limit of 4096" in body
    bomb = gzip.compress(b" " * (MAX_BODY + extra))
    status, body, _ = post(f"{server.url}/v1/traces", bomb, {**JSON, "Content-Encoding": "gzip"})
    assert status == 413 and b"inflates to over the limit" in body
    still_up(server)


def test_over_capacity_429_with_retry_after_and_recovery() -> None:
    with serve(config=ServeConfig(max_queued_spans=10), limits=Limits(grace=60)) as srv:
        status, body, headers = post(f"{srv.url}/v1/traces", request(11), PROTO)
        assert status == 429 and headers["retry-after"] == "1" and b"retry later" in body
        assert post(f"{srv.url}/v1/traces", request(10), PROTO)[0] == 200
        srv.wait(lambda: srv.metrics()["toolscore_calls_total"] == 10)
        assert srv.metrics()["toolscore_requests_total{code=429,path=/v1/traces}"] == 1


def test_shutting_down_503_with_retry_after() -> None:
    with serve() as srv:
        srv.receiver.draining = True  # what the lifespan's shutdown sets first
        status, _, headers = post(f"{srv.url}/v1/traces", VALID, PROTO)
        assert status == 503 and headers["retry-after"] == "1"
        assert get(f"{srv.url}/healthz")[0] == 503
        srv.receiver.draining = False
