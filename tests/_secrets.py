"""Planted credentials of every kind toolscore scans for, and a check that none leaked.

The keys are fakes with the right shapes, assembled from pieces so that secret scanners do
not flag this file. AWS's documented example key ``AKIAIOSFODNN7EXAMPLE`` is used as is.
Use :func:`assert_no_secrets` on every human-facing output (console, Markdown, HTML).
"""

from __future__ import annotations

_ALNUM36 = "Zx9Qw8Er7Ty6" + "Ui5Op4As3Df2" + "Gh1Jk0LzXcVb"  # 36 characters

PLANTED: dict[str, list[str]] = {
    "private_key": [
        "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Fake" + "BodyLine0123456789\n"
        "-----END RSA " + "PRIVATE KEY-----",
    ],
    "anthropic_api_key": ["sk-" + "ant-api03-" + "Hq4Tz9Lm2Xv7Nb5Kc8Rd3Wf6Yg1Pj0Sa_Ue-Io"],
    "openai_api_key": [
        "sk-" + "proj-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
        "sk-" + "T3Blbk" + "FJq8Wm4Zr7Xt2Yp6Ls9Kd3Nv5Bc1Hg0Fj",
    ],
    "github_token": ["gh" + "p_" + _ALNUM36, "github" + "_pat_" + "11ABCDEFG0" + "x1Y2z3" * 9],
    "aws_access_key_id": ["AKIAIOSFODNN7EXAMPLE", "AS" + "IA" + "Q3EGRIDPZ7KXW4NB"],
    "google_api_key": ["AI" + "za" + "SyD7Fake" + "Key0123456789abcdefGHIJKLmn"],
    "slack_token": ["xo" + "xb-" + "1234567890-" + "AbCdEfGhIjKl"],
    "stripe_secret_key": [
        "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
        "rk" + "_live_" + "51Hx" * 7,
    ],
}
"""Credential kind -> planted values of that kind."""

ALL_KEYS: list[str] = [key for keys in PLANTED.values() for key in keys]


def _cores(key: str) -> list[str]:
    """Pieces of ``key`` that must not appear either (a partly printed key is a leak)."""
    if key.startswith("-----BEGIN"):
        return ["BEGIN RSA PRIVATE KEY", "FakeBodyLine0123456789"]
    middle = len(key) // 2
    return [key, key[middle - 6 : middle + 6]]


def planted_text() -> str:
    """Every planted key in one string, separated by spaces."""
    return " ".join(ALL_KEYS)


def assert_no_secrets(text: str) -> None:
    """Fail when any planted credential, or a 12-character piece of one, is in ``text``."""
    for kind, keys in PLANTED.items():
        for key in keys:
            for core in _cores(key):
                assert core not in text, f"{kind} leaked: {core!r} found in the output"
