"""Redaction: every planted credential removed, whole PEM blocks, linear time."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.redact import (
    CREDENTIAL_KINDS,
    PATTERNS,
    may_contain_secret,
    preview,
    redact_each,
    redact_secrets,
    redact_value,
    scan_text,
)

ANTHROPIC = "sk-ant-" + "api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
OPENAI_PROJ = "sk-proj-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
GITHUB = "ghp" + "_" + "a1B2c3D4e5" * 3 + "F6g7H8"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6q"
SLACK = "xoxb" + "-1234567890-abcdefghij"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
BODY = "MIIEpAIBAAKCAQEA7xSECRETBODYLINE\nZm9vYmFyYmF6cXV4\n"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + BODY + "-----END RSA PRIVATE KEY-----"
ALL = [ANTHROPIC, OPENAI_PROJ, GITHUB, AWS, GOOGLE, SLACK, STRIPE]


def test_patterns_are_the_ten_in_order_then_the_others() -> None:
    assert [k for k, _ in PATTERNS[:10]] == [
        "private_key",
        "anthropic_api_key",
        "openai_api_key",
        "openai_api_key",
        "github_token",
        "github_token",
        "aws_access_key_id",
        "google_api_key",
        "slack_token",
        "stripe_secret_key",
    ]
    assert CREDENTIAL_KINDS[:8] == tuple(dict.fromkeys(k for k, _ in PATTERNS[:10]))
    assert len(CREDENTIAL_KINDS) >= 8 + 10


def test_every_planted_key_is_removed() -> None:
    text = "report:\n" + "\n".join(f"- value {k} here" for k in ALL) + "\n" + PEM + "\nend"
    out = redact_secrets(text)
    for key in ALL:
        assert key not in out
    assert "SECRETBODY" not in out and "Zm9vYmFy" not in out
    assert "END RSA PRIVATE KEY" not in out
    assert out.startswith("report:\n- value [REDACTED anthropic_api_key: sk-a…8t] here\n")
    assert "[REDACTED aws_access_key_id: AKIA…LE]" in out
    assert out.endswith("[REDACTED private_key: -----BEGIN … PRIVATE KEY-----]\nend")


def test_pem_without_end_is_redacted_to_the_end() -> None:
    text = "key: -----BEGIN " + "PRIVATE KEY-----\n" + BODY
    assert redact_secrets(text) == "key: [REDACTED private_key: -----BEGIN … PRIVATE KEY-----]"


def test_two_pem_blocks_and_text_between() -> None:
    block = "-----BEGIN EC " + "PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"
    out = redact_secrets(f"{block}\nkeep me\n{block}")
    assert out == (
        "[REDACTED private_key: -----BEGIN … PRIVATE KEY-----]\nkeep me\n"
        "[REDACTED private_key: -----BEGIN … PRIVATE KEY-----]"
    )


def test_a_match_inside_a_pem_body_goes_with_the_block() -> None:
    text = "-----BEGIN " + "PRIVATE KEY-----\n" + AWS + "\n-----END PRIVATE KEY-----!"
    assert [m[2] for m in scan_text(text)] == ["private_key", "aws_access_key_id"]
    assert redact_secrets(text) == "[REDACTED private_key: -----BEGIN … PRIVATE KEY-----]!"


def test_text_without_secrets_is_returned_as_is() -> None:
    text = "an ordinary sk- and AKIA mention, no key"
    assert redact_secrets(text) is text
    assert not may_contain_secret("plain text")
    assert may_contain_secret(b"xoxb-")


def test_non_random_keys_are_left() -> None:
    text = "sk-" + "ab3" * 12
    assert redact_secrets(text) == text


def test_preview() -> None:
    assert preview("aws_access_key_id", AWS) == "AKIA…LE"
    assert preview("private_key", "whatever") == "-----BEGIN … PRIVATE KEY-----"


def test_redact_value_nested() -> None:
    value: dict[str, Any] = {"a": [AWS, {"b": (GITHUB, 3)}], AWS: None, "n": 1}
    out = redact_value(value)
    assert out == {
        "a": [
            "[REDACTED aws_access_key_id: AKIA…LE]",
            {"b": ("[REDACTED github_token: ghp_…H8]", 3)},
        ],
        "[REDACTED aws_access_key_id: AKIA…LE]": None,
        "n": 1,
    }
    assert value["a"][0] == AWS  # the input is not changed


def test_many_secrets_redact_in_one_pass() -> None:
    # Toolscore rebuilt the string per secret (quadratic); 20k secrets here take milliseconds.
    text = " ".join([AWS] * 20_000)
    out = redact_secrets(text)
    assert out.count("[REDACTED aws_access_key_id: AKIA…LE]") == 20_000
    assert AWS not in out


def test_adversarial_strings_are_linear() -> None:
    # A backtracking pattern would take minutes on these; the linear ones take milliseconds.
    cases = [
        "sk-" + "a" * 10**6,
        "sk-ant-" + "a" * 10**6,
        "-----BEGIN " + "A " * 10**5,
        "-----BEGIN " + "A" * 10**6,
        ("-----BEGIN " + "A " * 20) * 20_000,
        "sk-" * 300_000,
        ("sk-" + "a" * 31 + "-") * 30_000,
        "xox" * 300_000,
        "eyJ" * 300_000,
        "eyJ_" * 250_000,
        "gsk_" * 250_000,
        "pcsk_" + "a_" * 500_000,
        ("lsv2_pt_" + "0" * 32 + "_") * 20_000,
    ]
    for text in cases:
        assert scan_text(text) == []
    # a key may start inside a word: of a run of "AKIA", the last 20 characters are one
    assert scan_text("AKIA" * 250_000) == [(999_980, 10**6, "aws_access_key_id", "AKIA" * 5)]
    # one long run of the token alphabet is one match, found once
    assert len(scan_text("github_pat_" * 90_000)) == 1
    many_headers = "-----BEGIN PRIVATE " + "KEY-----" + "x" * 10
    out = redact_secrets(many_headers * 30_000)
    assert out == "[REDACTED private_key: -----BEGIN … PRIVATE KEY-----]"


pieces = st.sampled_from([*ALL, PEM, "x", "\n", "-", "_", "sk-", "-----BEGIN "])


@settings(max_examples=200, deadline=None)
@given(st.lists(pieces, max_size=10).map(" ".join))
def test_redaction_leaves_no_match_and_is_idempotent(text: str) -> None:
    out = redact_secrets(text)
    assert scan_text(out) == []
    assert redact_secrets(out) == out
    for key in ALL:
        assert key not in out


def _toolscore_scan(text: str) -> list[tuple[int, int, str, str]]:
    """Toolscore's algorithm as specified: no prefilter, a plain list of claimed spans."""
    claimed: list[tuple[int, int]] = []
    found = []
    for kind, pattern in PATTERNS[:10]:  # Toolscore's ten
        for m in pattern.finditer(text):
            s, e = m.span()
            if any(s < ce and cs < e for cs, ce in claimed):
                continue
            t = m.group()
            if kind in ("anthropic_api_key", "openai_api_key") and not (
                any(c.isdigit() for c in t)
                and any(c.islower() for c in t)
                and any(c.isupper() for c in t)
            ):
                continue
            claimed.append((s, e))
            found.append((s, e, kind, t))
    return found


