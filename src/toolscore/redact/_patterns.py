"""The credential and personal-data patterns, in the order they are tried, and the
prefilters that dismiss a text holding none of their literal prefixes (see
:mod:`toolscore.redact` for what each kind is and where a key may start)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ._validators import _VALIDATORS

try:
    import re2 as _re2
except ImportError:  # pragma: no cover - google-re2 is a dependency; this is a safety net
    _re2 = None

# A key is found wherever it starts, even right after a letter, a digit or "_" (a tool named
# ``send_ghp_...``): no pattern has a look-around, so RE2 runs them all in linear time. Where a
# key must not be followed by a token character, the pattern says so with a character it
# consumes (or the end) after a group named "secret", the key itself.
_END = r"(?:[^\w-]|$)"

_SEED: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN[ +](?:[A-Z0-9]+[ +])*PRIVATE[ +]KEY-----"),
    ("anthropic_api_key", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai_api_key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}"),
    ("openai_api_key", r"sk-[A-Za-z0-9]{32,}"),
    ("github_token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b"),
    ("github_token", r"github_pat_[A-Za-z0-9_]{60,}"),
    ("aws_access_key_id", r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{35}\b"),
    ("slack_token", r"xox[abprs]-[0-9A-Za-z-]{10,}"),
    ("stripe_secret_key", r"(?:sk|rk)_live_[0-9A-Za-z]{24,}"),
)
# Patterns with a group named "secret" match a field name and its value; the value alone is
# the credential (previewed and redacted).
_MORE: tuple[tuple[str, str], ...] = (
    ("gitlab_token", r"gl(?:pat|dt|rt|ptt|ft|cbt|imt|soat|oas)-[0-9A-Za-z_-]{20,}"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}"),
    ("huggingface_token", r"hf_[A-Za-z0-9]{34}\b"),
    ("sendgrid_api_key", r"(?P<secret>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})" + _END),
    ("twilio_api_key", r"SK[0-9a-fA-F]{32}\b"),
    ("azure_storage_key", r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)"),
    ("azure_shared_access_key", r"SharedAccessKey=(?P<secret>[A-Za-z0-9+/]{43}=)"),
    (
        "gcp_service_account_key",
        r'\\?"private_key_id\\?"\s*:\s*\\?"(?P<secret>[0-9a-f]{40})\\?"',
    ),
    ("google_oauth_client_secret", r"(?P<secret>GOCSPX-[A-Za-z0-9_-]{28})" + _END),
    ("databricks_token", r"dapi[0-9a-f]{32}(?:-\d)?\b"),
    ("digitalocean_token", r"do[por]_v1_[0-9a-f]{64}\b"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b"),
    ("vault_token", r"hv[sb]\.[A-Za-z0-9_-]{90,}"),
    (
        "slack_webhook_url",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{20,})",
    ),
    ("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b"),
    (
        "jwt",
        r"(?P<secret>eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,})" + _END,
    ),
    # the keys of model and agent-tool providers
    ("groq_api_key", r"gsk_[A-Za-z0-9]{52}\b"),
    ("openrouter_api_key", r"sk-or-v1-[0-9a-f]{64}\b"),
    ("xai_api_key", r"xai-[A-Za-z0-9]{80}\b"),
    ("replicate_api_token", r"r8_[A-Za-z0-9]{37}\b"),
    ("perplexity_api_key", r"pplx-[A-Za-z0-9]{48}\b"),
    ("fireworks_api_key", r"fw_[1-9A-HJ-NP-Za-km-z]{24,40}\b"),  # base58
    ("langsmith_api_key", r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}\b"),
    ("tavily_api_key", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,48}\b"),
    ("pinecone_api_key", r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,80}\b"),
)


CREDENTIAL_KINDS: tuple[str, ...] = tuple(dict.fromkeys(kind for kind, _ in (*_SEED, *_MORE)))
"""Every credential kind, in the order its patterns are tried."""

# Each credential holds one of these literal texts (and so does the JSON text of a value
# holding it, and its percent-encoded form: none of their characters is escaped by either).
# A pattern is only tried on a text holding one of its own (one search finds which literals a
# text holds; each pattern tried is then one more pass over it).
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
    "groq_api_key": ("gsk_",),
    "openrouter_api_key": ("sk-",),  # "sk-or-v1-" holds "sk-", which the prefilter finds first
    "xai_api_key": ("xai-",),
    "replicate_api_token": ("r8_",),
    "perplexity_api_key": ("pplx-",),
    "fireworks_api_key": ("fw_",),
    "langsmith_api_key": ("lsv2_pt_", "lsv2_sk_"),
    "tavily_api_key": ("tvly-",),
    "pinecone_api_key": ("pcsk_",),
}
_LITERALS = tuple(dict.fromkeys(g for gates in _GATES.values() for g in gates))
_PREFILTER = re.compile("|".join(map(re.escape, _LITERALS)))
_PREFILTER_BYTES = re.compile(_PREFILTER.pattern.encode("ascii"))
PREFILTER_SCAN_RE = _PREFILTER_BYTES
"""The batch prefilter with :mod:`re` (what :data:`PREFILTER_SCAN` is without google-re2)."""
_REFINED = (
    "npm_", "hf_", "SG.", "SK", "dapi", "eyJ", "AccountKey", "SharedAccessKey",
    "gsk_", "xai-", "r8_", "pplx-", "fw_",
)  # fmt: skip
"""The literals the batch scan looks for with what must follow them (below)."""
# For RE2, over many JSON texts at once: the literals, some with what must follow them (RE2's
# automaton costs the same whatever the pattern, and fewer texts are then scanned closely).
_SCAN_SOURCE = "|".join(
    [re.escape(g) for g in _LITERALS if g not in _REFINED]
    + [
        r"npm_[A-Za-z0-9]{36}",
        r"hf_[A-Za-z0-9]{34}",
        r"gsk_[A-Za-z0-9]{52}",
        r"xai-[A-Za-z0-9]{80}",
        r"r8_[A-Za-z0-9]{37}",
        r"pplx-[A-Za-z0-9]{48}",
        r"fw_[1-9A-HJ-NP-Za-km-z]{24}",
        r"SG\.[A-Za-z0-9_-]{22}\.",
        r"SK[0-9a-fA-F]{32}",
        r"dapi[0-9a-f]{32}",
        r"eyJ[A-Za-z0-9_-]{10,}\.eyJ",
        r"AccountKey(?:=|%3[Dd])",
        r"SharedAccessKey(?:=|%3[Dd])",
    ]
)


def _compile_scan(source: bytes, *, latin1: bool = False) -> Any:
    """``source`` compiled by RE2 where it is installed (the whole alternation matched in one
    automaton pass, in linear time; with ``latin1`` byte by byte, so no text's bytes are
    refused), else by Python's ``re``."""
    if _re2 is None:  # pragma: no cover - see above
        return re.compile(source)
    if not latin1:
        return _re2.compile(source)
    options = _re2.Options()
    options.encoding = _re2.Options.Encoding.LATIN1
    return _re2.compile(source, options=options)


