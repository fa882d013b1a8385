"""The checks a pattern's match must pass to count: keys that must look random (the whole
key, its letters past the prefix, or its random part past the prefix), a JWT's
header, the Luhn check of a card number, an IBAN's mod-97 check, a phone number's length."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

import orjson

_DIGIT = re.compile(r"[0-9]")
_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")


def _looks_random(text: str) -> bool:
    # Toolscore tests str.isdigit/islower/isupper; the patterns admit only ASCII here.
    return (
        _DIGIT.search(text) is not None
        and _UPPER.search(text) is not None
        and _LOWER.search(text) is not None
    )


_SEPARATOR = re.compile(r"[_-]")


def _tail(text: str) -> str:
    """What follows a key's last ``_`` or ``-``: its random part, past the prefix."""
    *_, last = _SEPARATOR.finditer(text)  # every prefix ends with one
    return text[last.end() :]


def _random_tail(text: str) -> bool:
    """A key whose random part has a digit, a lowercase and an uppercase letter (a name or a
    placeholder, ``gsk_YOUR_KEY...``, has not)."""
    return _looks_random(_tail(text))


_LETTER = re.compile(r"[A-Za-z]")


def _digit_and_letter_tail(text: str) -> bool:
    """A key whose random part (hex or alphanumeric) is neither all digits nor all letters."""
    tail = _tail(text)
    return _DIGIT.search(tail) is not None and _LETTER.search(tail) is not None


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
    "groq_api_key": _random_tail,
    "openrouter_api_key": _digit_and_letter_tail,
    "xai_api_key": _random_tail,
    "replicate_api_token": _random_tail,
    "perplexity_api_key": _digit_and_letter_tail,
    "fireworks_api_key": _random_tail,
    "tavily_api_key": _random_tail,
    "pinecone_api_key": _random_tail,
    "jwt": _jwt_header,
    "card_number": _card,
    "phone": _phone,
    "iban": _iban,
}
