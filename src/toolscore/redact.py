"""Credential patterns, their previews, and redaction of text before it is printed.

The ten patterns are Toolscore's (§9.1), tried in the same order with the same span claiming:
within one string, a match is skipped when it overlaps a span an earlier accepted match
claimed, and OpenAI and Anthropic keys must "look random" (a digit, a lowercase and an
uppercase letter somewhere in the whole match, prefix included). A rejected match claims
nothing.

Every pattern needs one of a few literal prefixes (``sk-``, ``gh?_``, ``github_pat_``, ``AKIA``,
``ASIA``, ``AIza``, ``xox?-``, ``_live_``, ``-----BEGIN``), so text without any of them is
dismissed by a single prefilter search. Every pattern runs in time linear in the text, even on
adversarial input (``"sk-" + "a" * 10**6``): no quantified group can match the same text two ways.

:func:`redact_secrets` differs from Toolscore on purpose: a PEM private key is redacted from
its ``-----BEGIN ... PRIVATE KEY-----`` header through the next ``-----END ... PRIVATE KEY-----``
line (or to the end of the text if there is none), not only the header, so the key body is
never printed. It also builds its output once from the sorted spans, in linear time.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

__all__ = [
    "PATTERNS",
    "PREFILTER_SCAN",
    "PREFILTER_SCAN_RE",
    "PRIVATE_KEY_PREVIEW",
    "SecretMatch",
    "iter_strings",
    "may_contain_secret",
    "preview",
    "redact_secrets",
    "redact_value",
    "scan_text",
]

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("anthropic_api_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai_api_key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}")),
    ("openai_api_key", re.compile(r"\bsk-[A-Za-z0-9]{32,}")),
    ("github_token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b")),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{60,}")),
    ("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("slack_token", re.compile(r"\bxox[abprs]-[0-9A-Za-z-]{10,}")),
    ("stripe_secret_key", re.compile(r"\b(?:sk|rk)_live_[0-9A-Za-z]{24,}")),
)
"""``(kind, compiled pattern)`` in the order they are tried."""

_RANDOM_KINDS = frozenset({"anthropic_api_key", "openai_api_key"})
# (kind, pattern, must look random), precomputed for the scan loop.
_TABLE = tuple((kind, pat, kind in _RANDOM_KINDS) for kind, pat in PATTERNS)

_PREFIX_SOURCE = r"sk-|gh[pousr]_|github_pat_|AKIA|ASIA|AIza|xox[abprs]-|_live_|-----BEGIN "
_PREFILTER = re.compile(_PREFIX_SOURCE)
_PREFILTER_BYTES = re.compile(_PREFIX_SOURCE.encode("ascii"))
# The same test for long texts (a batch's argument texts at once). RE2 (google-re2) matches the
# whole alternation in one automaton pass, in linear time, some 2.5 times faster than re.
# Without it, re with a pattern written for speed: every prefix has a "-", "_" or "A" whose
# surroundings are then checked, and those three are rarer than the prefixes' first letters
# ("s", "g", "x"), which the plain alternation tries at every position. Both accept what
# _PREFILTER_BYTES accepts (the second also "github_" without "pat_"); tests/test_redact.py
# holds them to it.
PREFILTER_SCAN_RE = re.compile(
    rb"[-_A](?:(?<=sk-)|(?<=gh[pousr]_)|(?<=github_)|(?<=xox[abprs]-)|live_|----BEGIN |KIA|SIA|Iza)"
)
try:
    import re2 as _re2
except ImportError:  # pragma: no cover - google-re2 is a dependency; this is a safety net
    PREFILTER_SCAN: Any = PREFILTER_SCAN_RE
else:
    PREFILTER_SCAN = _re2.compile(_PREFIX_SOURCE.encode("ascii"))
"""Finds where, in the JSON bytes of argument values, a credential may start: ``search`` and
``finditer(text, pos)`` as :mod:`re` has them."""
# The same prefixes with the word boundary every pattern but the PEM one starts with: slower
# (no literal scan), so it only runs on text the plain prefilter let through ("task-1").
_PREFILTER_WORD = re.compile(
    r"\b(?:sk-|gh[pousr]_|github_pat_|AKIA|ASIA|AIza|xox[abprs]-|[sr]k_live_)|-----BEGIN "
)
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_DIGIT = re.compile(r"[0-9]")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")

PRIVATE_KEY_PREVIEW = "-----BEGIN … PRIVATE KEY-----"

SecretMatch = tuple[int, int, str, str]
"""``(start, end, kind, matched text)`` of one accepted match."""


def may_contain_secret(text: str | bytes) -> bool:
    """The prefilter: False means no pattern can match ``text`` (a str or UTF-8 bytes)."""
    if isinstance(text, str):
        return _PREFILTER.search(text) is not None
    return _PREFILTER_BYTES.search(text) is not None


def preview(kind: str, secret: str) -> str:
    """A safe preview: the first 4 and last 2 characters (a fixed text for private keys)."""
    if kind == "private_key":
        return PRIVATE_KEY_PREVIEW
    return f"{secret[:4]}…{secret[-2:]}"


def _looks_random(text: str) -> bool:
    # Toolscore tests str.isdigit/islower/isupper; the patterns admit only ASCII here.
    return (
        _DIGIT.search(text) is not None
        and _UPPER.search(text) is not None
        and _LOWER.search(text) is not None
    )


def scan_text(text: str) -> list[SecretMatch]:
    """Every accepted match in ``text``, in pattern order, then position (Toolscore's order).

    Args:
        text: one string.

    Returns:
        ``(start, end, kind, matched)`` tuples; empty when the prefilter rules the text out.
    """
    if _PREFILTER.search(text) is None or _PREFILTER_WORD.search(text) is None:
        return []
    found: list[SecretMatch] = []
    starts: list[int] = []  # claimed spans, sorted and disjoint
    ends: list[int] = []
    for kind, pattern, random in _TABLE:
        for m in pattern.finditer(text):
            start, end = m.span()
            i = bisect_left(ends, start + 1)  # first claimed span ending after ``start``
            if i < len(starts) and starts[i] < end:
                continue
            secret = m.group()
            if random and not _looks_random(secret):
                continue
            starts.insert(i, start)
            ends.insert(i, end)
            found.append((start, end, kind, secret))
    return found


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


def redact_secrets(text: str) -> str:
    """Replace every credential in ``text`` by ``[REDACTED {kind}: {preview}]``.

    Private keys are redacted with their whole body (header through the next END line).
    Linear in the length of ``text``.

    Args:
        text: any text about to be printed or written.

    Returns:
        The text with every accepted match replaced; ``text`` itself when there is none.
    """
    found = scan_text(text)
    if not found:
        return text
    parts: list[str] = []
    pos = 0
    for start, end, kind, shown in _pem_spans(text, found):
        parts.append(text[pos:start])
        parts.append(f"[REDACTED {kind}: {shown}]")
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def redact_value(value: Any) -> Any:
    """A copy of a nested structure with every string redacted (dict keys included).

    Dicts, lists and tuples are rebuilt; other values are returned as they are. Use it before
    printing arguments in a human-facing report.
    """
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {
            (redact_secrets(k) if isinstance(k, str) else k): redact_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v) for v in value)
    return value


def iter_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` with its Toolscore path, depth first in dict/list order.

    Dict keys are never yielded. Paths: ``key``, ``parent.key``, ``parent[0]``; a top-level list
    item is ``[0]``; int keys go through ``str()``.
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
