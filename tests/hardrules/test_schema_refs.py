"""What a tool schema may reach and run: ``$ref`` only beside the schema file unless the rule
file's ``schema_refs`` allows more (a real server on 127.0.0.1 that must not be contacted),
and ``pattern`` on RE2 (a catastrophic pattern finishes; one RE2 cannot run is refused)."""

from __future__ import annotations

import json
import pickle
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from _cli import run_cli
from toolscore import evaluate
from toolscore.errors import RuleFileError
from toolscore.hardrules.schemas import ToolSchemas
from toolscore.hardrules.spec import load_rules

_SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


class _Server:
    """A schema server on 127.0.0.1 that counts the requests it gets."""

    def __init__(self) -> None:
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests += 1
                body = json.dumps({"type": "string", "maxLength": 3}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    try:
        yield running
    finally:
        running.stop()


def _rules(tmp_path: Path, ref: str, **more: Any) -> Path:
    schema = {"type": "object", "properties": {"q": {"$ref": ref}}}
    path = tmp_path / "rules" / "rules.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"schemas": {"search": schema}, **more}), "utf-8")
    return path


def _trace(tmp_path: Path, q: str) -> Path:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"tool": "search", "args": {"q": q}}) + "\n", "utf-8")
    return trace


def test_refs_beside_the_schema_file_resolve(tmp_path: Path) -> None:
    rules = _rules(tmp_path, "defs.json#/q")
    (rules.parent / "defs.json").write_text('{"q": {"type": "string", "maxLength": 3}}', "utf-8")
    loaded = load_rules(rules)
    assert loaded.schemas is not None
    assert loaded.schemas.problem("search", {"q": "abcd"}) is not None
    assert loaded.schemas.problem("search", {"q": "abc"}) is None
    # a worker's copy resolves where the rule file is, not where the worker runs
    again = pickle.loads(pickle.dumps(loaded.schemas))
    assert again.problem("search", {"q": "abcd"}) is not None


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("{url}x.json", "is not fetched (http://: see schema_refs)"),
        ("file:///etc/passwd", "is outside the schema file's folder"),
        ("../outside.json", "is outside the schema file's folder"),
        ("link.json", "is outside the schema file's folder"),
        ("missing.json", "cannot be read"),
        ("defs.json#/nowhere", "cannot be resolved (PointerToNowhere)"),
    ],
)
def test_refs_elsewhere_are_refused_naming_file_and_reference(
    tmp_path: Path, server: _Server, ref: str, says: str
) -> None:
    ref = ref.format(url=server.url)
    rules = _rules(tmp_path, ref)
    (tmp_path / "outside.json").write_text('{"type": "string"}', "utf-8")
    (rules.parent / "link.json").symlink_to(tmp_path / "outside.json")
    (rules.parent / "defs.json").write_text('{"q": {"type": "string"}}', "utf-8")
    with pytest.raises(RuleFileError) as error:
        load_rules(rules)
    assert error.value.path == str(rules)
    assert f"the schema of tool 'search': $ref {ref!r} {says}" in str(error.value)
    run = run_cli("eval", str(_trace(tmp_path, "a")), "--forbidden", str(rules))
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"{rules}: the schema of tool 'search': $ref {ref!r} {says}" in run.stderr
    assert "internal error" not in run.stderr
    assert server.requests == 0


def test_schema_refs_allows_a_url_prefix_and_a_folder(tmp_path: Path, server: _Server) -> None:
    rules = _rules(tmp_path, server.url + "q.json", schema_refs=[server.url])
    trace = _trace(tmp_path, "abcd")
    run = run_cli("eval", str(trace), "--forbidden", str(rules), "--fail-on-violations")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "fail its schema at 'q'" in run.stdout
    assert server.requests >= 1

    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "q.json").write_text('{"type": "string", "maxLength": 3}', "utf-8")
    rules = _rules(tmp_path, "../shared/q.json", schema_refs=["../shared"])
    loaded = load_rules(rules)
    assert loaded.schemas is not None and loaded.schemas.problem("search", {"q": "abcd"})


_CATASTROPHIC = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a+)+$"}}}


def test_a_catastrophic_schema_pattern_finishes_fast(tmp_path: Path) -> None:
    hostile = "a" * 50 + "!"
    began = time.perf_counter()
    schemas = ToolSchemas({"search": _CATASTROPHIC})
    problem = schemas.problem("search", {"q": hostile})
    assert problem is not None and problem[0] == "q"
    result = evaluate(
        [],
        [{"tool": "search", "args": {"q": hostile}}],
        rules={"schemas": {"search": _CATASTROPHIC}},
    )
    assert result.verdict().violations.total == 1
    assert time.perf_counter() - began < 5  # Python's re: 2**50 steps
    also = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}}
    assert ToolSchemas({"t": also}).problem("t", {hostile: 1}) is None
    assert ToolSchemas({"t": also}).problem("t", {"aaa": "x"}) is not None

    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"schemas": {"search": _CATASTROPHIC}}), "utf-8")
    began = time.perf_counter()
    run = run_cli("eval", str(_trace(tmp_path, hostile)), "--forbidden", str(rules),
                  "--fail-on-violations")  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert time.perf_counter() - began < 30


def test_a_schema_pattern_re2_cannot_run_is_refused(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": "(a)\\1"}}}
    with pytest.raises(RuleFileError) as error:
        ToolSchemas({"search": schema}, "tools.json")
    assert error.value.path == "tools.json"
    assert "the schema of tool 'search': pattern '(a)\\\\1': a backreference" in str(error.value)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"schemas": {"search": schema}}), "utf-8")
    run = run_cli("eval", str(_trace(tmp_path, "aa")), "--forbidden", str(rules))
    assert run.returncode == 2
    assert f"{rules}: the schema of tool 'search': pattern" in run.stderr