scan_pieces = st.sampled_from(
    [*ALL, PEM, "x", " ", "\n", "é", "-", "_", "sk-", "task-", "AKIA", "A1", "-----BEGIN "]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(scan_pieces, max_size=12).map("".join))
def test_scan_matches_the_reference_algorithm(text: str) -> None:
    assert scan_text(text) == _toolscore_scan(text)


prefix_text = st.lists(
    st.sampled_from(
        ["sk-", "gh", "p_", "o_", "github_", "pat_", "AKIA", "ASIA", "AIza", "xox", "b-", "s-",
         "_live_", "-----BEGIN ", "----", "A", "_", "-", "k", "s", "x", "live", "Iz", "a", " ",
         "glpat-", "npm_", "hf_", "SG.", "SK", "AccountKey=", "AccountKey%3D", "private_key_id",
         "dapi", "dop_v1_", "shpat_", "hvs.", "hooks.slack.com/", "eyJ", "GOCSPX-", "%20",
         "AGE-SECRET-KEY-1", "0123456789abcdef", "Zx9Qw8Er7Ty6Ui5O", "."]
    ),
    max_size=12,
).map("".join)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(prefix_text)
def test_the_batch_prefilters_find_every_candidate(text: str) -> None:
    from toolscore.redact import PREFILTER_SCAN, PREFILTER_SCAN_RE

    data = text.encode()
    literal = may_contain_secret(data)
    assert may_contain_secret(text) == literal
    assert (PREFILTER_SCAN_RE.search(data) is not None) == literal
    batch = PREFILTER_SCAN.search(data) is not None
    assert literal >= batch  # the batch scan is the stricter
    if batch:
        assert any(True for _ in PREFILTER_SCAN.finditer(data, 0))
    if scan_text(text):
        assert batch  # neither prefilter ever hides a match


@settings(max_examples=300, deadline=None)
@given(st.lists(prefix_text, max_size=8))
def test_batch_candidates_are_the_calls_the_prefilter_flags(texts: list[str]) -> None:
    from toolscore.checks.secrets import candidates
    from toolscore.redact import PREFILTER_SCAN

    sigs = [t.encode() for t in texts]
    assert candidates(sigs) == [i for i, s in enumerate(sigs) if PREFILTER_SCAN.search(s)]


_PIECES = st.sampled_from([*ALL, PEM, "sk-", "AKIA", "error: ", " ", "\n", "%2D", "-----BEGIN "])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(_PIECES, st.text(max_size=20))).map("".join), max_size=8))
def test_redact_each_is_redact_secrets_of_each_text(texts: list[str]) -> None:
    # one prefilter search for the lot, the same texts as one redaction each
    out = redact_each(texts)
    assert out == [redact_secrets(t) for t in texts]
    assert redact_each(texts, ["email"]) == [redact_secrets(t, ["email"]) for t in texts]


def test_redact_each_hands_back_texts_without_a_credential_prefix() -> None:
    texts = ["ConnectionResetError: connection reset by peer", "database is locked"]
    assert redact_each(texts) is texts
    assert redact_each([f"token {AWS} refused", "ok"]) == [
        f"token {redact_secrets(AWS)} refused",
        "ok",
    ]
