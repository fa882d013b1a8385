"""Nothing quoted from the input escapes redaction, with the real command line: a key of every
kind in the first bytes of a trace that is not JSON, after ``%20`` in a URL, in a tool name and
in an argument key is found (where it is scanned) and absent from the console, the Markdown
and HTML reports and the ``watch --findings`` file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _cli import run_cli
from _secrets import PLANTED, SEED, assert_no_secrets

FIRST = [(kind, keys[0]) for kind, keys in PLANTED.items()]


def _header(kind: str, key: str) -> str:
    return f"X {key}" if kind == "jwt" else f"X-{key}"  # a JWT never starts after "-"


def _calls(kind: str, key: str) -> list[dict[str, Any]]:
    name = key.splitlines()[0]  # a PEM header line as a tool name
    return [
        {"tool": "fetch", "args": {"url": f"https://api.test/?auth=Bearer%20{key}"}},
        {"tool": f"call {name}", "args": {"q": "weather"}, "error": f"bad tool {name}"},
        {"tool": "http_post", "args": {"headers": {_header(kind, key): "1"}}},
    ]


def _found(kind: str, key: str) -> list[tuple[int, str, str]]:
    return [
        (0, "url", kind),
        (1, "<tool name>", kind),
        (2, f"<key> headers.{_header(kind, key)}", kind),
    ]


@pytest.mark.parametrize(("kind", "key"), FIRST, ids=[k for k, _ in FIRST])
def test_the_first_bytes_of_a_trace_that_is_not_json(tmp_path: Path, kind: str, key: str) -> None:
    gold = tmp_path / "g.json"
    gold.write_text('[{"tool": "a"}]')
    trace = tmp_path / "t.json"
    trace.write_text(f"token {key} was pasted here instead of a trace\n", encoding="utf-8")
    proc = run_cli("eval", str(gold), str(trace), "-o", str(tmp_path / "o.json"))
    assert proc.returncode == 2
    assert "not JSON" in proc.stderr
    assert_no_secrets(proc.stdout + proc.stderr)


def test_every_kind_in_a_url_a_tool_name_and_a_key_eval(tmp_path: Path) -> None:
    calls = [call for kind, key in FIRST for call in _calls(kind, key)]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    gold = tmp_path / "g.json"
    gold.write_text('[{"tool": "fetch"}]')
    md, page, out = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "o.json"
    proc = run_cli(
        "eval", str(gold), str(trace), "-o", str(out), "--markdown", str(md), "--html", str(page),
        "-v", "--fail-on-violations",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    for text in (proc.stdout, proc.stderr, md.read_text("utf-8"), page.read_text("utf-8")):
        assert_no_secrets(text)
    report = json.loads(out.read_text("utf-8"))
    found = [
        (r["index"], r["path"], r["kind"]) for r in report["metrics"]["security_metrics"]["secrets"]
    ]
    for n, (kind, key) in enumerate(FIRST):
        for index, path, k in _found(kind, key):
            assert (3 * n + index, path, k) in found, (kind, path)
    # the findings in the JSON report are redacted too (its calls keep their arguments)
    assert_no_secrets(json.dumps(report["findings"], ensure_ascii=False))


def test_every_kind_in_a_url_a_tool_name_and_a_key_watch(tmp_path: Path) -> None:
    calls = [call for kind, key in FIRST for call in _calls(kind, key)]
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    findings = tmp_path / "f.jsonl"
    proc = run_cli("watch", str(trace), "--findings", str(findings))
    assert proc.returncode == 0, proc.stderr
    assert_no_secrets(proc.stdout + proc.stderr)
    text = findings.read_text("utf-8")
    assert_no_secrets(text)
    records = [json.loads(line) for line in text.splitlines()]
    secrets = [r for r in records if r["check"] == "secrets"]
    assert len(secrets) >= 3 * len(FIRST)
    assert {r["kind"] for r in secrets} == set(PLANTED)
    messages = " ".join(r["message"] for r in secrets)
    assert "in 'url'" in messages and "in '<tool name>'" in messages
    assert "in '<key> headers.X-[REDACTED" in messages
    # the failed call's finding names its tool, redacted
    failed = [r for r in records if r["kind"] == "failed_call"]
    assert len(failed) == len(FIRST) and all("[REDACTED" in r["tool"] for r in failed)


def test_seed_kinds_are_all_planted() -> None:
    assert set(SEED) <= set(PLANTED)
