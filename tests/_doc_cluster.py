"""The stand-in machines of the docs' cluster blocks (``<!-- doc-run: cluster -->``).

A block that says how to run toolscore on a Dask cluster of several machines over TLS, with
its inputs in a bucket, runs here on this machine, on loopback only:

- the certificate files it names (``ca.pem``, ``scheduler.pem``/``.key``, ``worker.pem``/
  ``.key``, ``client.pem``/``.key``) are written beside it, from a certificate authority made
  for the page (``distributed.security.Security.temporary()``);
- ``s3://bucket`` is a moto S3 server on 127.0.0.1 holding the page folder's dataset
  (``gold.jsonl``; ``traces.jsonl`` as ``traces/run-1.jsonl`` and as ``run.jsonl``), reached
  through the standard ``AWS_*`` variables, which every process of the page gets;
- the block's private addresses (``10.0.0.5``, the scheduler's; ``10.0.0.6``, a worker's)
  become 127.0.0.1 and its ports 8786 and 8787 free ones; nothing else of a command changes;
- a ``dask scheduler`` or ``dask worker`` line starts in the background and runs until the
  page ends; ``export`` lines set the page's environment; every other line runs in bash and
  must exit 0 (or the ``# exits N`` it states).

Every process listens on 127.0.0.1 only (:meth:`ClusterPage.listening` checks it); every one
is stopped when the page ends.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import time
from pathlib import Path

HOSTS = ("10.0.0.5", "10.0.0.6")
PORTS = ("8786", "8787")
CERTS = {
    "ca.pem": "tls_ca_file",
    "scheduler.pem": "tls_scheduler_cert",
    "scheduler.key": "tls_scheduler_key",
    "worker.pem": "tls_worker_cert",
    "worker.key": "tls_worker_key",
    "client.pem": "tls_client_cert",
    "client.key": "tls_client_key",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ClusterPage:
    """The machines, bucket and environment the cluster blocks of one page share."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        from distributed.security import Security
        from moto.server import ThreadedMotoServer

        self.cwd = cwd
        self.env = dict(env)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        security = Security.temporary()
        for name, attr in CERTS.items():
            (cwd / name).write_text(getattr(security, attr), encoding="utf-8")
        self.ports = {port: str(free_port()) for port in PORTS}
        s3_port = free_port()
        self.s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=s3_port, verbose=False)
        self.s3.start()
        self.env.update(
            AWS_ENDPOINT_URL=f"http://127.0.0.1:{s3_port}",
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION="us-east-1",
        )
        self._fill_bucket()

    def _fill_bucket(self) -> None:
        import boto3

        s3 = boto3.client(
            "s3",
            endpoint_url=self.env["AWS_ENDPOINT_URL"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        s3.create_bucket(Bucket="bucket")
        traces = (self.cwd / "traces.jsonl").read_bytes()
        s3.put_object(
            Bucket="bucket", Key="gold.jsonl", Body=(self.cwd / "gold.jsonl").read_bytes()
        )
        s3.put_object(Bucket="bucket", Key="traces/run-1.jsonl", Body=traces)
        s3.put_object(Bucket="bucket", Key="run.jsonl", Body=traces)

    def local(self, command: str) -> str:
        """``command`` on this machine: its private addresses and ports made loopback ones."""
        for host in HOSTS:
            command = command.replace(host, "127.0.0.1")
        for port, free in self.ports.items():
            command = re.sub(rf"\b{port}\b", free, command)
        return command

    def run(self, command: str, expected: int, where: str) -> None:
        """One command of a block (see the module docstring)."""
        command = self.local(command)
        argv = shlex.split(command, comments=True)
        if argv[:2] in (["dask", "scheduler"], ["dask", "worker"]):
            log = self.cwd / f".{argv[1]}-{len(self.processes)}.log"
            self.logs.append(log)
            with log.open("wb") as out:
                self.processes.append(
                    subprocess.Popen(
                        argv,
                        cwd=self.cwd,
                        env=self.env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
            if argv[1] == "scheduler":
                self._wait_for_port(int(self.ports["8786"]), self.processes[-1], where)
            return
        if argv[:1] == ["export"]:
            for assignment in argv[1:]:
                name, _, value = assignment.partition("=")
                self.env[name] = value
            return
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == expected, (
            f"{where}: `{command}` exited {done.returncode}, not {expected}\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n{self.log_tails()}"
        )

    def _wait_for_port(self, port: int, process: subprocess.Popen[bytes], where: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.1)
        raise AssertionError(
            f"{where}: the scheduler did not listen on 127.0.0.1:{port}\n{self.log_tails()}"
        )

    def log_tails(self) -> str:
        """The end of what each background process printed (for a failure's message)."""
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}" for log in self.logs
        )

    def listening(self) -> list[str]:
        """The addresses the page's processes listen on (TCP, from ``/proc/net/tcp*``)."""
        inodes: set[str] = set()
        for process in self.processes:
            for pid in [process.pid, *_children(process.pid)]:
                try:
                    fds = os.listdir(f"/proc/{pid}/fd")
                except OSError:
                    continue
                for fd in fds:
                    try:
                        target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    except OSError:
                        continue
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
        found: list[str] = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table, encoding="ascii") as f:
                next(f)
                for row in f:
                    cols = row.split()
                    if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                        found.append(_address(cols[1]))
        return found

    def close(self) -> None:
        for process in reversed(self.processes):  # the workers, then the scheduler
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.s3.stop()


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (a worker's nanny and its worker processes)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children", encoding="ascii") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        out.extend(kids)
        todo.extend(kids)
    return out


def _address(hex_address: str) -> str:
    """``/proc/net/tcp``'s ``0100007F:1F90`` as ``127.0.0.1:8080`` (IPv6: the hex kept)."""
    host, port = hex_address.split(":")
    if len(host) == 8:
        return f"{'.'.join(str(b) for b in bytes.fromhex(host)[::-1])}:{int(port, 16)}"
    return f"[{host}]:{int(port, 16)}"


def loopback(address: str) -> bool:
    """Whether a listening address from :meth:`ClusterPage.listening` is a loopback one."""
    if address.startswith("["):
        return address.startswith("[00000000000000000000000001000000]")
    return address.startswith("127.")
