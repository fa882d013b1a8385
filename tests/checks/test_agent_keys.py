"""The keys of model and agent-tool providers (Groq, OpenRouter, xAI, Replicate, Perplexity,
Fireworks, LangSmith, Tavily, Pinecone; Hugging Face), their near misses, and keys glued to
the word before them (``send_ghp_...``), through the scan, the check and redaction."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from _secrets import AGENT, PLANTED, SECRET_PART, assert_no_secrets
from toolscore.calls import Batch, ToolCall
from toolscore.checks.secrets import TOOL_NAME_PATH, scan_call, secrets_check
from toolscore.redact import CREDENTIAL_KINDS, redact_secrets, redact_value, scan_text

AGENT_CASES = [(kind, key) for kind, keys in AGENT.items() for key in keys]
ALL_CASES = [(kind, key) for kind, keys in PLANTED.items() for key in keys]

HEX32 = "0123456789abcdef" * 2
ALNUM = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb" + "Qw3Er5Ty7Ui9Op1A"  # 52


def test_every_agent_kind_is_a_credential_kind_with_a_planted_key() -> None:
    assert set(AGENT) <= set(CREDENTIAL_KINDS)
    assert {
        "groq_api_key", "openrouter_api_key", "xai_api_key", "replicate_api_token",
        "perplexity_api_key", "fireworks_api_key", "langsmith_api_key", "tavily_api_key",
        "pinecone_api_key",
    } == set(AGENT)  # fmt: skip


@pytest.mark.parametrize(("kind", "key"), AGENT_CASES, ids=[k for k, _ in AGENT_CASES])
def test_agent_keys_are_found_whole(kind: str, key: str) -> None:
    assert scan_text(f"export KEY={key}\n") == [(11, 11 + len(key), kind, key)]
    assert redact_secrets(f"key: {key}.").startswith(f"key: [REDACTED {kind}: {key[:4]}…")


def test_a_hugging_face_token_may_hold_digits() -> None:
    key = "h" + "f_" + "AbCdEfGhIjKlMnOp1rStUvWxYz2bCdEfGh"
    assert [k for _s, _e, k, _m in scan_text(key)] == ["huggingface_token"]


NEAR_MISSES = [
    "gs" + "k_" + ALNUM[:51],  # 51 characters
    "gs" + "k_" + ALNUM + "x",  # 53: a longer word
    "gs" + "k_" + "abcdefghij" * 5 + "ab",  # 52 lowercase letters: a name
    "gs" + "k_" + "YOUR_GROQ_API_KEY_HERE",
    "sk-" + "or-v1-" + HEX32 * 2 + "0",  # 65 hex digits
    "sk-" + "or-v1-" + HEX32 + "g" * 32,  # not hex
    "sk-" + "or-v1-" + "1" * 64,  # all digits
    "xa" + "i-" + (ALNUM + ALNUM)[:79],  # 79
    "xa" + "i-" + "a" * 80,
    "r" + "8_" + ALNUM[:36],  # 36
    "r" + "8_" + "abcdefghijklmnopqrstuvwxyzabcdefghijk",  # no digit or uppercase
    "r" + "8_xxx",
    "pp" + "lx-" + ALNUM[:47],  # 47
    "pp" + "lx-" + "a" * 48,  # no digit
    "f" + "w_" + "3Zk6s8w7WqMUesCJT5pq8Z9",  # 23
    "f" + "w_" + "3Zk6s8w7WqMUesCJT5pq8Z0T",  # "0" is not base58
    "ns" + "fw_" + "ClassifierForImagesV2Big",  # an identifier: "l", "I"
    "ns" + "fw_" + "DetectorForPhotosVersion",  # no digit
    "lsv2" + "_pt_" + HEX32 + "_" + "0a1b2c3d4",  # 9 after the last "_"
    "lsv2" + "_pt_" + HEX32[:31] + "_" + "0a1b2c3d4e",  # 31
    "lsv2" + "_xx_" + HEX32 + "_" + "0a1b2c3d4e",
    "tv" + "ly-" + "YOUR_API_KEY",
    "tv" + "ly-" + "abcdefghijklmnopqrstuvwxyzab",  # no digit or uppercase
    "tv" + "ly-" + ALNUM[:23],  # 23
    "pc" + "sk_" + "3UiVd2_" + ALNUM[:39],  # 39 after the key id
    "pc" + "sk_" + "..." + "_" + ALNUM,
    "pc" + "sk_" + "abc_" + ALNUM,  # a 3-character key id
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_credentials(text: str) -> None:
    assert scan_text(text) == []
    assert scan_text(f"call send_{text} now") == []
    assert redact_secrets(text) == text


@pytest.mark.parametrize("before", ["_", "7", "x", "send_"])
@pytest.mark.parametrize(("kind", "key"), ALL_CASES, ids=[k for k, _ in ALL_CASES])
def test_a_key_right_after_a_word_character_is_found(kind: str, key: str, before: str) -> None:
    tool = before + key
    records = scan_call(ToolCall(tool, {"q": f"a{key}"}))
    assert (TOOL_NAME_PATH, kind) in [(r["path"], r["kind"]) for r in records]
    assert ("q", kind) in [(r["path"], r["kind"]) for r in records]
    assert_no_secrets(redact_secrets(tool))
    assert_no_secrets(repr(redact_value({tool: [f"a{key}"]})))


def test_the_check_finds_a_key_in_a_tool_name_glued_to_a_word() -> None:
    key = PLANTED["github_token"][0]
    check = secrets_check()
    found = check.feed(Batch([ToolCall(f"send_{key}", {"to": "x"}, index=0)]))
    assert [(f.kind, f.path) for f in found] == [("github_token", TOOL_NAME_PATH)]
    assert_no_secrets(found[0].message)


def test_a_key_inside_another_is_redacted_with_it() -> None:
    # "sk-..." is an OpenAI key inside the vault token's text: the finding is the OpenAI key
    # (the span it claims first), the redaction covers both, so no piece of either is shown
    inner = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    vault = "hv" + "s." + "CAES" + "x" * 20 + inner + "Ab1Cd2Ef3Gh4Ij5Kl6" * 4
    assert [k for _s, _e, k, _m in scan_text(vault)] == ["openai_api_key"]
    out = redact_secrets(f"token {vault} end")
    assert out == "token [REDACTED vault_token: hvs.…l6] end"


def test_percent_encoded_agent_keys_are_found() -> None:
    key = AGENT["groq_api_key"][0]
    assert [k for _s, _e, k, _m in scan_text("auth=Bearer%20" + key)] == ["groq_api_key"]


def test_the_corpus_holds_no_credential_anywhere(corpus: Path) -> None:
    """Every string of every line of the shared corpus (tool names, trace ids, arguments,
    results, gold calls), scanned alone and glued after a word: 0 findings."""
    strings = 0
    findings = []
    for path in sorted(corpus.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            stack = [orjson.loads(line)]
            while stack:
                item = stack.pop()
                if isinstance(item, dict):
                    stack.extend(item.keys())
                    stack.extend(item.values())
                elif isinstance(item, list):
                    stack.extend(item)
                elif isinstance(item, str):
                    strings += 1
                    findings.extend(scan_text(item))
                    findings.extend(scan_text("x_" + item))
    assert strings > 30_000  # 31,425 strings in the corpus of this writing
    assert findings == []


def test_planted_parts_are_in_the_planted_values() -> None:
    for key, part in SECRET_PART.items():
        assert part in key
