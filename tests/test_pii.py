"""Personal data: off by default; ``pii=`` in Python and ``--pii`` on the command line find
it and redact it from every human-facing output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _cli import run_cli
from toolscore import evaluate
from toolscore.redact import pii_redaction, redact_secrets

EMAIL = "jane.doe" + "@example.org"
CARD = "4111 1111 " + "1111 1111"
SSN = "123-45-" + "6789"
CALLS = [
    {"tool": "send_email", "args": {"to": EMAIL, "body": f"card {CARD}, ssn {SSN}"}},
    {"tool": "lookup", "args": {"q": "weather"}, "error": f"no user {EMAIL}"},
]


def _absent(text: str) -> None:
    for value in (EMAIL, CARD, SSN, "1111 1111 1111"):
        assert value not in text, value


def test_off_by_default_on_with_pii() -> None:
    plain = evaluate([{"tool": "send_email"}], CALLS)
    assert "pii" not in plain.metrics["security_metrics"]
    assert not [f for f in plain.findings if f.check == "pii"]
    result = evaluate([{"tool": "send_email"}], CALLS, pii=True)
    security = result.metrics["security_metrics"]
    assert security["pii_count"] == 3 and security["secret_count"] == 0
    assert {(r["path"], r["kind"]) for r in security["pii"]} == {
        ("to", "email"),
        ("body", "card_number"),
        ("body", "us_ssn"),
    }
    pii = [f for f in result.findings if f.check == "pii"]
    assert len(pii) == 3 and all(f.severity == "error" for f in pii)
    for finding in result.findings:  # the failed call's error text too
        _absent(finding.message)
    only = evaluate([{"tool": "send_email"}], CALLS, pii=["email"])
    assert [r["kind"] for r in only.metrics["security_metrics"]["pii"]] == ["email"]


def test_pii_redaction_block() -> None:
    assert redact_secrets(EMAIL) == EMAIL
    with pii_redaction(True):
        assert redact_secrets(EMAIL) == "[REDACTED email: j…@example.org]"
        with pii_redaction(None):  # None keeps the enclosing choice
            assert redact_secrets(EMAIL) != EMAIL
    assert redact_secrets(EMAIL) == EMAIL


def test_pii_redaction_value_decorator_and_errors() -> None:
    with pii_redaction(["email"]) as kinds:
        assert kinds == frozenset({"email"})
        with pii_redaction(None) as inner:
            assert inner == kinds

    @pii_redaction(True)
    def shown() -> str:
        return redact_secrets(EMAIL)

    assert shown() == shown() == "[REDACTED email: j…@example.org]"  # reusable

    @pii_redaction(True)
    def nested(depth: int) -> str:  # each call enters and leaves its own block
        return nested(depth - 1) if depth else redact_secrets(EMAIL)

    assert nested(3) == "[REDACTED email: j…@example.org]"
    assert redact_secrets(EMAIL) == EMAIL
    with pytest.raises(KeyError), pii_redaction(True):
        raise KeyError("inside")
    assert redact_secrets(EMAIL) == EMAIL  # restored after an exception too
    with pytest.raises(ValueError):
        pii_redaction(["no such kind"])


def test_cli_pii(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in CALLS), encoding="utf-8")
    gold = tmp_path / "g.json"
    gold.write_text('[{"tool": "send_email"}]')
    md, page, out = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "o.json"
    plain = run_cli("eval", str(gold), str(trace), "-o", str(out), "--fail-on-violations")
    assert plain.returncode == 0, plain.stderr
    assert "personal data" not in plain.stdout
    proc = run_cli(
        "eval", str(gold), str(trace), "-o", str(out), "--markdown", str(md), "--html",
        str(page), "-v", "--pii", "--fail-on-violations",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "passes personal data (email) in 'to': j…@example.org" in proc.stdout
    assert "3 personal data) (--fail-on-violations)" in proc.stderr
    for text in (proc.stdout, proc.stderr, md.read_text("utf-8"), page.read_text("utf-8")):
        _absent(text)
    report = json.loads(out.read_text("utf-8"))
    assert report["metrics"]["security_metrics"]["pii_count"] == 3
    _absent(json.dumps(report["findings"], ensure_ascii=False))
    findings = tmp_path / "f.jsonl"
    watch = run_cli("watch", str(trace), "--pii", "--findings", str(findings))
    _absent(watch.stdout + watch.stderr + findings.read_text("utf-8"))
    assert "card_number" in findings.read_text("utf-8")