PREFILTER_SCAN: Any = _compile_scan(_SCAN_SOURCE.encode("ascii"))
"""Finds where, in the JSON bytes of argument values, a credential may start: ``search`` and
``finditer(text, pos)`` as :mod:`re` has them. It finds every text :func:`scan_text` finds a
credential in (and fewer than :func:`may_contain_secret` lets through)."""

# ``search`` of any of the literals, in the bytes of a text: RE2's automaton costs the same for
# 60 literals as for one, where Python's ``re`` tries them in turn (about 30 ns a character:
# 30 us for a batch's finding texts).
_SEARCH_LITERAL = _compile_scan(_PREFILTER.pattern.encode("ascii"), latin1=True).search
_SHORT = 32
"""Below this length, Python's ``re`` finds the literals sooner than a call into RE2."""


def _has_literal(text: str) -> bool:
    """Whether ``text`` holds one of the literals every credential holds (the prefilter)."""
    if len(text) < _SHORT:
        return _PREFILTER.search(text) is not None
    return _SEARCH_LITERAL(text.encode("utf-8", "surrogatepass")) is not None


def may_contain_secret(text: str | bytes) -> bool:
    """The prefilter: False means no credential pattern can match ``text`` (a str or UTF-8
    bytes)."""
    if isinstance(text, str):
        return _has_literal(text)
    return _SEARCH_LITERAL(text) is not None


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
PII_KINDS: tuple[str, ...] = tuple(kind for kind, _, _ in _PII_SOURCES)
"""The personal-data kinds; none is looked for unless asked (``pii=``)."""
_PII_SET = frozenset(PII_KINDS)
_PII_PREFILTER = {kind: hint for kind, _, hint in _PII_SOURCES}

# (kind, pattern, validator or None, the group that is the credential (0: the whole match),
# gates: None for always), in the order they are tried
_Row = tuple[str, Any, "Callable[[str], bool] | None", int, "tuple[str, ...] | None"]


def _compile_text(source: str) -> Any:
    """A credential pattern compiled by RE2 (linear in the text whatever it holds), else by
    Python's ``re`` (the safety net above)."""
    return re.compile(source) if _re2 is None else _re2.compile(source)


class _Compiled:
    """The patterns compiled, with their rows: built the first time a text gets past the
    prefilter (compiling them all costs a few ms, at every start otherwise). The credential
    patterns run on RE2; the personal-data ones, all of bounded length, need look-arounds and
    run on Python's ``re``."""

    def __init__(self) -> None:
        self.patterns = tuple((kind, _compile_text(source)) for kind, source in (*_SEED, *_MORE))
        self.pii_patterns = tuple((kind, re.compile(source)) for kind, source, _ in _PII_SOURCES)
        self.table: tuple[_Row, ...] = tuple(
            (kind, pat, _VALIDATORS.get(kind), pat.groupindex.get("secret", 0), _GATES[kind])
            for kind, pat in self.patterns
        )
        self.pii_rows: dict[str, _Row] = {
            kind: (kind, pat, _VALIDATORS.get(kind), 0, None) for kind, pat in self.pii_patterns
        }


@lru_cache(maxsize=1)
def _compiled() -> _Compiled:
    return _Compiled()


_TABLES: dict[frozenset[str], tuple[tuple[_Row, ...], re.Pattern[str] | None]] = {}


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
    return _compile_scan(f"{_SCAN_SOURCE}|{hints}".encode("ascii"))
