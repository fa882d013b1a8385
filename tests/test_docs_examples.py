"""Every command and Python block of the README and of ``docs/`` runs here, so the docs cannot
drift from the code.

A fenced block in ``sh`` or ``python`` runs unless ``<!-- doc-skip: reason -->`` stands before
it (the reason becomes the skip's). ``<!-- doc-cwd: examples/X -->`` names the folder the
page's following blocks run in: it is copied into a temporary directory the first time a page
uses it, so outputs never land in the repository and a page's blocks see each other's files
(``../shared/corpus``: linked, not copied, and passed over where it is absent).
A shell block runs line by line (a line ending in ``\\`` goes on); a line whose comment says
``exits N`` must exit with N, every other line with 0. A plain ``toolscore ...`` or
``python -m pytest ...`` line (no pipe, redirection, variable or glob) runs in a child forked
from ``tests/_docrun.py``, which has the command line imported already; any other line runs in
bash. A page's Python blocks share one
namespace and run in this process (as ``__main__``); ``<!-- doc-run: pytest -->`` runs the
next block as a test file under pytest instead, ``<!-- doc-run: script -->`` a shell block as
one ``bash -e`` script (for a server started in the background and stopped by the block),
``<!-- doc-run: cluster -->`` a shell block on stand-ins for the machines and the bucket it
names (``tests/_doc_cluster.py``: a page with one runs in the cluster step of ``.ci/run``),
``<!-- doc-run: ctrl-c -->`` each command of a shell block that runs until stopped (``--follow``):
started, a line added to the file it follows once its output settles, then Ctrl-C (SIGINT to
its process group); it must print the added call's finding before, and exit with the
``# exits N`` it states.
Blocks in other languages (json, yaml, text) are data, not commands, and are not run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _cli import cli_env
from _doc_cluster import ClusterPage, loopback

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN = {"sh": "sh", "bash": "sh", "console": "sh", "python": "python", "py": "python"}
MAX_SKIPPED = 3
"""Blocks the suite does not run: the install and test commands, which ``.ci/run`` runs on a
clean clone (the README's, and getting-started's copy of the first)."""

_DIRECTIVE = re.compile(r"<!--\s*doc-(cwd|skip|run):\s*(.*?)\s*-->")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_EXITS = re.compile(r"#.*\bexits\s+(\d+)\b")
_SHELL = re.compile(r"[|&;<>()$`]")


class ForkServer:
    """``tests/_docrun.py`` in a subprocess: runs argv lists in forked children."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("_docrun.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_environment(),
            text=True,
        )

    def run(self, argv: list[str], cwd: Path) -> tuple[int, str, str]:
        out, err = cwd / ".doc-stdout", cwd / ".doc-stderr"
        request = {"argv": argv, "cwd": str(cwd), "out": str(out), "err": str(err)}
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        status = json.loads(self.process.stdout.readline())["status"]
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in (out, err)]
        out.unlink()
        err.unlink()
        return int(status), texts[0], texts[1]

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.process.stdout.close()


@pytest.fixture(scope="module")
def fork_server() -> Iterator[ForkServer]:
    server = ForkServer()
    try:
        yield server
    finally:
        server.close()


