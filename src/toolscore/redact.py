"""Credential and personal-data patterns, their previews, and redaction of text before it is
printed.

Credentials. The first ten patterns are Toolscore's (§9.1), tried in the same order with the
same span claiming: within one string, a match is skipped when it overlaps a span an earlier
accepted match claimed, and OpenAI and Anthropic keys must "look random" (a digit, a lowercase
and an uppercase letter somewhere in the whole match, prefix included). A rejected match claims
nothing. The kinds after them (:data:`CREDENTIAL_KINDS` lists every one) are credentials with
formats as distinctive: GitLab, npm, PyPI, Hugging Face, SendGrid, Twilio, Azure storage and
shared access keys in connection strings, Google service-account key files and OAuth client
secrets, Databricks, DigitalOcean, Shopify, Vault, Slack webhooks, age keys and JWTs. Where
a credential is the value of a named field (``AccountKey=...``, ``"private_key_id": "..."``),
only the value is the match: it is what is previewed and redacted.

Personal data (:data:`PII_KINDS`: email addresses, phone numbers, payment card numbers that
pass the Luhn check, US social security numbers, IBANs that pass their mod-97 check) is only
looked for when asked (``pii=``), after every credential kind.

Where a key starts. A key must start a token: not right after a letter, digit or ``_`` (the
``\\b`` of Toolscore's patterns), except after a percent escape (``Bearer%20ghp_...``) or an
escaped newline or tab (``\\nghp_...`` in JSON quoted inside a string). A text holding percent
escapes of ASCII characters is scanned as decoded (``-----BEGIN%20PRIVATE%20KEY-----``,
``AccountKey%3D...``), and the matches are mapped back onto the text as written.

Speed. Every credential needs one of a few literal prefixes, so text without any of them is
dismissed by a single prefilter search (:func:`may_contain_secret`; :data:`PREFILTER_SCAN` does
the same over many texts at once in one RE2 pass). Every pattern runs in time linear in the
text, even on adversarial input (``"sk-" + "a" * 10**6``).

:func:`redact_secrets` differs from Toolscore on purpose: a PEM private key is redacted from
its ``-----BEGIN ... PRIVATE KEY-----`` header through the next ``-----END ... PRIVATE KEY-----``
line (or to the end of the text if there is none), not only the header, so the key body is
never printed. It also builds its output once from the sorted spans, in linear time.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator
from contextvars import ContextVar, Token
from functools import lru_cache, wraps
from typing import Any, ParamSpec, TypeVar

import orjson

__all__ = [
    "CREDENTIAL_KINDS",
    "GCP_KEY_FILE",
    "PATTERNS",
    "PII_KINDS",
    "PII_PATTERNS",
    "PREFILTER_SCAN",
    "PREFILTER_SCAN_RE",
    "PRIVATE_KEY_PREVIEW",
    "SecretMatch",
    "active_pii",
    "iter_strings",
    "iter_texts",
    "may_contain_secret",
    "pii_kinds",
    "pii_prefilter",
    "pii_redaction",
    "preview",
    "redact_each",
    "redact_findings",
    "redact_quote",
    "redact_secrets",
    "redact_value",
    "scan_text",
    "use_pii",
]

# Where a key may start: not inside a word (Toolscore's \b), but after a percent escape or an
# escaped newline or tab it starts a new token all the same.
_EDGE = r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2})|(?<=\\[nrt]))"
# The same for a JWT, whose segments may hold "-": not after "-" either, so that a run of
# "eyJ-eyJ-..." has one start and the scan stays linear.
_JWT_EDGE = r"(?:(?<![\w-])|(?<=%[0-9A-Fa-f]{2})|(?<=\\[nrt]))"

_SEED: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN[ +](?:[A-Z0-9]+[ +])*PRIVATE[ +]KEY-----"),
    ("anthropic_api_key", _EDGE + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai_api_key", _EDGE + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}"),
    ("openai_api_key", _EDGE + r"sk-[A-Za-z0-9]{32,}"),
    ("github_token", _EDGE + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b"),
    ("github_token", _EDGE + r"github_pat_[A-Za-z0-9_]{60,}"),
    ("aws_access_key_id", _EDGE + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("google_api_key", _EDGE + r"AIza[0-9A-Za-z_-]{35}\b"),
    ("slack_token", _EDGE + r"xox[abprs]-[0-9A-Za-z-]{10,}"),
    ("stripe_secret_key", _EDGE + r"(?:sk|rk)_live_[0-9A-Za-z]{24,}"),
)
# Patterns with a group named "secret" match a field name and its value; the value alone is
# the credential (previewed and redacted).
_MORE: tuple[tuple[str, str], ...] = (
    ("gitlab_token", _EDGE + r"gl(?:pat|dt|rt|ptt|ft|cbt|imt|soat|oas)-[0-9A-Za-z_-]{20,}"),
    ("npm_token", _EDGE + r"npm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", _EDGE + r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}"),
    ("huggingface_token", _EDGE + r"hf_[A-Za-z]{34}\b"),
    ("sendgrid_api_key", _EDGE + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![\w-])"),
    ("twilio_api_key", _EDGE + r"SK[0-9a-fA-F]{32}\b"),
    ("azure_storage_key", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)"),
    ("azure_shared_access_key", r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/]{43}=)"),
    (
        "gcp_service_account_key",
        r'\\?"private_key_id\\?"\s*:\s*\\?"(?P<secret>[0-9a-f]{40})\\?"',
    ),
    ("google_oauth_client_secret", _EDGE + r"GOCSPX-[A-Za-z0-9_-]{28}(?![\w-])"),
    ("databricks_token", _EDGE + r"dapi[0-9a-f]{32}(?:-\d)?\b"),
    ("digitalocean_token", _EDGE + r"do[por]_v1_[0-9a-f]{64}\b"),
    ("shopify_token", _EDGE + r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b"),
    ("vault_token", _EDGE + r"hv[sb]\.[A-Za-z0-9_-]{90,}"),
    (
        "slack_webhook_url",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{20,})",
    ),
    ("age_secret_key", _EDGE + r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b"),
    (
        "jwt",
        _JWT_EDGE + r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}(?![\w-])",
    ),
)

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...]
"""``(kind, compiled pattern)`` of every credential, in the order they are tried (Toolscore's
ten first). Compiled on first use (see :func:`_compiled`): most runs never need them."""

CREDENTIAL_KINDS: tuple[str, ...] = tuple(dict.fromkeys(kind for kind, _ in (*_SEED, *_MORE)))
"""Every credential kind, in the order its patterns are tried."""

# Each credential holds one of these literal texts (and so does the JSON text of a value
# holding it, and its percent-encoded form: none of their characters is escaped by either).
# A pattern is only tried on a text holding one of its own (Python's re finds a literal fast,
# while a pattern that starts with a look-behind is tried at every position).
_GATES: dict[str, tuple[str, ...]] = {
    "private_key": ("-----BEGIN",),
    "anthropic_api_key": ("sk-ant-",),
    "openai_api_key": ("sk-",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "aws_access_key_id": ("AKIA", "ASIA"),
    "google_api_key": ("AIza",),
    "slack_token": ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),
    "stripe_secret_key": ("_live_",),
    "gitlab_token": tuple(
        f"gl{t}-" for t in ("pat", "dt", "rt", "ptt", "ft", "cbt", "imt", "soat", "oas")
    ),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-AgE",),
    "huggingface_token": ("hf_",),
    "sendgrid_api_key": ("SG.",),
    "twilio_api_key": ("SK",),
    "azure_storage_key": ("AccountKey",),
    "azure_shared_access_key": ("SharedAccessKey",),
    "gcp_service_account_key": ("private_key_id",),
    "google_oauth_client_secret": ("GOCSPX-",),
    "databricks_token": ("dapi",),
    "digitalocean_token": ("_v1_",),
    "shopify_token": ("shpat_", "shpca_", "shppa_", "shpss_"),
    "vault_token": ("hvs.", "hvb."),
    "slack_webhook_url": ("hooks.slack.com",),
    "age_secret_key": ("AGE-SECRET-KEY-1",),
    "jwt": ("eyJ",),
}
_LITERALS = tuple(dict.fromkeys(g for gates in _GATES.values() for g in gates))
_PREFILTER = re.compile("|".join(map(re.escape, _LITERALS)))
_PREFILTER_BYTES = re.compile(_PREFILTER.pattern.encode("ascii"))
PREFILTER_SCAN_RE = _PREFILTER_BYTES
"""The batch prefilter with :mod:`re` (what :data:`PREFILTER_SCAN` is without google-re2)."""
# For RE2, over many JSON texts at once: the literals, some with what must follow them (RE2's
# automaton costs the same whatever the pattern, and fewer texts are then scanned closely).
_SCAN_SOURCE = "|".join(
    [
        re.escape(g)
        for g in _LITERALS
        if g not in ("npm_", "hf_", "SG.", "SK", "dapi", "eyJ", "AccountKey", "SharedAccessKey")
    ]
    + [
        r"npm_[A-Za-z0-9]{36}",
        r"hf_[A-Za-z]{34}",
        r"SG\.[A-Za-z0-9_-]{22}\.",
        r"SK[0-9a-fA-F]{32}",
        r"dapi[0-9a-f]{32}",
        r"eyJ[A-Za-z0-9_-]{10,}\.eyJ",
        r"AccountKey(?:=|%3[Dd])",
        r"SharedAccessKey(?:=|%3[Dd])",
    ]
)
try:
    import re2 as _re2
except ImportError:  # pragma: no cover - google-re2 is a dependency; this is a safety net
    PREFILTER_SCAN: Any = re.compile(_SCAN_SOURCE.encode("ascii"))
else:
    # RE2 matches the whole alternation in one automaton pass, in linear time.
    PREFILTER_SCAN = _re2.compile(_SCAN_SOURCE.encode("ascii"))
"""Finds where, in the JSON bytes of argument values, a credential may start: ``search`` and
``finditer(text, pos)`` as :mod:`re` has them. It finds every text :func:`scan_text` finds a
credential in (and fewer than :func:`may_contain_secret` lets through)."""


def _literal_search() -> Any:
    """``search`` of any of the literals, in the bytes of a text: RE2 (byte by byte, as
    Latin-1, so no text's bytes are refused), whose automaton costs the same for 60
    literals as for one, where Python's ``re`` tries them in turn (about 30 ns a character:
    30 us for a batch's finding texts)."""
    try:
        import re2
    except ImportError:  # pragma: no cover - see PREFILTER_SCAN
        return _PREFILTER_BYTES.search
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    return re2.compile(_PREFILTER.pattern.encode("ascii"), options=options).search


_SEARCH_LITERAL = _literal_search()
_SHORT = 32
"""Below this length, Python's ``re`` finds the literals sooner than a call into RE2."""


def _has_literal(text: str) -> bool:
    """Whether ``text`` holds one of the literals every credential holds (the prefilter)."""
    if len(text) < _SHORT:
        return _PREFILTER.search(text) is not None
    return _SEARCH_LITERAL(text.encode("utf-8", "surrogatepass")) is not None


_PEM_END = re.compile(r"-----END[ +](?:[A-Z0-9]+[ +])*PRIVATE[ +]KEY-----")
_DIGIT = re.compile(r"[0-9]")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
# a percent escape of an ASCII character: decoded before a scan
_PERCENT = re.compile(r"%([0-7][0-9A-Fa-f])")

PRIVATE_KEY_PREVIEW = "-----BEGIN … PRIVATE KEY-----"

SecretMatch = tuple[int, int, str, str]
"""``(start, end, kind, matched text)`` of one accepted match."""


# -- validators of a match ------------------------------------------------------------------


def _looks_random(text: str) -> bool:
    # Toolscore tests str.isdigit/islower/isupper; the patterns admit only ASCII here.
    return (
        _DIGIT.search(text) is not None
        and _UPPER.search(text) is not None
        and _LOWER.search(text) is not None
    )


def _mixed_case(text: str) -> bool:
    return _UPPER.search(text, 3) is not None and _LOWER.search(text, 3) is not None


def _jwt_header(text: str) -> bool:
    """A JWT only when its first segment decodes to a JSON object naming an ``alg``."""
    head = text[: text.index(".")]
    try:
        decoded = orjson.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (binascii.Error, ValueError):
        return False
    return isinstance(decoded, dict) and isinstance(decoded.get("alg"), str)


def _digits(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


def _luhn(number: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(number)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


_CARD_IIN = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|35|6")


def _card(text: str) -> bool:
    number = _digits(text)
    return 13 <= len(number) <= 19 and _CARD_IIN.match(number) is not None and _luhn(number)


def _phone(text: str) -> bool:
    return 8 <= len(_digits(text)) <= 15


_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AT": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "CH": 21, "CY": 28,
    "CZ": 24, "DE": 22, "DK": 18, "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15, "PL": 28, "PT": 25, "RO": 24, "SA": 24,
    "SE": 24, "SI": 19, "SK": 24, "TR": 26, "UA": 29,
}  # fmt: skip


def _iban(text: str) -> bool:
    code = text.replace(" ", "")
    if _IBAN_LENGTHS.get(code[:2]) != len(code):
        return False
    moved = code[4:] + code[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "anthropic_api_key": _looks_random,
    "openai_api_key": _looks_random,
    "huggingface_token": _mixed_case,
    "jwt": _jwt_header,
    "card_number": _card,
    "phone": _phone,
    "iban": _iban,
}

# -- personal data (opt-in) -----------------------------------------------------------------


def _pii_edge(before: str) -> str:
    """Not after any of the characters ``before`` (a character class's inside), except after
    an escaped newline or tab or a percent escape."""
    return rf"(?:(?<![{before}])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{{2}}))"


_PII_SOURCES: tuple[tuple[str, str, str], ...] = (
    # (kind, pattern, what its JSON text must hold: the batch prefilter's part)
    (
        "email",
        _pii_edge(r"\w.%+-") + r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
        r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![\w-])",
        r"[A-Za-z0-9]@[A-Za-z0-9]",
    ),
    (
        "us_ssn",
        _pii_edge(r"\w-") + r"(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])",
        r"\d{3}-\d{2}-\d{4}",
    ),
    (
        "card_number",
        _pii_edge(r"\w.,-") + r"(?:\d{4}([ -]?)\d{4}\1\d{4}\1\d{1,7}|3[47]\d{2}([ -]?)\d{6}\2\d{5})"
        r"(?![\w-]|[.,]\d)",
        r"\d{4}[ -]?\d{4}[ -]?\d{4}|\d{4}[ -]?\d{6}[ -]?\d{5}",
    ),
    (
        "phone",
        _pii_edge(r"\w+.-") + r"(?:\+[1-9]\d{0,2}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d){6,13}"
        r"|(?:\([2-9]\d{2}\) ?|[2-9]\d{2}[-. ])[2-9]\d{2}[-. ]\d{4})(?![\w-]|[.,]\d)",
        r"\+\d|\d{3}[ .-]\d{4}",
    ),
    (
        "iban",
        _pii_edge(r"\w") + r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?!\w)",
        r"[A-Z]{2}\d{2}",
    ),
)
PII_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...]
"""``(kind, compiled pattern)`` of the personal-data kinds, tried after every credential
(compiled on first use)."""
PII_KINDS: tuple[str, ...] = tuple(kind for kind, _, _ in _PII_SOURCES)
"""The personal-data kinds; none is looked for unless asked (``pii=``)."""
_PII_SET = frozenset(PII_KINDS)
_PII_PREFILTER = {kind: hint for kind, _, hint in _PII_SOURCES}

