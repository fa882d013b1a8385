"""What counts as a failed call (toolscore.failed): each default convention from a real shape,
no false failure on the corpus's successful calls, user rules, and the rule in the finding."""

from __future__ import annotations

import ast
import json
import traceback
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolscore
from toolscore.errors import RuleFileError
from toolscore.failed import DEFAULT_FAILURES, UNDECIDED, failure_rules


def _corpus_line(corpus: Path, name: str, test: Any) -> dict[str, Any]:
    with open(corpus / name, encoding="utf-8") as f:
        for line in f:
            obj = json.loads(line)
            if test(obj):
                return dict(obj)
    raise AssertionError(f"no such line in {name}")


def _why(call: dict[str, Any]) -> str | None:
    return DEFAULT_FAILURES.of(call.get("is_error"), call.get("error"), call.get("result"))


def test_tau_bench_error_results_fail_without_their_flag(corpus: Path) -> None:
    call = _corpus_line(
        corpus, "tau-bench-airline.jsonl", lambda o: str(o.get("result")).startswith("Error: ")
    )
    assert _why(call) == "is_error"
    del call["is_error"]  # the environment's own convention says it all the same
    assert _why(call) == "result.prefix"


def test_toolbench_error_objects_held_in_a_string_fail(corpus: Path) -> None:
    call = _corpus_line(
        corpus, "toolbench.jsonl", lambda o: o.get("is_error") and "status_code=500" in o["result"]
    )
    del call["is_error"]
    assert isinstance(call["result"], str) and call["result"].startswith('{"error": "request')
    assert _why(call) == "result.error"


def test_success_false_from_a_real_response(corpus: Path) -> None:
    call = _corpus_line(corpus, "toolbench.jsonl", lambda o: "'success': False" in o["result"])
    # the API's answer, as the toolbench harness printed it (a Python repr inside "response"):
    # toolscore does not read Python reprs, so as recorded the call is not failed
    assert _why(call) is None
    response = ast.literal_eval(json.loads(call["result"])["response"])
    assert _why({"result": response}) == "result.success"
    assert _why({"result": json.dumps(response)}) == "result.success"


def test_http_status_from_an_sdk_error() -> None:
    # the HTTP client the installed OpenAI SDK is built on (httpx, or its fork httpx2)
    try:
        import httpx
    except ImportError:
        import httpx2 as httpx  # type: ignore[no-redef]
    request = httpx.Request("GET", "https://api.example.com/v1/x")
    error = openai.NotFoundError(
        "not found", response=httpx.Response(404, request=request), body=None
    )
    result = {"status_code": error.status_code, "message": error.message}
    assert _why({"result": result}) == "result.status"
    assert _why({"result": {"status": 201, "id": 7}}) is None
    assert _why({"result": {"status": "available"}}) is None  # tau-bench's flight status


def test_a_python_traceback() -> None:
    try:
        {}["missing"]
    except KeyError:
        text = traceback.format_exc()
    assert _why({"result": text}) == "result.traceback"
    assert _why({"result": "all fine"}) is None


def test_flags_and_error_fields_as_toolscore() -> None:
    assert _why({"is_error": True}) == "is_error"
    assert _why({"error": "timeout"}) == "error"
    assert _why({"error": False, "result": "ok"}) is None
    assert _why({"result": {"error": None, "data": 1}}) is None
    assert _why({"result": {"error": "", "response": "[]"}}) is None


def test_no_false_failure_on_the_corpus_successful_calls(corpus: Path) -> None:
    counted = 0
    for name in ("tau-bench-airline.jsonl", "toolbench.jsonl"):
        with open(corpus / name, encoding="utf-8") as f:
            for line in f:
                call = json.loads(line)
                if call.get("is_error") is True or call.get("error"):
                    continue
                counted += 1
                assert _why(call) is None, line[:300]
    assert counted == 1092 + 216


def test_the_readers_and_the_checks_agree(tmp_path: Path) -> None:
    calls = [
        {"tool": "a", "result": "ok"},
        {"tool": "b", "result": "Error: boom"},
        {"tool": "c", "result": {"status": 503}},
        {"tool": "d", "result": '{"error": "quota"}'},
        {"tool": "e", "result": {"success": False}},
        {"tool": "f", "is_error": True},
    ]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls))
    from_file = toolscore.evaluate_trace([], trace)  # the custom reader's decoded block
    in_memory = toolscore.evaluate([], calls)  # calls as dicts
    for result in (from_file, in_memory):
        failed = [f for f in result.findings if f.kind == "failed_call"]
        assert [f.tool for f in failed] == ["b", "c", "d", "e", "f"]
        messages = [f.message for f in failed]
        assert messages[0] == "call 2 b failed (result.prefix)"
        assert messages[1] == "call 3 c failed (result.status)"
        assert messages[-1] == "call 6 f failed"  # Toolscore's own flag: as before


def test_user_rules_remove_and_add(tmp_path: Path) -> None:
    calls = [
        {"tool": "a", "result": "Error: expected, a warning"},
        {"tool": "b", "result": "the request timed out"},
        {"tool": "c", "result": {"code": 502}},
    ]
    section = {
        "remove": ["result.prefix"],
        "add": [
            {"id": "timeout", "match": {"$regex": "timed out"}},
            {"id": "bad gateway", "field": "code", "match": {"$gte": 500}},
        ],
    }
    result = toolscore.evaluate([], calls, rules={"failures": section})
    failed = [(f.tool, f.message) for f in result.findings if f.kind == "failed_call"]
    assert failed == [("b", "call 2 b failed (timeout)"), ("c", "call 3 c failed (bad gateway)")]
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"failures": section}))
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls))
    from_file = toolscore.evaluate_trace([], trace, rules=rules)
    assert [f.message for f in from_file.findings if f.kind == "failed_call"] == [
        m for _, m in failed
    ]
    with pytest.raises(RuleFileError, match=r"unknown rule 'result\.nope'"):
        failure_rules({"remove": ["result.nope"]})
    with pytest.raises(RuleFileError, match=r"unknown operator '\$regx'"):
        failure_rules({"add": [{"id": "x", "match": {"$regx": "a"}}]})


