"""A fork server for the docs' commands: ``toolscore ...`` and ``python -m pytest ...`` lines
run in a child forked from a process that has imported toolscore's command line and pytest
once, instead of a fresh interpreter each (which costs a second or more a line on a busy
machine). Each child is a real process (``multiprocessing``'s fork) running the real entry
point: its own cwd, stdout, stderr and exit status; ``TMPDIR`` points into its cwd (a
temporary copy), so what a run leaves there goes with it.

Protocol, one JSON line each way: ``{"argv": [...], "cwd": "...", "out": "...", "err": "..."}``
in, ``{"status": N}`` out.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import sys
import tempfile
from contextlib import redirect_stdout


def _child(argv: list[str], cwd: str, out: str, err: str) -> None:
    os.chdir(cwd)
    os.makedirs(".tmp", exist_ok=True)
    os.environ["TMPDIR"] = os.path.abspath(".tmp")
    tempfile.tempdir = None
    sys.path[0] = cwd  # as `python -m pytest` started in cwd would have it
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    if argv[0] == "toolscore":
        import toolscore.cli

        sys.argv = argv
        toolscore.cli.main()  # exits with the command's status
    import pytest

    sys.exit(int(pytest.main(argv[3:])))


def serve() -> None:
    import pytest  # noqa: F401  (loaded once, before the forks)

    import toolscore.cli

    with redirect_stdout(io.StringIO()):  # loads every command's module
        toolscore.cli.main(["--help"], standalone_mode=False)
    fork = multiprocessing.get_context("fork")
    for line in sys.stdin:
        request = json.loads(line)
        child = fork.Process(
            target=_child, args=(request["argv"], request["cwd"], request["out"], request["err"])
        )
        child.start()
        child.join()
        sys.stdout.write(json.dumps({"status": child.exitcode}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