# (kind, pattern, validator or None, pattern has a "secret" group, gates: None for always), in
# the order they are tried
_Row = tuple[str, "re.Pattern[str]", "Callable[[str], bool] | None", bool, "tuple[str, ...] | None"]


class _Compiled:
    """The patterns compiled, with their rows: built the first time a text gets past the
    prefilter (compiling them all costs about 4 ms, at every start otherwise)."""

    def __init__(self) -> None:
        self.patterns = tuple((kind, re.compile(source)) for kind, source in (*_SEED, *_MORE))
        self.pii_patterns = tuple((kind, re.compile(source)) for kind, source, _ in _PII_SOURCES)
        self.table: tuple[_Row, ...] = tuple(
            (kind, pat, _VALIDATORS.get(kind), "secret" in pat.groupindex, _GATES[kind])
            for kind, pat in self.patterns
        )
        self.pii_rows: dict[str, _Row] = {
            kind: (kind, pat, _VALIDATORS.get(kind), False, None) for kind, pat in self.pii_patterns
        }


@lru_cache(maxsize=1)
def _compiled() -> _Compiled:
    return _Compiled()


def __getattr__(name: str) -> Any:
    if name == "PATTERNS":
        return _compiled().patterns
    if name == "PII_PATTERNS":
        return _compiled().pii_patterns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_TABLES: dict[frozenset[str], tuple[tuple[_Row, ...], re.Pattern[str] | None]] = {}