def _direct(command: str) -> list[str] | None:
    """The argv of a line the fork server can run (``toolscore ...``, ``python -m pytest
    ...``: nothing for a shell to do), else None."""
    if _SHELL.search(command.split("#", 1)[0]):
        return None
    argv = shlex.split(command, comments=True)
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", command)
    if any(c in unquoted.split("#", 1)[0] for c in "*?[~"):
        return None
    if argv[:1] == ["toolscore"] or argv[:3] == ["python", "-m", "pytest"]:
        return argv
    return None


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    code: str
    cwd: str | None
    skip: str | None
    runner: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` with the directives that apply to each."""
    out: list[Block] = []
    cwd: str | None = None
    skip: str | None = None
    runner: str | None = None
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        for kind, value in _DIRECTIVE.findall(lines[i]):
            if kind == "cwd":
                cwd = value
            elif kind == "skip":
                skip = value
            else:
                runner = value
        fence = _FENCE.match(lines[i])
        if fence is None:
            i += 1
            continue
        indent, lang = fence.groups()
        start = i + 1
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        code = "\n".join(line.removeprefix(indent) for line in lines[start:i]) + "\n"
        out.append(Block(page, start, lang, code, cwd, skip, runner))
        skip = runner = None
        i += 1
    return out


def _commands(code: str) -> list[tuple[str, int]]:
    """A shell block's commands (continued lines joined) with the exit status each expects."""
    out: list[tuple[str, int]] = []
    pending = ""
    for line in code.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = pending + line
        pending = ""
        status = _EXITS.search(command)
        out.append((command, int(status.group(1)) if status else 0))
    return out


def _environment() -> dict[str, str]:
    env = cli_env()
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def _run_shell(block: Block, cwd: Path, server: ForkServer) -> None:
    for command, expected in _commands(block.code):
        argv = _direct(command)
        if argv is not None:
            status, out, err = server.run(argv, cwd)
        else:
            status, out, err = _bash(["-c", command], cwd)
        assert status == expected, (
            f"{block.where}: `{command}` exited {status}, not {expected}\n"
            f"{out[-3000:]}\n{err[-3000:]}"
        )


def _bash(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """bash with ``args``, in a process group of its own that is killed when it is done (a
    server a script started in the background never outlives it)."""
    process = subprocess.Popen(
        ["bash", *args], cwd=cwd, env=_environment(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
    return process.returncode, out, err


DEFAULT_SERVE = "127.0.0.1:4318"
"""``toolscore serve``'s default address: a block that uses it holds a lock while it runs, so
two pages' blocks never serve there at once (the suite runs on several workers)."""


def _run_script(block: Block, cwd: Path) -> None:
    with contextlib.ExitStack() as stack:
        if DEFAULT_SERVE in block.code:
            lock = stack.enter_context(
                open(Path(tempfile.gettempdir()) / "toolscore-doc-4318.lock", "w")
            )
            fcntl.flock(lock, fcntl.LOCK_EX)
        status, _, err = _bash(["-e", "-c", block.code], cwd)
    assert status == 0, f"{block.where}: exited {status}\n{err[-3000:]}"


def _run_until_ctrl_c(block: Block, cwd: Path) -> None:
    for command, expected in _commands(block.code):
        followed = cwd / shlex.split(command)[2]  # toolscore watch FILE --follow ...
        out = cwd / ".doc-stdout"
        with out.open("wb") as sink:
            process = subprocess.Popen(
                ["bash", "-c", command], cwd=cwd, env=_environment(), stdin=subprocess.DEVNULL,
                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            try:
                _settle(out)
                with followed.open("ab") as f:  # a call that comes while it follows, and fails
                    f.write(b'{"tool": "late_tool", "args": {}, "error": "late failure"}\n')
                _settle(out, after="late_tool")
                os.killpg(process.pid, signal.SIGINT)
                status = process.wait(timeout=60)
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        text = out.read_text(encoding="utf-8", errors="replace")
        assert status == expected, f"{block.where}: `{command}` exited {status}\n{text[-3000:]}"
        assert "late_tool" in text, f"{block.where}: the line added was not read\n{text[-3000:]}"


def _settle(out: Path, after: str | None = None) -> None:
    """Until ``out`` holds output (with ``after`` in it) that has not grown for half a second."""
    deadline = time.monotonic() + 60
    size = -1
    while time.monotonic() < deadline:
        text = out.read_bytes()
        if text and len(text) == size and (after is None or after.encode() in text):
            return
        size = len(text)
        time.sleep(0.5)
    raise AssertionError(f"no settled output in {out}")


def _run_pytest(block: Block, cwd: Path, server: ForkServer) -> None:
    test_file = cwd / f"test_doc_block_{block.line}.py"
    test_file.write_text(block.code, encoding="utf-8")
    argv = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file.name]
    status, out, _ = server.run(argv, cwd)
    assert status == 0, f"{block.where}: pytest failed\n{out[-4000:]}"


SHARED = "../shared/"
"""A ``doc-cwd`` under it names read-only inputs beside the repository (the corpus): its
blocks run where it is present, in a folder of links to its files (never copies), and are
passed over where it is absent."""


def _absent(folder: str | None) -> bool:
    return folder is not None and folder.startswith(SHARED) and not (ROOT / folder).is_dir()


def _copy(folder: str | None, tmp: Path, copies: dict[str | None, Path]) -> Path:
    if folder not in copies:
        target = tmp / (folder or "root").replace("/", "_").replace("..", "up")
        if folder is None:
            target.mkdir()
        elif folder.startswith(SHARED):
            target.mkdir()
            for source in (ROOT / folder).iterdir():
                (target / source.name).symlink_to(source)
        else:
            source = ROOT / folder
            assert source.is_dir(), f"doc-cwd names a folder that does not exist: {folder}"
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        copies[folder] = target
    return copies[folder]


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in RUN]


RUNNABLE = [page for page in PAGES if any(b.skip is None for b in _runnable(page))]
"""The pages with a block to run (architecture, migration and the API reference have none)."""


def _param(page: Path) -> Any:
    on_cluster = any(b.runner == "cluster" for b in _runnable(page))
    return pytest.param(
        page,
        id=str(page.relative_to(ROOT)),
        marks=[pytest.mark.cluster] if on_cluster else [],
    )


@pytest.mark.parametrize("page", [_param(page) for page in RUNNABLE])
def test_page_blocks_run(
    page: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fork_server: ForkServer,
) -> None:
    """Each runnable block of the page runs from its example folder and succeeds."""
    copies: dict[str | None, Path] = {}
    namespace: dict[str, object] = {"__name__": "__main__"}
    ran = 0
    cluster: ClusterPage | None = None
    try:
        for block in _runnable(page):
            if block.skip is not None or _absent(block.cwd):
                continue
            cwd = _copy(block.cwd, tmp_path, copies)
            if block.runner == "pytest":
                _run_pytest(block, cwd, fork_server)
            elif block.runner == "script":
                _run_script(block, cwd)
            elif block.runner == "ctrl-c":
                _run_until_ctrl_c(block, cwd)
            elif block.runner == "cluster":
                cluster = cluster or ClusterPage(cwd, _environment())
                for command, expected in _commands(block.code):
                    cluster.run(command, expected, block.where)
                listening = cluster.listening()
                assert listening and all(map(loopback, listening)), listening
            elif RUN[block.lang] == "sh":
                _run_shell(block, cwd, fork_server)
            else:
                monkeypatch.chdir(cwd)
                exec(compile(block.code, block.where, "exec"), namespace)
            ran += 1
    finally:
        if cluster is not None:
            cluster.close()
    capsys.readouterr()
    assert ran


def test_few_blocks_are_skipped_and_each_says_why() -> None:
    skipped = [b for page in PAGES for b in _runnable(page) if b.skip is not None]
    assert all(b.skip for b in skipped), [b.where for b in skipped if not b.skip]
    assert len(skipped) <= MAX_SKIPPED, [f"{b.where}: {b.skip}" for b in skipped]


def test_every_door_has_an_example_folder_with_its_inputs() -> None:
    for folder in ("guardrails", "dataset", "watch", "serve", "python", "pytest_plugin"):
        files = [p for p in (ROOT / "examples" / folder).iterdir() if p.name != "README.md"]
        assert files, folder
    assert (ROOT / "examples" / "github_workflow" / "toolscore.yml").is_file()


def test_the_ci_runs_the_readme_commands_verbatim() -> None:
    """``.ci/run`` greps the README for its commands (install, test extra, tests, cluster
    tests); here the README's first block is the install command and the test extra's line
    comes before the tests."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r'^(?:INSTALL|TEST_EXTRA|TESTS|CLUSTER_TESTS)="(.*)"$', script, re.M)
    assert len(commands) == 4
    assert all(c in readme for c in commands)
    assert "pip install -q -e . &&" in commands[0] and "[test]" not in commands[0]
    assert "mkdocs build --strict" in script
