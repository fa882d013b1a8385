"""Report paths: an output that is an input is refused; devices, FIFOs and symbolic links are
written through; every write error names the user's path (the real CLI, real files)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import EXAMPLE, cli_env, run_cli
from _mounts import tiny_tmpfs


@pytest.fixture
def example(tmp_path: Path) -> Path:
    for name in ("gold.json", "trace.json", "forbidden.json"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return tmp_path


def _eval(d: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "eval", "gold.json", "trace.json", "--forbidden", "forbidden.json", *extra, cwd=d
    )


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}


@pytest.mark.parametrize(
    ("option", "target"),
    [
        ("-o", "trace.json"),
        ("-o", "gold.json"),
        ("-o", "forbidden.json"),
        ("--markdown", "trace.json"),
        ("--html", "gold.json"),
        ("-o", "./sub/../trace.json"),
    ],
)
def test_an_output_that_is_an_input_is_refused(example: Path, option: str, target: str) -> None:
    (example / "sub").mkdir()
    before = _snapshot(example)
    proc = _eval(example, option, target)
    assert proc.returncode == 2
    assert f"{option} {target} is the " in proc.stderr
    assert "refusing to overwrite it" in proc.stderr
    assert _snapshot(example) == before  # nothing written, nothing left behind


def test_a_link_to_an_input_is_refused(example: Path) -> None:
    os.link(example / "trace.json", example / "hard.json")
    (example / "soft.json").symlink_to(example / "gold.json")
    before = (example / "trace.json").read_bytes(), (example / "gold.json").read_bytes()
    for target in ("hard.json", "soft.json"):
        proc = _eval(example, "-o", target)
        assert proc.returncode == 2, proc.stderr
        assert "refusing to overwrite it" in proc.stderr
    assert (example / "soft.json").is_symlink()
    after = (example / "trace.json").read_bytes(), (example / "gold.json").read_bytes()
    assert after == before


def test_two_outputs_on_one_file_are_refused(example: Path) -> None:
    proc = _eval(example, "-o", "r.json", "--markdown", "./r.json")
    assert proc.returncode == 2
    assert "--markdown ./r.json is the output of -o r.json" in proc.stderr
    assert not (example / "r.json").exists()


def test_watch_findings_on_the_trace_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"tool": "a"}\n', encoding="utf-8")
    proc = run_cli("watch", str(trace), "--findings", str(trace))
    assert proc.returncode == 2
    assert "refusing to overwrite it" in proc.stderr
    assert trace.read_text(encoding="utf-8") == '{"tool": "a"}\n'


def test_a_symlink_keeps_being_a_link(example: Path) -> None:
    (example / "reports").mkdir()
    (example / "link.json").symlink_to("reports/real.json")  # dangling until written
    (example / "link.md").symlink_to("reports/real.md")
    (example / "reports" / "real.md").write_text("old", encoding="utf-8")
    proc = _eval(example, "-o", "link.json", "--markdown", "link.md")
    assert proc.returncode == 0, proc.stderr
    assert (example / "link.json").is_symlink() and (example / "link.md").is_symlink()
    record = json.loads((example / "reports" / "real.json").read_text(encoding="utf-8"))
    assert record["summary"]["trace_calls_count"] == 5
    assert (example / "reports" / "real.md").read_text(encoding="utf-8").startswith("# Toolscore")
    assert (example / "reports" / "real.json").stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert not [p for p in (example / "reports").iterdir() if p.name.startswith(".toolscore-")]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as fh:
            into.append(fh.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_fifos_are_written_through(example: Path) -> None:
    os.mkfifo(example / "report.fifo")
    os.mkfifo(example / "md.fifo")
    got: list[bytes] = []
    md: list[bytes] = []
    readers = [_read_fifo(example / "report.fifo", got), _read_fifo(example / "md.fifo", md)]
    proc = _eval(example, "-o", "report.fifo", "--markdown", "md.fifo")
    for reader in readers:
        reader.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got[0])["summary"]["trace_calls_count"] == 5
    assert md[0].startswith(b"# Toolscore")
    assert (example / "report.fifo").is_fifo()
    assert not [p for p in example.iterdir() if p.name.startswith(".toolscore-")]


def test_a_device_node_stays_a_device(example: Path) -> None:
    if os.geteuid() == 0:  # a null device of the test's own, in its directory
        null = example / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        null = Path("/dev/null")
    before = set(os.listdir(null.parent))
    proc = _eval(example, "-o", str(null), "--html", str(null))
    assert proc.returncode == 0, proc.stderr
    assert null.is_char_device()
    assert not [n for n in set(os.listdir(null.parent)) - before if n.startswith(".toolscore-")]


def test_a_directory_is_named_as_given(example: Path) -> None:
    (example / "out").mkdir()
    proc = _eval(example, "-o", "out")
    assert proc.returncode == 2
    assert (
        proc.stderr.strip() == "toolscore: error: cannot write the JSON report out: Is a directory"
    )


def test_no_space_names_the_users_path(example: Path) -> None:
    temp = example / "tmp"
    temp.mkdir()
    env = cli_env()
    env["TMPDIR"] = str(temp)
    proc = subprocess.run(
        [sys.executable, "-m", "toolscore", "eval", "gold.json", "trace.json", "-o", "/dev/full"],
        cwd=example, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        "toolscore: error: cannot write the JSON report /dev/full: No space left on device"
        in proc.stderr
    )
    assert list(temp.iterdir()) == []  # the report built in the temporary directory is gone


def test_a_full_file_system_names_the_users_path(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "small") as mount:
        gold = tmp_path / "gold.json"
        gold.write_text('[{"tool": "a"}]', encoding="utf-8")
        trace = tmp_path / "trace.jsonl"
        line = json.dumps({"tool": "a", "args": {"text": "x" * 500}}) + "\n"
        trace.write_text(line * 2000, encoding="utf-8")  # a report of about 1 MB
        proc = run_cli("eval", str(gold), str(trace), "-o", str(mount / "r.json"))
        assert proc.returncode == 2
        assert f"{mount / 'r.json'}: No space left on device" in proc.stderr
        assert ".part" not in proc.stderr
        assert os.listdir(mount) == []


def test_an_unprivileged_user_writes_to_dev_null_and_stdout() -> None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root (to switch to nobody) and setpriv")
    if not Path("/dev/null").is_char_device():
        pytest.skip("/dev/null was replaced by a regular file on this machine")
    work = Path(tempfile.mkdtemp())
    try:
        work.chmod(0o755)
        for name in ("gold.json", "trace.json"):
            shutil.copy(EXAMPLE / name, work / name)
            (work / name).chmod(0o644)
        base = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
        base += ["-m", "toolscore", "eval", "gold.json", "trace.json"]
        env = cli_env()
        env["TMPDIR"] = "/tmp"
        probe = subprocess.run([*base[:5], "-c", "import toolscore"], env=env, check=False)
        if probe.returncode != 0:
            pytest.skip("this interpreter is not readable by an unprivileged user")
        null = subprocess.run(
            [*base, "-o", "/dev/null"], cwd=work, env=env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert null.returncode == 0, null.stderr
        out = subprocess.run(
            [*base, "-o", "/dev/stdout"], cwd=work, env=env,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout[: out.stdout.index("\n}\n") + 3])
        assert report["summary"]["trace_calls_count"] == 5
    finally:
        shutil.rmtree(work)


@pytest.mark.parametrize("option", ["-o", "--per-trace", "--markdown"])
@pytest.mark.parametrize("glob", [False, True])
def test_an_output_inside_a_dataset_directory_is_refused(
    tmp_path: Path, option: str, glob: bool
) -> None:
    """A report written into the traces (or gold) directory would be read as a trace by the
    next run, or overwrite one: refused before anything runs, and nothing there changes."""
    traces, gold = tmp_path / "traces", tmp_path / "gold"
    traces.mkdir()
    gold.mkdir()
    call = {"tool": "search", "args": {}}
    (traces / "a.jsonl").write_text(json.dumps(call) + "\n")
    (gold / "a.json").write_text(json.dumps([call]))
    before = {p: p.read_bytes() for p in (*traces.iterdir(), *gold.iterdir())}
    source = str(traces / "*.jsonl") if glob else str(traces)
    for where in (traces, gold):
        target = where / "a.jsonl" if where is traces else where / "report.out"
        args = ["eval", str(gold), source, "-o", str(tmp_path / "r.json")]
        if option == "-o":
            args[-1] = str(target)
        else:
            args += [option, str(target)]
        proc = run_cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert f"{option} {target} is inside" in proc.stderr and "an input" in proc.stderr
    assert {p: p.read_bytes() for p in (*traces.iterdir(), *gold.iterdir())} == before


@settings(max_examples=50, deadline=None)
@given(session=st.none() | st.text(), message=st.text(), index=st.none() | st.integers(0, 9))
def test_findings_lines_stamp_each_finding_and_name_its_session(
    session: str | None, message: str, index: int | None
) -> None:
    """A live door's ``--findings`` line: the finding's own record, after its time (ISO 8601
    UTC) and, for a session's, its session, whatever the session's name holds."""
    from datetime import datetime, timezone

    from _cli import assert_stamped
    from toolscore.calls import Finding
    from toolscore.reports.json import findings_lines

    found = [Finding("policy", "forbidden_call", "error", message, index, "rm")] * 2
    since = datetime.now(timezone.utc)
    data = findings_lines(found, session)
    assert data.endswith(b"\n") and data.count(b"\n") == 2
    records = [json.loads(line) for line in data.splitlines()]
    assert_stamped(records, since)
    first = ["time"] if session is None else ["time", "session"]
    for record in records:
        assert list(record)[: len(first)] == first
        assert record.get("session") == session
        rest = {k: v for k, v in record.items() if k not in ("time", "session")}
        assert rest == found[0].to_json()