def pii_kinds(pii: bool | Iterable[str] | None) -> frozenset[str]:
    """The personal-data kinds a ``pii=`` argument asks for.

    Args:
        pii: ``True`` for every kind of :data:`PII_KINDS`, ``False``/``None`` for none, or the
            kinds themselves (``["email", "card_number"]``).

    Raises:
        ValueError: an unknown kind.
    """
    if pii is None or pii is False:
        return frozenset()
    if pii is True:
        return frozenset(PII_KINDS)
    if isinstance(pii, str):
        pii = [pii]
    kinds = frozenset(pii)
    unknown = sorted(kinds - set(PII_KINDS))
    if unknown:
        raise ValueError(
            f"unknown personal-data kind(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(PII_KINDS)}"
        )
    return kinds


def _table(pii: frozenset[str]) -> tuple[tuple[_Row, ...], re.Pattern[str] | None]:
    """The rows to try and the personal-data prefilter (None: no personal data asked)."""
    compiled = _compiled()
    if not pii:
        return compiled.table, None
    found = _TABLES.get(pii)
    if found is None:
        rows = tuple(compiled.pii_rows[kind] for kind in PII_KINDS if kind in pii)
        prefilter = re.compile("|".join(_PII_PREFILTER[kind] for kind in PII_KINDS if kind in pii))
        found = _TABLES[pii] = (compiled.table + rows, prefilter)
    return found


