"""A trace URL on an HTTP server that stops answering fails after ``--http-timeout`` (an
input error naming the URL, credentials hidden) instead of hanging the run; what was read
before the stall is still evaluated. The servers run on 127.0.0.1, started and stopped here."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from toolscore.dataset import evaluate_dataset
from toolscore.errors import InputError
from toolscore.limits import ReadLimits

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

TIMEOUT = 0.5


@contextmanager
def stalling_server(body: bytes | None, cut: float = 0.5) -> Iterator[str]:
    """A server on 127.0.0.1 that accepts and, with ``body`` None, never answers; else answers
    a HEAD with its length and a GET (of a range) with its bytes up to ``cut`` of ``body``,
    then stalls. Yields its base URL; every connection and the server are closed at the
    end."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    port = listener.getsockname()[1]
    stop = threading.Event()
    conns: list[socket.socket] = []

    def answer(conn: socket.socket) -> None:
        conn.settimeout(0.05)
        request = b""
        while not stop.is_set() and b"\r\n\r\n" not in request:
            try:
                got = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not got:
                return
            request += got
        if body is None or stop.is_set():
            return  # (never answers: the connection stays open until the end)
        # a HEAD: the length; a GET (of a range): its bytes, up to the middle of ``body``
        start, end = 0, len(body) - 1
        for line in request.decode("latin-1").split("\r\n"):
            if line.lower().startswith("range: bytes="):
                first, _, last = line.split("=", 1)[1].partition("-")
                start, end = int(first), min(int(last or end), end)
        payload = body[start : end + 1]
        status = "206 Partial Content" if (start, end) != (0, len(body) - 1) else "200 OK"
        length = len(body) if request.startswith(b"HEAD") else len(payload)
        head = (
            f"HTTP/1.1 {status}\r\nContent-Length: {length}\r\n"
            "Content-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\n\r\n"
        ).encode()
        try:
            if request.startswith(b"HEAD"):
                conn.sendall(head)
            else:  # then nothing more
                conn.sendall(head + payload[: max(0, int(len(body) * cut) - start)])
        except OSError:
            return

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conns.append(conn)
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        for conn in conns:
            conn.close()


def _trace(count: int) -> bytes:
    return b"".join(
        json.dumps({"tool": "search", "args": {"q": "x" * 200, "i": i}}).encode() + b"\n"
        for i in range(count)
    )


def test_a_server_that_never_answers_is_an_input_error() -> None:
    gold: list[dict[str, Any]] = [{"tool": "search"}]
    with stalling_server(None) as base:
        url = base.replace("http://", "http://user:hunter2@") + "/trace.jsonl"
        started = time.monotonic()
        with pytest.raises(InputError) as caught:
            evaluate_dataset(gold, url, engine="inline", limits=ReadLimits(http_timeout=TIMEOUT))
        elapsed = time.monotonic() - started
    assert elapsed < 10 * TIMEOUT + 2
    text = str(caught.value)
    assert "hunter2" not in text
    assert f"{base.replace('http://', 'http://***@')}/trace.jsonl" in text
    assert "--http-timeout" in text


def test_a_body_that_stalls_halfway_keeps_what_came_before() -> None:
    # one trace: the part before the stall is lost in fsspec's first block; the error names
    # the URL and the limit
    gold: list[dict[str, Any]] = [{"tool": "search"}]
    limits = ReadLimits(http_timeout=TIMEOUT)
    with stalling_server(_trace(100)) as base:
        url = base + "/trace.jsonl"
        started = time.monotonic()
        result = evaluate_dataset(gold, url, engine="inline", limits=limits)
        elapsed = time.monotonic() - started
    try:
        (record,) = list(result)
        assert elapsed < 10 * TIMEOUT + 2
        assert record.status == "error", record
        assert record.error is not None and record.error.startswith(f"{url}: no answer for")
        assert "--http-timeout" in record.error
        assert result.input_errors == 1
    finally:
        result.close()
    # many traces, 10 MB cut at 7.5 MB: the traces that arrive whole are evaluated
    lines = [
        json.dumps({"trace_id": f"t{i // 10:05d}", "tool": "search", "args": {"q": "x" * 400}})
        for i in range(20_000)
    ]
    data = "\n".join(lines).encode() + b"\n"
    with stalling_server(data, cut=0.75) as base:
        url = base + "/traces.jsonl"
        result = evaluate_dataset(gold, url, engine="inline", trace_key="trace_id", limits=limits)
    try:
        records = list(result)
        ok = [r for r in records if r.status == "ok"]
        errors = [r for r in records if r.status == "error"]
        assert len(ok) >= (4 << 20) // (len(lines[0]) + 1) // 10 - 1  # (a 4 MB block at least)
        assert [r.trace_id for r in ok] == [f"t{i:05d}" for i in range(len(ok))]
        # (each byte range of the file that stalled says so)
        assert errors and all((r.error or "").startswith(f"{url}: no answer for") for r in errors)
    finally:
        result.close()
