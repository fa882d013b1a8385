"""A fork server for the docs' commands: ``toolscore ...`` and ``python -m pytest ...`` lines
run in a child forked from a process that has imported toolscore's command line and pytest
once, instead of a fresh interpreter each (which costs a second or more a line on a busy
machine). Each child is a real process running the real entry point: its own cwd, stdout,
stderr and exit status, its atexit handlers run.

Protocol, one JSON line each way: ``{"argv": [...], "cwd": "...", "out": "...", "err": "..."}``
in, ``{"status": N}`` out.
"""

from __future__ import annotations

import atexit
import json
import os
import sys


def _child(argv: list[str], cwd: str, out: str, err: str) -> int:
    os.chdir(cwd)
    sys.path[0] = cwd  # as `python -m pytest` started in cwd would have it
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, out), (2, err)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    try:
        if argv[0] == "toolscore":
            import toolscore.cli

            sys.argv = argv
            toolscore.cli.main()
            return 0
        import pytest

        return int(pytest.main(argv[3:]))
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()


def serve() -> None:
    import pytest  # noqa: F401  (loaded once, before the forks)

    import toolscore.cli

    toolscore.cli._command()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                status = _child(request["argv"], request["cwd"], request["out"], request["err"])
            finally:
                os._exit(status)
        _, wait = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(wait)
        sys.stdout.write(json.dumps({"status": status}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