@lru_cache(maxsize=64)
def pii_prefilter(pii: frozenset[str]) -> Any:
    """The batch prefilter (RE2 where available, over JSON bytes) for credentials and the
    personal-data kinds ``pii``; :data:`PREFILTER_SCAN` when ``pii`` is empty."""
    if not pii:
        return PREFILTER_SCAN
    hints = "|".join(_PII_PREFILTER[kind] for kind in PII_KINDS if kind in pii)
    source = f"{_SCAN_SOURCE}|{hints}".encode("ascii")
    try:
        import re2
    except ImportError:  # pragma: no cover - see PREFILTER_SCAN
        return re.compile(source)
    return re2.compile(source)


_PII_SCOPE: ContextVar[frozenset[str]] = ContextVar("toolscore_pii_redaction", default=frozenset())
_P = ParamSpec("_P")
_R = TypeVar("_R")


class pii_redaction:
    """Within the block, :func:`redact_secrets` (and everything printed through it) also
    redacts the personal-data kinds ``pii`` (see :func:`pii_kinds`), and the credential scan
    looks for them; ``None`` keeps those of the enclosing block. The block's value is the
    kinds in force.

    A class rather than a generator: ``evaluate()`` enters one per call, and a generator's
    context manager costs several times as much to enter and leave. Like one, it also
    decorates a function (``@pii_redaction(True)``), each call in a block of its own (so a
    recursive or concurrent call restores its own scope)."""

    __slots__ = ("_kinds", "_token")

    def __init__(self, pii: bool | Iterable[str] | None) -> None:
        self._kinds = None if pii is None else pii_kinds(pii)
        self._token: Token[frozenset[str]] | None = None

    def __enter__(self) -> frozenset[str]:
        kinds = _PII_SCOPE.get() if self._kinds is None else self._kinds
        self._token = _PII_SCOPE.set(kinds)
        return kinds

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _PII_SCOPE.reset(self._token)

    def __call__(self, func: Callable[_P, _R]) -> Callable[_P, _R]:
        kinds = self._kinds

        @wraps(func)
        def scoped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with pii_redaction(kinds):
                return func(*args, **kwargs)

        return scoped


