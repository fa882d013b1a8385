"""A local stub of the OpenAI chat completions API: it asks for the tool calls it is given,
then answers in text. Serves on 127.0.0.1, started and stopped by the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from _http import Quiet, stub_server


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
    """Yields the stub's base URL (``.../v1``): request N is answered with turn N's tool
    calls, then with a final text answer (``done``)."""
    served = {"n": 0}

    class Handler(Quiet):
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
            self.reply(body)

    with stub_server(Handler) as url:
        yield f"{url}/v1"
