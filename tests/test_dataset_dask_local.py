"""``--engine dask`` without ``--scheduler``: the local cluster it starts is this run's alone
(loopback addresses only, TLS with a key made for the run, no dashboard unless asked)."""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from toolscore.dataset import evaluate_dataset
from toolscore.dataset._dask import connect

pytestmark = pytest.mark.cluster  # (their own step of .ci/run: python -m pytest -q -m cluster -n 2)

distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")
psutil = pytest.importorskip("psutil")


def _listening(pid: int) -> list[tuple[str, int]]:
    """The addresses that process ``pid`` and its children listen on."""
    me = psutil.Process(pid)
    found = []
    for process in [me, *me.children(recursive=True)]:
        for conn in process.net_connections(kind="inet"):
            if conn.status == psutil.CONN_LISTEN:
                found.append((conn.laddr.ip, conn.laddr.port))
    return found


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, http.client.HTTPException):  # (not an HTTP server)
        return 0


def test_the_local_cluster_admits_only_this_run() -> None:
    before = set(_listening(os.getpid()))
    client = connect(None)
    try:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3  # (this run's client works)
        # a client without the run's credentials cannot connect: plain TCP, TLS without a
        # certificate, or TLS with a certificate authority of its own (another process, as
        # another user would be; a failed Client in this one can deadlock the next)
        port = address.rsplit(":", 1)[1]
        for attempt in (
            f"Client('tcp://127.0.0.1:{port}', timeout='3s')",
            f"Client('{address}', timeout='3s')",
            f"Client('{address}', security=Security.temporary(), timeout='3s')",
        ):
            code = f"from distributed import Client, Security\n{attempt}\nprint('connected')"
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
            )
            assert out.returncode != 0 and "connected" not in out.stdout, attempt
            assert "Error" in out.stderr, out.stderr[-2000:]
        # scheduler, nannies and workers listen on loopback addresses only
        listening = set(_listening(os.getpid())) - before
        assert len(listening) >= 3
        assert all(ipaddress.ip_address(ip).is_loopback for ip, _ in listening), listening
        # no dashboard, no pages of workers, logs or call stacks: the health check alone
        # (every HTTP server of the cluster: the scheduler's, the nannies', the workers')
        web = [port for _, port in listening if _status(f"http://127.0.0.1:{port}/health") == 200]
        assert web and 8787 not in web
        for port in web:
            for page in ("/status", "/info/main/workers.html", "/json/identity.json"):
                assert _status(f"http://127.0.0.1:{port}{page}") == 404, (port, page)
    finally:
        client.close()


def test_a_dataset_on_the_local_cluster(tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    lines = [{"trace_id": f"t{i}", "tool": "search", "args": {"q": str(i)}} for i in range(6)]
    traces.write_text("".join(json.dumps(line) + "\n" for line in lines))
    gold: list[dict[str, Any]] = [{"tool": "search"}]
    result = evaluate_dataset(gold, str(traces), engine="dask", trace_key="trace_id")
    try:
        assert result.aggregate.traces == 6
    finally:
        result.close()