def use_pii(pii: bool | Iterable[str] | None) -> frozenset[str]:
    """From now on in this context (a command's run), look for and redact the personal-data
    kinds ``pii`` too (see :func:`pii_redaction` for a block)."""
    kinds = pii_kinds(pii)
    _PII_SCOPE.set(kinds)
    return kinds


def active_pii() -> frozenset[str]:
    """The personal-data kinds of the enclosing :func:`pii_redaction` block or
    :func:`use_pii` (empty: none)."""
    return _PII_SCOPE.get()


def may_contain_secret(text: str | bytes) -> bool:
    """The prefilter: False means no credential pattern can match ``text`` (a str or UTF-8
    bytes)."""
    if isinstance(text, str):
        return _has_literal(text)
    return _SEARCH_LITERAL(text) is not None


def preview(kind: str, secret: str) -> str:
    """A safe preview: the first 4 and last 2 characters (a fixed text for private keys; for
    personal data: an email's first character and domain, a card's last 4 digits, the last 2
    characters of anything else)."""
    if kind == "private_key":
        return PRIVATE_KEY_PREVIEW
    if kind in _PII_SET:
        if kind == "email":
            local, _, domain = secret.rpartition("@")
            return f"{local[:1]}…@{domain}"
        if kind == "card_number":
            return f"…{_digits(secret)[-4:]}"
        return f"…{secret[-2:]}"
    return f"{secret[:4]}…{secret[-2:]}"