def test_a_calls_record_says_is_error_as_the_runs_rules_judge_it(tmp_path: Path) -> None:
    # the JSON record of each call (to_dict, the JSON report) follows the run's failure
    # rules, as the metrics do: a call freed by a removed rule, or failed by an added one,
    # says so in its record too (it said what the default rules say)
    from _cli import run_cli
    from toolscore.reports.json import CallSpool, write_json_report

    calls = [
        {"tool": "a", "result": {"error": "expected"}},  # result.error, removed
        {"tool": "b", "result": "the request timed out"},  # an added rule
        {"tool": "c", "is_error": True},
    ]
    section = {"remove": ["result.error"], "add": [{"id": "timeout", "match": {"$regex": "out"}}]}
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"failures": section}))
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls))
    judged = [False, True, True]

    def said(record: dict[str, Any]) -> list[bool]:
        assert record["metrics"]["efficiency_metrics"]["error_count"] == sum(judged)
        return [c["is_error"] for c in record["calls"]["actual"]]

    assert said(toolscore.evaluate([], calls, rules=rules).to_dict()) == judged  # dicts
    kept = toolscore.evaluate_trace([], trace, rules=rules, keep_calls=True)  # a block
    assert said(kept.to_dict()) == judged
    with CallSpool(str(tmp_path)) as spool:
        spooled = toolscore.evaluate_trace([], trace, rules=rules, on_calls=spool)
        write_json_report(spooled, str(tmp_path / "spooled.json"), spool)
    assert said(json.loads((tmp_path / "spooled.json").read_text())) == judged
    report = tmp_path / "report.json"
    done = run_cli("eval", str(trace), "--forbidden", str(rules), "-o", str(report))
    assert done.returncode == 0, done.stderr
    assert said(json.loads(report.read_text())) == judged
    # without a rule file, the default rules: the first call fails, the second does not
    judged = [True, False, True]
    assert said(toolscore.evaluate([], calls).to_dict()) == judged


def test_an_undecided_failure_rule_counts_the_call_as_failed_and_says_so() -> None:
    hostile = "a" * 99 + "!\n"  # $ before a final newline: Python's re, past its time bound
    calls = [{"tool": "fetch", "result": hostile}] * 3
    section = {"add": [{"id": "timeout", "match": {"$regex": "(a+)+$"}}]}
    result = toolscore.evaluate([], calls, rules={"failures": section})
    messages = [f.message for f in result.findings if f.kind == "failed_call"]
    assert len(messages) == 3
    assert messages[0] == f"call 1 fetch failed (timeout; {UNDECIDED})"
    # decided matches keep their plain rule id
    decided = toolscore.evaluate(
        [], [{"tool": "fetch", "result": "aaa"}], rules={"failures": section}
    )
    assert [f.message for f in decided.findings if f.kind == "failed_call"] == [
        "call 1 fetch failed (timeout)"
    ]


_field_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1, 600),
    st.floats(-1, 1, allow_nan=False),
    st.sampled_from(["", "x", "Error: y", "{}", []]),
    st.dictionaries(st.sampled_from(["a"]), st.integers(), max_size=1),
    st.lists(st.integers(), max_size=1),
)
_results = st.one_of(
    st.dictionaries(
        st.sampled_from(["error", "success", "status", "status_code", "statusCode", "data"]),
        _field_values,
        max_size=3,
    ),
    st.sampled_from(["ok", "Error: no", "x Error: y", "Traceback (most recent call last):\n"]),
)


_flags = st.fixed_dictionaries(
    {},
    optional={
        "is_error": st.sampled_from([True, False, None, "yes"]),
        "error": st.sampled_from([None, "", "boom", False, 0, {"code": 1}]),
    },
)


@settings(max_examples=80, deadline=None)
@given(
    results=st.lists(
        st.tuples(st.one_of(_results, _results.map(json.dumps)), _flags), min_size=1, max_size=6
    ),
    removed=st.sets(st.sampled_from(["is_error", "error", "result.prefix", "result.error"])),
)
def test_the_raw_prefilter_misses_no_failure(
    tmp_path_factory: Any, results: list[Any], removed: set[str]
) -> None:
    """A trace file's decoded block (raw results, prefiltered in RE2, the flagged calls
    decided first) and the same calls given as dicts (each result checked) fail the calls that
    the rules fail with every field read as given, whichever default rules are removed."""
    calls = [{"tool": f"t{i}", "result": r, **flags} for i, (r, flags) in enumerate(results)]
    trace = tmp_path_factory.mktemp("trace") / "trace.jsonl"
    trace.write_text("".join(json.dumps(c) + "\n" for c in calls))
    rules = failure_rules({"remove": sorted(removed)})
    expected = [rules.of(c.get("is_error"), c.get("error"), c.get("result")) for c in calls]
    section = {"failures": {"remove": sorted(removed)}}
    for result in (
        toolscore.evaluate_trace([], trace, rules=section),
        toolscore.evaluate([], calls, rules=section),
    ):
        failed = {f.call_index: f.message for f in result.findings if f.kind == "failed_call"}
        assert sorted(failed) == [i for i, why in enumerate(expected) if why is not None]
        for i, message in failed.items():
            assert f"({expected[i]})" in message or expected[i] in ("is_error", "error")
