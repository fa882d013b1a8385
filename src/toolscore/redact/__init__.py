"""Credential and personal-data patterns, their previews, and redaction of text before it is
printed.

Credentials. The first ten patterns are Toolscore's (§9.1), tried in the same order with the
same span claiming: within one string, a match is skipped when it overlaps a span an earlier
accepted match claimed, and OpenAI and Anthropic keys must "look random" (a digit, a lowercase
and an uppercase letter somewhere in the whole match, prefix included). A rejected match claims
nothing. The kinds after them (:data:`CREDENTIAL_KINDS` lists every one) are credentials with
formats as distinctive: GitLab, npm, PyPI, Hugging Face, SendGrid, Twilio, Azure storage and
shared access keys in connection strings, Google service-account key files and OAuth client
secrets, Databricks, DigitalOcean, Shopify, Vault, Slack webhooks, age keys, JWTs, and the
keys of model and agent-tool providers (Groq, OpenRouter, xAI, Replicate, Perplexity,
Fireworks, LangSmith, Tavily, Pinecone). Where
a credential is the value of a named field (``AccountKey=...``, ``"private_key_id": "..."``),
only the value is the match: it is what is previewed and redacted.

Personal data (:data:`PII_KINDS`: email addresses, phone numbers, payment card numbers that
pass the Luhn check, US social security numbers, IBANs that pass their mod-97 check) is only
looked for when asked (``pii=``), after every credential kind.

Where a key starts. Anywhere: unlike the ``\\b`` of Toolscore's patterns, a key right after a
letter, a digit or ``_`` is found (``send_ghp_...`` as a tool name, ``x7sk-...``), so no
pattern has a look-behind and RE2 runs them all in linear time. A text holding percent
escapes of ASCII characters is scanned as decoded (``-----BEGIN%20PRIVATE%20KEY-----``,
``AccountKey%3D...``), and the matches are mapped back onto the text as written. Redaction
also covers a match that overlaps one claimed before it (a key inside another key's text),
so no piece of either is shown.

Speed. Every credential needs one of a few literal prefixes, so text without any of them is
dismissed by a single prefilter search (:func:`may_contain_secret`; :data:`PREFILTER_SCAN` does
the same over many texts at once in one RE2 pass). Every pattern runs in time linear in the
text, even on adversarial input (``"sk-" + "a" * 10**6``, ``"eyJ" * 10**5``).

:func:`redact_secrets` differs from Toolscore on purpose: a PEM private key is redacted from
its ``-----BEGIN ... PRIVATE KEY-----`` header through the next ``-----END ... PRIVATE KEY-----``
line (or to the end of the text if there is none), not only the header, so the key body is
never printed. It also builds its output once from the sorted spans, in linear time.

Where things are: the patterns and prefilters in ``_patterns``, the checks a match must pass
in ``_validators``, the scan of one text in ``_scan``, the personal-data scope in ``_pii``,
the walk over a nested value in ``_walk``; redaction itself here.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from ..calls import Finding, Location
from ._patterns import (
    _PII_SET,
    CREDENTIAL_KINDS,
    PII_KINDS,
    PREFILTER_SCAN,
    PREFILTER_SCAN_RE,
    _compiled,
    may_contain_secret,
    pii_prefilter,
)
from ._pii import _PII_SCOPE, active_pii, pii_kinds, pii_redaction, use_pii
from ._scan import SecretMatch, _scan_decoded, _unmap, _wanted, scan_text
from ._validators import _digits
from ._walk import GCP_KEY_FILE, _gcp_key_id, iter_strings, iter_texts

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


PATTERNS: tuple[tuple[str, re.Pattern[str]], ...]
"""``(kind, compiled pattern)`` of every credential, in the order they are tried (Toolscore's
ten first). Compiled on first use (see :func:`_compiled`): most runs never need them."""
PII_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...]
"""``(kind, compiled pattern)`` of the personal-data kinds, tried after every credential
(compiled on first use)."""


def __getattr__(name: str) -> Any:
    if name == "PATTERNS":
        return _compiled().patterns
    if name == "PII_PATTERNS":
        return _compiled().pii_patterns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_PEM_END = re.compile(r"-----END[ +](?:[A-Z0-9]+[ +])*PRIVATE[ +]KEY-----")

PRIVATE_KEY_PREVIEW = "-----BEGIN … PRIVATE KEY-----"


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


def _pem_spans(text: str, found: list[SecretMatch]) -> list[tuple[int, int, str, str]]:
    """The redaction spans: matches sorted by position, PEM headers widened to their END line;
    overlapping spans are one (shown as the first)."""
    spans: list[tuple[int, int, str, str]] = []
    reach = 0
    for start, end, kind, secret in sorted(found):
        if end <= reach:
            continue  # inside a span already redacted (a key block's body)
        if kind == "private_key":
            m = _PEM_END.search(text, end)
            end = m.end() if m is not None else len(text)
        if start < reach:  # across the end of a span already redacted: widen it
            first, _, shown_kind, shown = spans[-1]
            spans[-1] = (first, end, shown_kind, shown)
            reach = end
            continue
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
    found, scanned, marks = _scan_decoded(text, rows, overlaps=True)
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


def _source(finding: Any) -> str | None:
    location = finding.location
    return None if location is None else location.source


def redact_findings(findings: list[Any], pii: Collection[str] = ()) -> list[Any]:
    """The findings with every credential (and personal data of the kinds ``pii``) redacted
    from the fields their message shows (tool name, path, detail) and from the file their
    location names; the list itself when there was none (one prefilter search for the lot).

    Args:
        findings: :class:`~toolscore.calls.Finding` objects.
        pii: personal-data kinds to redact too.
    """
    kinds = frozenset(pii)
    texts = [t for f in findings for t in (f.tool, f.path, f.detail, _source(f)) if t]
    if _none_wanted(texts, kinds):
        return findings

    def clean(text: str | None) -> str | None:
        return text if not text else redact_secrets(text, kinds)

    out: list[Any] = []
    for f in findings:
        tool, path, detail = clean(f.tool), clean(f.path), clean(f.detail)
        location = f.location
        source = _source(f)
        if source and clean(source) != source:  # a file named with a key
            location = Location(redact_secrets(source, kinds), location.line, location.offset)
        if tool is f.tool and path is f.path and detail is f.detail and location is f.location:
            out.append(f)
            continue
        redacted = Finding(
            f.check, f.kind, f.severity, None, f.call_index, tool, location, f.preview,
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