def _decode_percent(text: str) -> tuple[str, list[int]] | None:
    """``text`` with its ASCII percent escapes decoded, and where each decoded character sits
    in it; None when it has none."""
    first = _PERCENT.search(text)
    if first is None:
        return None
    parts: list[str] = []
    marks: list[int] = []
    pos = 0
    shift = 0
    for m in _PERCENT.finditer(text, first.start()):
        parts.append(text[pos : m.start()])
        marks.append(m.start() - shift)
        parts.append(chr(int(m.group(1), 16)))
        shift += 2
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts), marks


def _matches(pattern: re.Pattern[str], text: str, retry: bool) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)``; with ``retry`` (the personal-data patterns, all of bounded
    length), a match its check rejects or that overlaps a claimed span is tried again one
    character on, so that a rejected candidate (``0958 4111 1111 1111``) does not hide the
    valid one inside it (``4111 1111 1111 1111``)."""
    if not retry:
        yield from pattern.finditer(text)
        return
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        yield m
        pos = m.start() + 1


def _scan(text: str, rows: tuple[_Row, ...]) -> list[SecretMatch]:
    found: list[SecretMatch] = []
    starts: list[int] = []  # claimed spans, sorted and disjoint
    ends: list[int] = []
    present = set(_PREFILTER.findall(text))
    for kind, pattern, check, grouped, gates in rows:
        if gates is not None and present.isdisjoint(gates):
            continue
        reach = -1  # with retry: the end of the last accepted match
        for m in _matches(pattern, text, gates is None):
            start, end = m.span("secret") if grouped else m.span()
            if start < reach:
                continue
            i = bisect_left(ends, start + 1)  # first claimed span ending after ``start``
            if i < len(starts) and starts[i] < end:
                continue
            secret = text[start:end]
            if check is not None and not check(secret):
                continue
            starts.insert(i, start)
            ends.insert(i, end)
            found.append((start, end, kind, secret))
            reach = end
    return found


def _scan_decoded(
    text: str, rows: tuple[_Row, ...]
) -> tuple[list[SecretMatch], str, list[int] | None]:
    """The matches in ``text`` (percent escapes decoded), the text they index, and the
    decoded characters' places (None when nothing was decoded)."""
    decoded = _decode_percent(text) if "%" in text else None
    if decoded is None:
        return _scan(text, rows), text, None
    plain, marks = decoded
    return _scan(plain, rows), plain, marks


def _unmap(pos: int, marks: list[int]) -> int:
    """A position in a decoded text as a position in the text as written."""
    return pos + 2 * bisect_left(marks, pos)


def _wanted(text: str, pii: frozenset[str]) -> tuple[tuple[_Row, ...], bool]:
    """The rows to try on ``text``, and whether any pattern may match it at all."""
    if not pii:
        if not _has_literal(text):
            return (), False
        return _compiled().table, True
    rows, pii_filter = _table(pii)
    if _has_literal(text):
        return rows, True
    return rows, pii_filter is not None and pii_filter.search(text) is not None


