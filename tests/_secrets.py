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

_HEX32 = "0123456789abcdef" + "fedcba9876543210"
_B64_86 = ("Q2xvdWRTdG9y" + "YWdlS2V5") * 4 + "Zm9+Ym"  # 86 characters
_GCP_ID = "1a2b3c4d5e" + "6f7a8b9c0d" + "1e2f3a4b5c" + "6d7e8f9a0b"
_JWT_HEAD = "eyJhbGciOiJIUzI1NiIs" + "InR5cCI6IkpXVCJ9"  # {"alg":"HS256","typ":"JWT"}

MORE: dict[str, list[str]] = {
    "gitlab_token": ["gl" + "pat-" + "Xy7Kp2Qr9Lm4Nv6Bt1Wz"],
    "npm_token": ["np" + "m_" + _ALNUM36],
    "pypi_token": ["py" + "pi-AgEIcHlwaS5vcmc" + "CJ" + _ALNUM36 * 2],
    "huggingface_token": ["h" + "f_" + "AbCdEfGhIjKlMnOp" + "QrStUvWxYzAbCdEfGh"],
    "sendgrid_api_key": ["S" + "G." + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7O" + "." + _ALNUM36 + "Pq8Rs9T"],
    "twilio_api_key": ["S" + "K" + _HEX32],
    "azure_storage_key": [
        "DefaultEndpointsProtocol=https;AccountName=acct;Account" + "Key=" + _B64_86 + "==;"
        "EndpointSuffix=core.windows.net"
    ],
    "azure_shared_access_key": [
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccess"
        + "Key="
        + _B64_86[:43]
        + "="
    ],
    "gcp_service_account_key": [
        '{"type": "service_account", "project_id": "demo", "private_key'
        + '_id": "'
        + _GCP_ID
        + '", "client_email": "svc@demo.iam.gserviceaccount.com"}'
    ],
    "google_oauth_client_secret": ["GOC" + "SPX-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9S"],
    "databricks_token": ["da" + "pi" + _HEX32],
    "digitalocean_token": ["do" + "p_v1_" + _HEX32 * 2],
    "shopify_token": ["sh" + "pat_" + _HEX32],
    "vault_token": ["hv" + "s." + "CAES" + _ALNUM36 * 2 + "Ab1Cd2Ef3Gh4Ij5Kl6"],
    "slack_webhook_url": [
        "https://hooks."
        + "slack.com/services/"
        + "T0A1B2C3D/B4E5F6G7H/"
        + "Zx9Qw8Er7Ty6Ui5Op4As3Df2"
    ],
    "age_secret_key": [
        "AGE-SECRET-" + "KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE"
    ],
    "jwt": [
        _JWT_HEAD + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ],
}
"""The credential kinds beyond Toolscore's: kind -> planted values (texts holding one key)."""

_ALNUM52 = _ALNUM36 + "Qw3Er5Ty7Ui9Op1A"
_HEX64 = _HEX32 * 2
_B58_24 = "3Zk6s8w7" + "WqMUesCJ" + "T5pq8Z9T"  # base58: no 0, O, I or l
AGENT: dict[str, list[str]] = {
    "groq_api_key": ["gs" + "k_" + _ALNUM52],
    "openrouter_api_key": ["sk-" + "or-v1-" + _HEX64],
    "xai_api_key": ["xa" + "i-" + _ALNUM36 * 2 + "Ab1Cd2Ef"],
    "replicate_api_token": ["r" + "8_" + _ALNUM36 + "Q"],
    "perplexity_api_key": ["pp" + "lx-" + _ALNUM36 + "Ab1Cd2Ef3Gh4"],
    "fireworks_api_key": ["f" + "w_" + _B58_24],
    "langsmith_api_key": [
        "lsv2" + "_pt_" + _HEX32 + "_" + "0a1b2c3d4e",
        "lsv2" + "_sk_" + _HEX32[::-1] + "_" + "9f8e7d6c5b",
    ],
    "tavily_api_key": ["tv" + "ly-" + _ALNUM36[:32], "tv" + "ly-dev-" + _ALNUM36[4:36]],
    "pinecone_api_key": ["pc" + "sk_" + "3UiVd2" + "_" + _ALNUM52 + "Rt5Yu7Io9Pa"],
}
"""The keys of model and agent-tool providers: kind -> planted values."""
MORE.update(AGENT)

SECRET_PART: dict[str, str] = {
    MORE["azure_storage_key"][0]: _B64_86 + "==",
    MORE["azure_shared_access_key"][0]: _B64_86[:43] + "=",
    MORE["gcp_service_account_key"][0]: _GCP_ID,
    MORE["slack_webhook_url"][0]: "T0A1B2C3D/B4E5F6G7H/" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2",
}
"""The credential inside a planted value that holds more than the credential."""

SEED = dict(PLANTED)
"""Toolscore's credential kinds only."""
PLANTED.update(MORE)

ALL_KEYS: list[str] = [key for keys in PLANTED.values() for key in keys]


def _cores(key: str) -> list[str]:
    """Pieces of ``key`` that must not appear either (a partly printed key is a leak)."""
    if key.startswith("-----BEGIN"):
        return ["BEGIN RSA PRIVATE KEY", "FakeBodyLine0123456789"]
    secret = SECRET_PART.get(key, key)
    middle = len(secret) // 2
    return [secret, secret[middle - 6 : middle + 6]]


def planted_text() -> str:
    """Every planted key in one string, separated by spaces."""
    return " ".join(ALL_KEYS)


def assert_no_secrets(text: str) -> None:
    """Fail when any planted credential, or a 12-character piece of one, is in ``text``."""
    for kind, keys in PLANTED.items():
        for key in keys:
            for core in _cores(key):
                assert core not in text, f"{kind} leaked: {core!r} found in the output"
