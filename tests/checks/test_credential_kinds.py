"""Every credential kind (and, when asked, every personal-data kind) in every place a tool call
can hold it: found, previewed, redacted; and none found on the real corpus."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _secrets import PLANTED, SECRET_PART, assert_no_secrets
from toolscore.calls import ToolCall
from toolscore.checks.secrets import TOOL_NAME_PATH, find_secrets, scan_call
from toolscore.redact import (
    CREDENTIAL_KINDS,
    PII_KINDS,
    pii_kinds,
    preview,
    redact_secrets,
    redact_value,
    scan_text,
)

CASES = [(kind, key) for kind, keys in PLANTED.items() for key in keys]

# where a value sits in a call's arguments, and the path a finding names
POSITIONS: dict[str, tuple[Callable[[str], Any], str]] = {
    "top-level": (lambda k: {"token": k}, "token"),
    "nested dict": (lambda k: {"headers": {"Authorization": k}}, "headers.Authorization"),
    "list item": (lambda k: {"keys": ["x", k]}, "keys[1]"),
    "deep path": (lambda k: {"a": [{"b": {"c": [0, {"d": k}]}}]}, "a[0].b.c[1].d"),
    "longer text": (lambda k: {"body": f"please use\n{k} for the deploy, thanks"}, "body"),
    "URL query": (lambda k: {"url": f"https://api.test/v1?key={k}&page=2"}, "url"),
    "URL after %20": (lambda k: {"url": f"https://api.test/?auth=Bearer%20{k}"}, "url"),
    "URL, percent-encoded": (
        lambda k: {"url": "https://api.test/?auth=" + quote(f"Bearer {k}", safe="")},
        "url",
    ),
}


def _secret(key: str) -> str:
    return SECRET_PART.get(key, key)


def test_more_than_ten_new_kinds_with_planted_examples() -> None:
    new = [k for k in CREDENTIAL_KINDS[8:]]
    assert len(new) >= 10
    assert set(CREDENTIAL_KINDS) == set(PLANTED)  # every kind has a planted example


@pytest.mark.parametrize("position", list(POSITIONS))
@pytest.mark.parametrize(("kind", "key"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_every_kind_in_every_position(kind: str, key: str, position: str) -> None:
    build, path = POSITIONS[position]
    records = scan_call(ToolCall("http_post", build(key), index=3))
    found = [(r["path"], r["kind"]) for r in records]
    assert (path, kind) in found, found
    mine = next(r for r in records if r["kind"] == kind)
    assert mine["index"] == 3 and mine["tool"] == "http_post"
    assert mine["preview"] == preview(kind, _secret(key))
    assert _secret(key) not in mine["preview"]
    # the human-facing forms
    text = build(key)
    assert_no_secrets(repr(redact_value(text)))
    for value in text.values():
        assert_no_secrets(redact_secrets(orjson.dumps(value).decode()))


@pytest.mark.parametrize(("kind", "key"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_in_a_tool_name_and_an_argument_key(kind: str, key: str) -> None:
    name = f"call {key}"
    header = f"X-{key}" if kind != "jwt" else f"X {key}"  # a JWT never starts after "-"
    records = scan_call(ToolCall(name, {"headers": {header: "1"}}))
    found = [(r["path"], r["kind"]) for r in records]
    assert (TOOL_NAME_PATH, kind) in found
    assert (f"<key> headers.{header}", kind) in found
    assert_no_secrets(redact_secrets(f"{name} {header}"))


def test_redaction_replaces_only_the_credential_of_a_field() -> None:
    conn = PLANTED["azure_storage_key"][0]
    out = redact_secrets(conn)
    assert out.startswith("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED ")
    assert out.endswith("];EndpointSuffix=core.windows.net")
    hook = redact_secrets(PLANTED["slack_webhook_url"][0])
    assert hook.startswith("https://hooks.slack.com/services/[REDACTED slack_webhook_url: ")


def test_a_service_account_key_file_as_text_and_as_a_dict() -> None:
    key_id = "0f" * 20
    pem = "-----BEGIN PRIVATE " + "KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n"
    info = {
        "type": "service_account",
        "project_id": "demo",
        "private_key_id": key_id,
        "private_key": pem,
        "client_email": "svc@demo.iam.gserviceaccount.com",
    }
    as_text = scan_call(ToolCall("upload", {"file": orjson.dumps(info).decode()}))
    assert [r["kind"] for r in as_text] == ["private_key", "gcp_service_account_key"]
    as_dict = scan_call(ToolCall("upload", {"creds": info}))
    assert [(r["path"], r["kind"]) for r in as_dict] == [
        ("creds.private_key_id", "gcp_service_account_key"),
        ("creds.private_key", "private_key"),
    ]
    shown = repr(redact_value({"creds": info}))
    assert key_id not in shown and "MIIEvQ" not in shown
    # the same id without the file's shape is not a credential
    assert scan_call(ToolCall("t", {"private_key_id": key_id})) == []


def test_lookalikes_are_not_credentials() -> None:
    texts = [
        "hf_" + "a" * 34,  # Hugging Face tokens mix cases
        "eyJ" + "a" * 20 + ".eyJ" + "b" * 20 + "." + "c" * 20,  # no JSON header with "alg"
        "SK" + "0" * 31,  # 31 hex digits
        "glpat-short",
        "npm_install_packages_from_the_lock_file",
        "dapi-docs and dop_v1_ prefixes in prose",
        "AccountKey=short==",
        "https://hooks.slack.com/services/",
        "shpat_" + "g" * 32,  # not hex
        "np" + "m_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbQ",  # 37 characters: a longer word
    ]
    for text in texts:
        assert scan_text(text) == [], text


def test_corpus_has_no_false_positives_with_every_new_kind(corpus: Path) -> None:
    calls = []
    for name in ("tau-bench-airline.jsonl", "toolbench.jsonl"):
        for line in (corpus / name).read_bytes().splitlines():
            d = orjson.loads(line)
            calls.append(ToolCall(d["tool"], d.get("args"), result=d.get("result")))
    assert len(calls) > 1000
    assert find_secrets(calls) == {"secret_count": 0, "secrets": []}
    # results too, as text: the scan would find nothing there either
    for call in calls:
        assert scan_text(orjson.dumps(call.result).decode()) == []


# -- personal data --------------------------------------------------------------------------

PII: dict[str, str] = {
    "email": "jane.doe+travel@example.org",
    "phone": "+44 20 7946 0958",
    "card_number": "4111 1111 1111 1111",
    "us_ssn": "123-45-6789",
    "iban": "DE89 3704 0044 0532 0130 00",
}
PII_MORE = {
    "phone": "(415) 555-2671",
    "card_number": "378282246310005",
    "iban": "GB29NWBK60161331926819",
}


def test_every_pii_kind_is_planted() -> None:
    assert set(PII) == set(PII_KINDS)


@pytest.mark.parametrize("position", [p for p in POSITIONS if p != "URL, percent-encoded"])
@pytest.mark.parametrize("kind", list(PII) + [f"{k}+" for k in PII_MORE])
def test_pii_in_every_position_only_when_asked(kind: str, position: str) -> None:
    value = PII_MORE[kind[:-1]] if kind.endswith("+") else PII[kind]
    kind = kind.rstrip("+")
    build, path = POSITIONS[position]
    call = ToolCall("send", build(value))
    assert [r for r in scan_call(call) if r["kind"] in PII_KINDS] == []
    found = [(r["path"], r["kind"]) for r in scan_call(call, pii=True)]
    assert (path, kind) in found
    only = scan_call(call, pii=[kind])
    assert {r["kind"] for r in only} == {kind}
    redacted = redact_secrets(orjson.dumps(build(value)).decode(), pii=[kind])
    digits = re.sub(r"\D", "", value)
    assert value not in redacted and (len(digits) < 8 or digits[2:8] not in redacted)
    assert redact_secrets(value) == value  # not without pii


def test_pii_validation() -> None:
    assert scan_text("4111 1111 1111 1112", PII_KINDS) == []  # fails the Luhn check
    assert scan_text("card 1234 5678 9012 3452", PII_KINDS) == []  # no card network starts 1
    assert scan_text("000-12-3456 666-12-3456 123-00-4567", PII_KINDS) == []  # never issued
    assert scan_text("DE89 3704 0044 0532 0130 01", PII_KINDS) == []  # fails mod 97
    assert scan_text("version 2024-01-15 build 1.2.3.4 id 12345678", PII_KINDS) == []
    # a rejected candidate does not hide the valid one that starts inside it
    text = "+44 20 7946 0958 4111 1111 1111 1111"
    assert [k for _s, _e, k, _ in scan_text(text, PII_KINDS)] == ["card_number", "phone"]
    assert preview("card_number", PII["card_number"]) == "…1111"
    assert preview("email", PII["email"]) == "j…@example.org"
    with pytest.raises(ValueError, match="unknown personal-data kind"):
        pii_kinds(["emails"])


def test_corpus_pii_findings_are_only_the_labelled_contacts_it_holds(corpus: Path) -> None:
    # The corpus holds real business contacts (in ToolBench answers): each finding must sit
    # right after its "Email"/"Phone" label, and no card, SSN or IBAN is found.
    seen = 0
    for name in ("tau-bench-airline.jsonl", "toolbench.jsonl"):
        for line in (corpus / name).read_bytes().splitlines():
            d = orjson.loads(line)
            for _path, text, _ in _texts(d.get("args")):
                for start, _end, kind, _ in scan_text(text, PII_KINDS):
                    seen += 1
                    label = {"email": "Email", "phone": "Phone"}.get(kind)
                    assert label is not None, (name, kind)
                    assert label in text[max(0, start - 16) : start], (name, kind)
    assert seen > 0


def _texts(args: Any) -> list[tuple[str, str, str | None]]:
    from toolscore.redact import iter_texts

    return list(iter_texts(args))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from([k for _, k in CASES] + list(PII.values()) + [" ", "\n", "%20", "x", "-"]),
        max_size=6,
    ).map(" ".join)
)
def test_redaction_is_idempotent_and_leaves_no_match(text: str) -> None:
    out = redact_secrets(text, pii=PII_KINDS)
    assert scan_text(out, PII_KINDS) == []
    assert redact_secrets(out, pii=PII_KINDS) == out