def scan_text(text: str, pii: Collection[str] = ()) -> list[SecretMatch]:
    """Every accepted match in ``text``, in pattern order, then position (Toolscore's order).

    Args:
        text: one string.
        pii: the personal-data kinds to look for too (see :func:`pii_kinds`).

    Returns:
        ``(start, end, kind, matched)`` tuples; empty when the prefilter rules the text out.
        A text with percent escapes is scanned decoded: the spans are then those of the text
        as written, ``matched`` the decoded credential.
    """
    rows, maybe = _wanted(text, frozenset(pii))
    if not maybe:
        return []
    found, _, marks = _scan_decoded(text, rows)
    if marks is None or not found:
        return found
    return [(_unmap(s, marks), _unmap(e, marks), kind, secret) for s, e, kind, secret in found]


def _pem_spans(text: str, found: list[SecretMatch]) -> list[tuple[int, int, str, str]]:
    """The redaction spans: matches sorted by position, PEM headers widened to their END line;
    anything inside a widened span is dropped."""
    spans: list[tuple[int, int, str, str]] = []
    reach = 0
    for start, end, kind, secret in sorted(found):
        if start < reach:
            continue  # inside a key block already redacted
        if kind == "private_key":
            m = _PEM_END.search(text, end)
            end = m.end() if m is not None else len(text)
        spans.append((start, end, kind, preview(kind, secret)))
        reach = end
    return spans


def redact_secrets(text: str, pii: Collection[str] | None = None) -> str:
    """Replace every credential in ``text`` by ``[REDACTED {kind}: {preview}]``.

    Private keys are redacted with their whole body (header through the next END line).
    Linear in the length of ``text``.

    Args:
        text: any text about to be printed or written.
        pii: personal-data kinds to redact too; by default those of the enclosing
            :func:`pii_redaction` block (none outside one).

    Returns:
        The text with every accepted match replaced; ``text`` itself when there is none.
    """
    kinds = _PII_SCOPE.get() if pii is None else frozenset(pii)
    rows, maybe = _wanted(text, kinds)
    if not maybe:
        return text
    found, scanned, marks = _scan_decoded(text, rows)
    if not found:
        return text
    parts: list[str] = []
    pos = 0
    for start, end, kind, shown in _pem_spans(scanned, found):
        if marks is not None:
            start, end = _unmap(start, marks), _unmap(end, marks)
        parts.append(text[pos:start])
        parts.append(f"[REDACTED {kind}: {shown}]")
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _none_wanted(texts: list[str], kinds: frozenset[str]) -> bool:
    """Whether no text of ``texts`` can need redaction: one prefilter search over them
    all (a text that holds a literal or a personal-data hint puts it in the joined text
    too), where a search per text would call into RE2 once each."""
    return not texts or not _wanted("\n".join(texts), kinds)[1]


def redact_each(texts: list[str], pii: Collection[str] | None = None) -> list[str]:
    """:func:`redact_secrets` of each text (``texts`` itself when none holds anything to
    redact): one prefilter search for the lot, e.g. a batch's error messages.

    Args:
        texts: the texts.
        pii: as for :func:`redact_secrets`.
    """
    kinds = _PII_SCOPE.get() if pii is None else frozenset(pii)
    if _none_wanted(texts, kinds):
        return texts
    return [redact_secrets(text, kinds) for text in texts]


def redact_findings(findings: list[Any], pii: Collection[str] = ()) -> list[Any]:
    """The findings with every credential (and personal data of the kinds ``pii``) redacted
    from the fields their message shows (tool name, path, detail); the list itself when there
    was none (one prefilter search for the lot).

    Args:
        findings: :class:`~toolscore.calls.Finding` objects.
        pii: personal-data kinds to redact too.
    """
    kinds = frozenset(pii)
    if _none_wanted([t for f in findings for t in (f.tool, f.path, f.detail) if t], kinds):
        return findings
    from .calls import Finding

    def clean(text: str | None) -> str | None:
        return text if not text else redact_secrets(text, kinds)

    out: list[Any] = []
    for f in findings:
        tool, path, detail = clean(f.tool), clean(f.path), clean(f.detail)
        if tool is f.tool and path is f.path and detail is f.detail:
            out.append(f)
            continue
        redacted = Finding(
            f.check, f.kind, f.severity, None, f.call_index, tool, f.location, f.preview,
            rule=f.rule, path=path, detail=detail, template=f.template,
        )  # fmt: skip
        out.append(redacted)
    return out


