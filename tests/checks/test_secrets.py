"""The credential scan: every kind, paths, previews, order, boundaries and the corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import Batch, Finding, ToolCall
from toolscore.checks.secrets import ToolNames, find_secrets, scan_call, secrets_check

# Fake credentials, built from pieces so no file holds a whole one.
ANTHROPIC = "sk-ant-" + "api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
OPENAI_PROJ = "sk-proj-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"
OPENAI = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
GITHUB = "ghp" + "_" + "a1B2c3D4e5" * 3 + "F6g7H8"
GITHUB_PAT = "github_pat_" + "11AbCdEfG_" * 6 + "xy"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6q"
SLACK = "xoxb" + "-1234567890-abcdefghij"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
PEM_HEADER = "-----BEGIN RSA " + "PRIVATE KEY-----"
PEM = PEM_HEADER + "\nMIIEpAIBAAKCAQEA7x\nbody\n-----END RSA PRIVATE KEY-----\n"

KEYS = {
    "anthropic_api_key": ANTHROPIC,
    "openai_api_key": OPENAI_PROJ,
    "github_token": GITHUB,
    "aws_access_key_id": AWS,
    "google_api_key": GOOGLE,
    "slack_token": SLACK,
    "stripe_secret_key": STRIPE,
    "private_key": PEM,
}


def call(tool: str, args: Any, index: int = 0) -> ToolCall:
    return ToolCall(tool, args, index=index)


def scan(args: Any) -> list[tuple[str, str, str]]:
    return [(r["path"], r["kind"], r["preview"]) for r in scan_call(call("t", args))]


def test_key_lengths_are_what_the_patterns_need() -> None:
    assert len(GITHUB) == 40 and len(AWS) == 20 and len(GOOGLE) == 39


@pytest.mark.parametrize(("kind", "key"), list(KEYS.items()))
def test_every_kind_found_with_preview(kind: str, key: str) -> None:
    expected = "-----BEGIN … PRIVATE KEY-----" if kind == "private_key" else f"{key[:4]}…{key[-2:]}"
    assert scan({"v": key}) == [("v", kind, expected)]
    assert scan({"v": f"Bearer {key} trailing"}) == [("v", kind, expected)]


def test_other_openai_and_github_forms() -> None:
    assert scan({"k": OPENAI}) == [("k", "openai_api_key", "sk-A…p6")]
    assert scan({"k": GITHUB_PAT}) == [("k", "github_token", "gith…xy")]
    for prefix in ("gho", "ghu", "ghs", "ghr"):
        assert scan({"k": prefix + GITHUB[3:]})[0][1] == "github_token"
    assert scan({"k": "ASIA" + AWS[4:]})[0][1] == "aws_access_key_id"
    assert scan({"k": "rk_live_" + STRIPE[8:]})[0][1] == "stripe_secret_key"


def test_paths_at_any_depth() -> None:
    args = {
        "headers": {"Authorization": f"Bearer {OPENAI_PROJ}"},
        "files": [{"name": "id_rsa", "content": PEM}],
        "list": [["x", AWS]],
        5: SLACK,
        "note": f"first line\nsecond line has {GITHUB}\nthird",
    }
    assert scan(args) == [
        ("headers.Authorization", "openai_api_key", "sk-p…cd"),
        ("files[0].content", "private_key", "-----BEGIN … PRIVATE KEY-----"),
        ("list[0][1]", "aws_access_key_id", "AKIA…LE"),
        ("5", "slack_token", "xoxb…ij"),
        ("note", "github_token", "ghp_…H8"),
    ]
    assert scan([{"a": AWS}, GOOGLE]) == [
        ("[0].a", "aws_access_key_id", "AKIA…LE"),
        ("[1]", "google_api_key", "AIza…6q"),
    ]


def test_keys_are_scanned_numbers_and_bools_are_not() -> None:
    # Toolscore skips dict keys; a key in a key (a header name, say) is a credential all the same
    assert scan({AWS: "value", "n": 5, "b": True, "none": None}) == [
        (f"<key> {AWS}", "aws_access_key_id", "AKIA…LE")
    ]
    assert scan({"n": 5, "b": True, "none": None, 7: "x"}) == []


def test_non_random_openai_and_anthropic_keys_are_not_found() -> None:
    assert scan({"k": "sk-" + "ab3" * 12}) == []  # no uppercase
    assert scan({"k": "sk-" + "abCD" * 9}) == []  # no digit
    assert scan({"k": "sk-ant-api03-" + "abc" * 8 + "xyz0123"}) == []
    assert scan({"k": "sk-proj-" + "a" * 40}) == []
    # the prefix supplies the lowercase letter: digits and uppercase suffice
    assert scan({"k": "sk-" + "AB12" * 8})[0][1] == "openai_api_key"


def test_exact_length_boundaries() -> None:
    assert scan({"k": GITHUB + "a"}) == []  # 37 characters after ghp_
    assert scan({"k": GITHUB[:-1]}) == []  # 35
    assert scan({"k": AWS + "Q"}) == []  # 17 after AKIA
    assert scan({"k": AWS[:-1]}) == []
    assert scan({"k": GOOGLE[:-1] + "-"}) == []  # trailing \b fails at the end
    assert scan({"k": "sk-" + "A1b2" * 7 + "A1b"}) == []  # 31 after sk-


def test_keys_inside_words_are_found() -> None:
    # unlike Toolscore's \b: a key glued to a word is a key all the same
    for before in ("x", "key_", "7", "Bearer "):
        assert scan({"k": before + OPENAI})[0][1] == "openai_api_key"


def test_order_is_pattern_order_within_a_string() -> None:
    text = f"{AWS} then {ANTHROPIC} then {PEM_HEADER}"
    assert [k for _, k, _ in scan({"s": text})] == [
        "private_key",
        "anthropic_api_key",
        "aws_access_key_id",
    ]


def test_span_claiming() -> None:
    # sk-proj-... is claimed by the project pattern; the generic sk- pattern finds nothing more
    assert [k for _, k, _ in scan({"s": OPENAI_PROJ})] == ["openai_api_key"]
    # an anthropic key is not also an openai key
    assert [k for _, k, _ in scan({"s": ANTHROPIC})] == ["anthropic_api_key"]
    # two keys in one string are two findings
    assert len(scan({"s": f"{AWS} {AWS}"})) == 2


def test_corpus_has_no_false_positives(corpus: Path) -> None:
    calls = []
    for name in ("tau-bench-airline.jsonl", "toolbench.jsonl"):
        for line in (corpus / name).read_bytes().splitlines():
            d = orjson.loads(line)
            calls.append(ToolCall(d["tool"], d.get("args")))
    assert len(calls) > 1000
    assert find_secrets(calls) == {"secret_count": 0, "secrets": []}


def test_the_check_emits_findings_and_metrics() -> None:
    items = [
        call("search", {"q": "weather"}, 0),
        call("fetch", {"headers": {"Authorization": f"Bearer {OPENAI_PROJ}"}}, 1),
        call("http_post", {"body": {"text": AWS}}, 2),
    ]
    check = secrets_check()
    findings = check.feed(Batch(calls=items, done=[]))
    assert findings == [
        Finding(
            check="secrets",
            kind="openai_api_key",
            severity="error",
            message="call 2 fetch passes a credential (openai_api_key) in "
            "'headers.Authorization': sk-p…cd",
            call_index=1,
            tool="fetch",
            preview="sk-p…cd",
        ),
        Finding(
            check="secrets",
            kind="aws_access_key_id",
            severity="error",
            message="call 3 http_post passes a credential (aws_access_key_id) in "
            "'body.text': AKIA…LE",
            call_index=2,
            tool="http_post",
            preview="AKIA…LE",
        ),
    ]
    assert check.finish() == []
    assert check.metrics() == {
        "security_metrics": {
            "secret_count": 2,
            "secrets": [
                {
                    "index": 1,
                    "tool": "fetch",
                    "path": "headers.Authorization",
                    "kind": "openai_api_key",
                    "preview": "sk-p…cd",
                },
                {
                    "index": 2,
                    "tool": "http_post",
                    "path": "body.text",
                    "kind": "aws_access_key_id",
                    "preview": "AKIA…LE",
                },
            ],
        }
    }
    assert all(OPENAI_PROJ not in f.message and AWS not in f.message for f in findings)


def test_tool_names_shared_by_checks_find_what_each_check_finds_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolscore.checks.secrets as secrets

    monkeypatch.setattr(secrets, "_TOOL_CACHE", 2)  # the shared memory starts afresh too
    traces = [
        [call(AWS, {"q": GITHUB}, 0), call("search", {}, 1), call("a", {}, 2)],
        [call("b", {}, 0), call(AWS, {}, 1), call(SLACK, {"k": 1}, 2)],
        [call(SLACK, {}, 0), call(AWS, {}, 1), call("c", {}, 2)],
    ]
    names = ToolNames(frozenset())
    for items in traces:
        alone, shared = secrets_check(), secrets_check(tool_names=names)
        found = alone.feed(Batch(calls=items, done=[]))
        assert found and shared.feed(Batch(calls=items, done=[])) == found
        assert shared.metrics() == alone.metrics()
    # a check looking for other kinds scans the names itself
    pii = secrets_check(pii=True, tool_names=names)
    assert pii.feed(Batch(calls=traces[0], done=[])) == secrets_check(pii=True).feed(
        Batch(calls=traces[0], done=[])
    )


def test_values_orjson_cannot_dump_are_still_scanned() -> None:
    assert scan({"n": 2**70, "k": AWS}) == [("k", "aws_access_key_id", "AKIA…LE")]
    assert scan({1: AWS}) == [("1", "aws_access_key_id", "AKIA…LE")]
    assert scan({"s": "\ud800 " + AWS}) == [("s", "aws_access_key_id", "AKIA…LE")]


pieces = st.sampled_from([*KEYS.values(), "x", " ", "\n", "sk-", "AKIA", "_", "-----BEGIN "])
texts = st.lists(pieces, max_size=6).map("".join)
arg_values = st.recursive(
    texts | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=3), arg_values, max_size=3), max_size=5))
def test_batching_and_the_prefilter_change_nothing(all_args: list[dict[str, Any]]) -> None:
    items = [call("t", a, i) for i, a in enumerate(all_args)]
    whole = secrets_check()
    f1 = whole.feed(Batch(calls=items))
    single = secrets_check()
    f2 = [f for c in items for f in single.feed(Batch(calls=[c]))]
    assert f1 == f2
    assert whole.metrics() == single.metrics() == {"security_metrics": find_secrets(items)}
    # the prefilter never hides a finding: compare with a scan of every string
    from toolscore.redact import iter_strings, scan_text

    direct = [
        (i, path, kind)
        for i, a in enumerate(all_args)
        for path, text in iter_strings(a)
        for _s, _e, kind, _m in scan_text(text)
    ]
    assert [(r["index"], r["path"], r["kind"]) for r in whole.secrets] == direct


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=3), arg_values, max_size=3), max_size=5))
def test_a_decoded_block_finds_what_calls_find(all_args: list[dict[str, Any]]) -> None:
    # a block of a strict decoder is prefiltered as one JSON text of all its arguments
    from hypothesis import assume

    from toolscore.sources.custom import CustomDialect
    from toolscore.sources.jsonl import JsonlDecoder

    try:
        data = b"".join(orjson.dumps({"tool": "t", "args": a}) + b"\n" for a in all_args)
    except TypeError:  # a lone surrogate: no JSON text holds one
        assume(False)
    batch = JsonlDecoder(CustomDialect("t.jsonl"), "t.jsonl").feed(data)
    assume(batch.block is not None)
    from_block = secrets_check()
    found = from_block.feed(batch)
    items = [call("t", a, i) for i, a in enumerate(all_args)]
    from_calls = secrets_check()
    assert [(f.kind, f.call_index, f.path) for f in found] == [
        (f.kind, f.call_index, f.path) for f in from_calls.feed(Batch(calls=items))
    ]
    assert from_block.metrics() == from_calls.metrics()


@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_planted_keys_in_a_trace_file_are_all_found_by_the_batch_path(
    tmp_path: Path, layout: str
) -> None:
    # a file read in blocks (msgspec, the batch prefilter): every kind, nested, in lists, on
    # a second line of a string, among calls that hold none
    from _secrets import PLANTED
    from toolscore import evaluate_trace
    from toolscore.sources import iter_batches

    calls: list[dict[str, Any]] = []
    expected = []
    for kind, keys in PLANTED.items():
        for key in keys:
            calls.append({"tool": "t", "args": {"q": "plain", "n": [1, 2]}, "result": "ok"})
            args = {"headers": {"Authorization": f"Bearer {key}"}, "files": [{"c": f"x\n{key}"}]}
            calls.append({"tool": "t", "args": args, "result": "ok"})
            expected += [(kind, "headers.Authorization"), (kind, "files[0].c")]
    filler = {"tool": "t", "args": {"q": "plain " * 40}, "result": "ok"}
    calls += [filler] * 400  # past the sample read before the format is known: real chunks
    path = tmp_path / f"t.{layout}"
    if layout == "jsonl":
        path.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in calls))
    else:
        path.write_bytes(b"[\n" + b",\n".join(orjson.dumps(c) for c in calls) + b"\n]")
    fmt = "jsonl" if layout == "jsonl" else "custom"
    assert any(b.block is not None for b in iter_batches(path, fmt))
    result = evaluate_trace([], path, fmt)
    found = result.metrics["security_metrics"]["secrets"]
    assert [(r["kind"], r["path"]) for r in found] == expected
    assert {r["index"] for r in found} == set(range(1, len(expected), 2))


def test_evaluate_in_a_loop_finds_tool_names_every_time_per_kinds() -> None:
    """Checks without a given memory share the process's, one per set of kinds: a name found
    by one trace is found by every later one, and kinds asked for once are not found by a
    check that did not ask for them."""
    from toolscore import evaluate

    email = "ops" + "@" + "example.com"
    calls = [
        {"tool": AWS, "args": {}},
        {"tool": f"mail_{email}", "args": {}},
        {"tool": "search", "args": {"q": GITHUB}},
    ]

    def kinds(result: Any) -> list[tuple[str, str]]:
        return [(f.check, f.kind) for f in result.findings]

    plain = [kinds(evaluate([{"tool": "search"}], calls)) for _ in range(3)]
    assert plain[0] == plain[1] == plain[2]
    assert plain[0] == [("secrets", "aws_access_key_id"), ("secrets", "github_token")]
    with_pii = [kinds(evaluate([{"tool": "search"}], calls, pii=True)) for _ in range(2)]
    assert with_pii[0] == with_pii[1]
    assert ("pii", "email") in with_pii[0] and ("secrets", "aws_access_key_id") in with_pii[0]
    assert kinds(evaluate([{"tool": "search"}], calls)) == plain[0]
