"""A dataset worker's light scoring (records without CI details, no hard rules: only the
score's metrics, the counts and the findings) gives the records the full reducer gives."""

from __future__ import annotations

import io
import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from _secrets import PLANTED
from toolscore.api import read_rules
from toolscore.dataset.gold import GoldSpec
from toolscore.dataset.worker import Config, FileFormat, Scorer, evaluate_one
from toolscore.gold import gold_from_dicts

TOOLS = ["search", "book", "cancel", "get_user"]
FORBIDDEN = read_rules([{"tool": "cancel", "args": {"reason": "now"}}])

call = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(TOOLS),
        "args": st.fixed_dictionaries(
            {"q": st.sampled_from(["a", "b", PLANTED["aws_access_key_id"][0]])},
            optional={"reason": st.sampled_from(["now", "later"]), "n": st.integers(0, 2)},
        ),
        "is_error": st.booleans(),
    }
)
gold_call = st.fixed_dictionaries(
    {"tool": st.sampled_from(TOOLS)},
    optional={"args": st.fixed_dictionaries({}, optional={"q": st.sampled_from(["a", "b"])})},
)


def _trace(calls: list[dict[str, Any]], broken: bool) -> bytes:
    lines = [
        json.dumps({"trace_id": "t", "index": i, **c, "result": "Error" if c["is_error"] else "ok"})
        for i, c in enumerate(calls)
    ]
    if broken and lines:
        lines.insert(len(lines) // 2, '{"trace_id": "t", "tool": ')
    return ("\n".join(lines) + "\n").encode()


def _records(cfg: Config, gold: list[Any] | None, data: bytes) -> tuple[bytes, bytes]:
    out = []
    for light in (True, False):
        scorer = Scorer(cfg)
        assert scorer.light  # no hard rules, no details: light unless forced off
        scorer.light = light
        fmt = FileFormat(cfg, "t.jsonl")
        record = evaluate_one(
            cfg,
            "t",
            "t",
            io.BytesIO(data),
            gold,
            source="t.jsonl",
            linenos=list(range(1, data.count(b"\n") + 1)),
            line=1,
            decoder=fmt.decoder(data),
            scorer=scorer,
        )
        out.append(msgspec.json.encode(record))
    return out[0], out[1]


@settings(max_examples=150, deadline=None)
@given(
    calls=st.lists(call, min_size=2, max_size=25),
    gold=st.none() | st.lists(gold_call, max_size=6),
    forbidden=st.booleans(),
    broken=st.booleans(),
)
def test_light_records_equal_full_records(
    calls: list[dict[str, Any]],
    gold: list[dict[str, Any]] | None,
    forbidden: bool,
    broken: bool,
) -> None:
    cfg = Config(gold=GoldSpec("one"), forbidden=FORBIDDEN if forbidden else None)
    light, full = _records(
        cfg, None if gold is None else gold_from_dicts(gold), _trace(calls, broken)
    )
    assert light == full


def test_light_records_cover_findings_and_violations() -> None:
    # the case the property test must reach: failures, retries, credentials, forbidden calls
    calls = [
        {"tool": "search", "args": {"q": "a"}, "is_error": True},
        {"tool": "search", "args": {"q": "a"}, "is_error": False},
        {"tool": "cancel", "args": {"q": PLANTED["aws_access_key_id"][0], "reason": "now"},
         "is_error": False},
    ]  # fmt: skip
    cfg = Config(gold=GoldSpec("one"), forbidden=FORBIDDEN)
    gold = gold_from_dicts([{"tool": "search", "args": {"q": "a"}}, {"tool": "book"}])
    light, full = _records(cfg, gold, _trace(calls, False))
    assert light == full
    record = json.loads(light)
    assert record["violations"] == 2  # one forbidden call, one credential
    assert record["retries"] == 1 and record["failed_calls"] == 1
    assert 0 < record["score"] < 1 and record["required_call_recall"] == 0.5


extra_keys = st.dictionaries(
    st.sampled_from(["index", "step", "meta", "span_id", "model"]),
    st.integers(0, 3) | st.sampled_from(["x", None]),
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(
    traces=st.lists(
        st.lists(st.tuples(call, extra_keys), min_size=2, max_size=8), min_size=2, max_size=5
    ),
    details=st.booleans(),
)
def test_traces_of_a_file_decoded_with_the_keys_learned_so_far(
    traces: list[list[tuple[dict[str, Any], dict[str, Any]]]], details: bool
) -> None:
    # the traces of one file share their decoders' learned keys (each trace's calls carry
    # their own extra keys): every record is the one the trace gets when read alone
    cfg = Config(gold=GoldSpec("one"), details=details)
    gold = gold_from_dicts([{"tool": "search", "args": {"q": "a"}}, {"tool": "book"}])
    fmt = FileFormat(cfg, "t.jsonl")
    scorer = Scorer(cfg)
    for calls in traces:
        lines = [
            json.dumps({**extra, **c, "result": "Error" if c["is_error"] else "ok"})
            for c, extra in calls
        ]
        data = ("\n".join(lines) + "\n").encode()
        linenos = list(range(1, len(lines) + 1))
        shared, alone = (
            evaluate_one(
                cfg, "t", "t", io.BytesIO(data), gold, source="t.jsonl", linenos=linenos,
                line=1, decoder=decoder, scorer=scorer,
            )
            for decoder in (fmt.decoder(data), None)
        )  # fmt: skip
        assert msgspec.json.encode(shared) == msgspec.json.encode(alone)