_QUOTE_TAIL = re.compile(r"[A-Za-z0-9_+/=.-]+\Z")


def redact_quote(text: str, limit: int) -> str:
    """A piece of input quoted in a message: redacted, then cut to about ``limit`` characters.

    Redact ``text`` whole (give it more than ``limit`` characters, so a key that runs past the
    cut is still recognised); when the cut falls inside a run of token characters, the whole
    run is left out, so a key too long for what was read is never shown in part.
    """
    out = redact_secrets(text)
    if len(out) <= limit:
        return out
    cut = out[:limit]
    if _QUOTE_TAIL.search(out[limit : limit + 1] or " ") is None:
        return cut + "…"
    return _QUOTE_TAIL.sub("", cut) + "…"


_GCP_ID = re.compile(r"[0-9a-f]{40}")
GCP_KEY_FILE = "gcp_service_account_key"
"""The kind of a service-account key file's ``private_key_id`` (:func:`iter_texts`)."""


def _gcp_key_id(value: dict[Any, Any]) -> bool:
    """A service-account key file as a dict: ``"type": "service_account"`` (or a
    ``private_key``) and a ``private_key_id``."""
    key_id = value.get("private_key_id")
    return (
        isinstance(key_id, str)
        and _GCP_ID.fullmatch(key_id) is not None
        and (value.get("type") == "service_account" or "private_key" in value)
    )


def redact_value(value: Any, pii: Collection[str] | None = None) -> Any:
    """A copy of a nested structure with every string redacted (dict keys included).

    Dicts, lists and tuples are rebuilt; other values are returned as they are. A
    service-account key file's ``private_key_id`` is redacted too. Use it before printing
    arguments in a human-facing report.
    """
    if isinstance(value, str):
        return redact_secrets(value, pii)
    if isinstance(value, dict):
        out = {
            (redact_secrets(k, pii) if isinstance(k, str) else k): redact_value(v, pii)
            for k, v in value.items()
        }
        if "private_key_id" in value and _gcp_key_id(value):
            out["private_key_id"] = (
                f"[REDACTED {GCP_KEY_FILE}: {preview(GCP_KEY_FILE, value['private_key_id'])}]"
            )
        return out
    if isinstance(value, list):
        return [redact_value(v, pii) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v, pii) for v in value)
    return value


def iter_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` with its Toolscore path, depth first in dict/list order.

    Dict keys are never yielded (see :func:`iter_texts`). Paths: ``key``, ``parent.key``,
    ``parent[0]``; a top-level list item is ``[0]``; int keys go through ``str()``.
    """
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            prefix = f"{where}." if where else ""
            stack.extend(reversed([(f"{prefix}{k}", v) for k, v in item.items()]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(item)]))


def iter_texts(value: Any, path: str = "") -> Iterator[tuple[str, str, str | None]]:
    """Like :func:`iter_strings`, with dict keys too, each just before its value:
    ``(path, text, kind)``.

    A key yields the path ``<key> parent.key``. ``kind`` is None, except for the
    ``private_key_id`` of a dict shaped like a Google service-account key file
    (``"type": "service_account"`` or a ``private_key``, and a 40-hex ``private_key_id``),
    which is yielded first, with kind ``gcp_service_account_key``: the caller reports it as
    that credential whatever the patterns say.
    """
    stack: list[tuple[str, Any, bool]] = [(path, value, False)]
    while stack:
        where, item, is_key = stack.pop()
        if is_key:
            yield f"<key> {where}", item, None
        elif isinstance(item, str):
            yield where, item, None
        elif isinstance(item, dict):
            prefix = f"{where}." if where else ""
            if "private_key_id" in item and _gcp_key_id(item):
                yield f"{prefix}private_key_id", item["private_key_id"], GCP_KEY_FILE
            entries: list[tuple[str, Any, bool]] = []
            for k, v in item.items():
                at = f"{prefix}{k}"
                if isinstance(k, str):
                    entries.append((at, k, True))
                entries.append((at, v, False))
            stack.extend(reversed(entries))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(f"{where}[{i}]", v, False) for i, v in enumerate(item)]))
