"""A local stub of the OpenAI chat completions API: it asks for the tool calls it is given,
then answers in text. Serves on 127.0.0.1, started and stopped by the test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _completion(message: dict[str, Any], reason: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": "stub-model",
            "choices": [{"index": 0, "message": message, "finish_reason": reason}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


@contextmanager
def model_stub(turns: list[list[tuple[str, dict[str, Any]]]]) -> Iterator[str]:
    """Yields the stub's base URL (``.../v1``). Each request with no tool result yet in its
    messages... simpler: request N gets turn N's tool calls, then a final text answer."""
    served = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            n = served["n"]
            served["n"] = n + 1
            if n < len(turns):
                calls = [
                    {
                        "id": f"call_{n}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for i, (name, args) in enumerate(turns[n])
                ]
                body = _completion(
                    {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
                )
            else:
                body = _completion({"role": "assistant", "content": "done"}, "stop")
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
