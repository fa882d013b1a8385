"""The user check of examples/alert_check/ under evaluate_stream, watch and evaluate, posting
its alerts to a real HTTP server on 127.0.0.1 that the test starts and stops."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from toolscore import evaluate, evaluate_stream, watch
from toolscore.calls import Finding

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "alert_check"
sys.path.insert(0, str(EXAMPLE))

from alert_check import AlertCheck  # noqa: E402

FORBIDDEN = {"run_shell", "delete_repository"}
CALLS = [
    {"tool": "search", "args": {"q": "weather"}},
    {"tool": "run_shell", "args": {"cmd": "rm -rf /"}},
    {"tool": "fetch", "args": {"url": "https://example.com"}},
    {"tool": "delete_repository", "args": {"name": "prod"}},
]
GOLD = [{"tool": "search", "args": {"q": "weather"}}, {"tool": "fetch"}]


@pytest.fixture
def alerts() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/alerts", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CALLS))
    return path


EXPECTED_ALERTS = [{"call": 2, "tool": "run_shell"}, {"call": 4, "tool": "delete_repository"}]
EXPECTED_LINES = ["call 2 run_shell: alert sent", "call 4 delete_repository: alert sent"]


@pytest.mark.anyio
async def test_alerts_under_evaluate_stream(
    tmp_path: Path, alerts: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = alerts
    seen: list[Finding] = []

    async def sink(found: list[Finding]) -> None:
        seen.extend(found)

    result = await evaluate_stream(
        GOLD, _trace(tmp_path), checks=[AlertCheck(url, FORBIDDEN)], on_finding=sink
    )
    assert received == EXPECTED_ALERTS
    assert [f.message for f in seen if f.check == "alert"] == EXPECTED_LINES
    assert [f.message for f in result.findings if f.check == "alert"] == EXPECTED_LINES
    assert result.metrics["alert_metrics"] == {"alerts_sent": 2}
    lines = [message for _, message in result.behavior_findings()]
    assert lines[-2:] == EXPECTED_LINES  # the console, Markdown and HTML reports' lines


@pytest.mark.anyio
async def test_alerts_under_watch(tmp_path: Path, alerts: tuple[str, list[dict[str, Any]]]) -> None:
    url, received = alerts
    found: list[str] = []
    async with watch(_trace(tmp_path), gold=GOLD, checks=[AlertCheck(url, FORBIDDEN)]) as run:
        async for finding in run:
            if finding.check == "alert":
                # posted before the finding was reported
                assert {"call": finding.call_index + 1, "tool": finding.tool} in received
                found.append(finding.message)
    assert found == EXPECTED_LINES
    assert received == EXPECTED_ALERTS
    assert run.result.metrics["alert_metrics"] == {"alerts_sent": 2}


def test_alerts_under_evaluate(alerts: tuple[str, list[dict[str, Any]]]) -> None:
    url, received = alerts
    result = evaluate(GOLD, CALLS, checks=[AlertCheck(url, FORBIDDEN)])
    assert received == EXPECTED_ALERTS
    assert [f.message for f in result.findings if f.check == "alert"] == EXPECTED_LINES


def test_a_check_without_feed_is_refused() -> None:
    with pytest.raises(TypeError, match="feed"):
        evaluate(GOLD, CALLS, checks=[object()])
