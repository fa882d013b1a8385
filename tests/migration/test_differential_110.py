"""Differential test: Toolscore 1.10 and this package on the same seeded cases.

200 seeded cases per public function (the adapters of each format, the metric functions, the
JSON and CSV reports' content, the fix list) go to Toolscore 1.10 in one subprocess (its own
virtual environment: ``TOOLSCORE_110_PYTHON``, default ``.venv110/bin/python`` in the
repository; skipped when absent) and through this package's 1.10 module paths here. The answers
must be equal (floats to 1e-9), except the documented differences, each checked for what it is:

- exact pairing where 1.10 is greedy (more than 12 trace calls of a tool): our argument
  recall is at least 1.10's;
- redaction where 1.10 leaks (CSV cells, fix-list values): 1.10's text, redacted, is ours;
- the fix list compares arguments as the score does (whitespace-padded strings are one case,
  checked apart below).
"""

from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _driver110 import answer

from toolscore import metrics as M
from toolscore.adapters.base import ToolCall
from toolscore.diff import build_eval_fix_list
from toolscore.metrics.security import redact_secrets
from toolscore.validators import default_validators

REPO = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("TOOLSCORE_110_PYTHON", REPO / ".venv110" / "bin" / "python"))
DRIVER = Path(__file__).with_name("_driver110.py")
"""The cases' runner: imported here (this package), run by 1.10's python there."""
N = 200
SEED = 110

pytestmark = pytest.mark.skipif(
    not PYTHON.is_file(), reason="no Toolscore 1.10 environment (set TOOLSCORE_110_PYTHON)"
)

TOOLS = ["search", "fetch", "send", "a"]
KEYS = ["q", "x", "url"]
VALUES: list[Any] = [1, 1.0, 2, True, "NYC", "nyc", None, [1, 2], {"k": 1}, "x y"]
SECRETS = [
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
    "AKIAABCDEFGHIJKLMNOP",
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
]
METRICS = [
    ("calculate_invocation_accuracy", {}),
    ("calculate_selection_accuracy", {}),
    ("calculate_argument_f1", {}),
    ("calculate_argument_f1", {"strict": True}),
    ("calculate_edit_distance", {}),
    ("calculate_redundant_call_rate", {}),
    ("calculate_required_call_recall", {}),
    ("calculate_tool_correctness", {}),
    ("calculate_tool_correctness", {"strict_order": True}),
    ("calculate_trajectory_accuracy", {}),
    ("calculate_partial_trajectory_accuracy", {}),
    ("calculate_partial_trajectory_accuracy", {"allow_tool_name_variations": True}),
]


# -- case generators ------------------------------------------------------------------------


def _args(rng: random.Random, secret: bool = False, padded: bool = True) -> dict[str, Any]:
    args = {k: rng.choice(VALUES) for k in rng.sample(KEYS, rng.randint(0, 3))}
    if padded and args and rng.random() < 0.2:
        args[rng.choice(list(args))] = " NYC"
    if secret and rng.random() < 0.4:
        args[rng.choice(KEYS)] = f"Bearer {rng.choice(SECRETS)}"
    return args


def _gold(rng: random.Random, n: int, padded: bool = True) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        r = rng.random()
        args = None if r < 0.2 else {} if r < 0.3 else _args(rng, padded=padded)
        out.append({"tool": rng.choice(TOOLS), "args": args})
    return out


def _trace(
    rng: random.Random, n: int, padded: bool = True, secret: bool = True
) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        call: dict[str, Any] = {"tool": rng.choice(TOOLS), "args": _args(rng, secret, padded)}
        r = rng.random()
        call["metadata"] = {"error": "boom"} if r < 0.15 else {"is_error": True} if r < 0.2 else {}
        if rng.random() < 0.5:
            call["duration"] = rng.choice([0.1, 0.5, 2])
        if rng.random() < 0.4:
            call["cost"] = rng.choice([0.001, 0.02])
        if rng.random() < 0.3 and out:  # a retry of the previous call
            call = dict(out[-1])
        out.append(call)
    return out


def _metric_cases(rng: random.Random) -> list[dict[str, Any]]:
    cases = []
    for fn, kwargs in METRICS:
        for _ in range(N):
            cases.append(
                {
                    "fn": fn,
                    "kwargs": kwargs,
                    "gold": _gold(rng, rng.randint(0, 6)),
                    "trace": _trace(rng, rng.randint(0, 30 if rng.random() < 0.1 else 8)),
                }
            )
    for fn in ("calculate_latency", "calculate_cost_attribution", "find_secrets"):
        cases += [{"fn": fn, "trace": _trace(rng, rng.randint(0, 8))} for _ in range(N)]
    cases += [
        {
            "fn": "calculate_tool_correctness_with_args",
            "gold": _gold(rng, rng.randint(0, 5)),
            "trace": _trace(rng, rng.randint(0, 8)),
        }
        for _ in range(N)
    ]
    for _ in range(N):
        rules = [
            {
                "tool": rng.choice(TOOLS),
                "args": rng.choice(
                    [
                        None,
                        {},
                        {"q": {"$regex": "NY"}},
                        {"x": {"$one_of": [1, 2]}},
                        {"url": {"$contains": "y"}},
                        {"x": 1},
                    ]
                ),
                "reason": rng.choice([None, "no"]),
            }
            for _ in range(rng.randint(0, 3))
        ]
        cases.append(
            {"fn": "check_forbidden_calls", "trace": _trace(rng, rng.randint(0, 8)), "rules": rules}
        )
    return cases


def _side_effect_cases(rng: random.Random, tmp: Path) -> list[dict[str, Any]]:
    (tmp / "here.txt").write_text("hello", encoding="utf-8")
    files = [str(tmp / "here.txt"), str(tmp / "nope.txt"), 5]
    results: list[Any] = [
        None,
        200,
        {"status": 404},
        {"status_code": 201},
        "ok",
        3,
        [1, 2],
        {"rowcount": 2},
        {"rows": [1]},
        {"count": 0},
        True,
    ]
    expectations: dict[str, list[Any]] = {
        "http_ok": [True, 404, 201, "200"],
        "sql_rows": [True, 2, 0, {"min": 1, "max": 2}, {}],
        "file_exists": [True, str(tmp / "here.txt")],
        "unknown": [True],
    }
    cases = []
    for _ in range(N):
        gold = []
        for g in _gold(rng, rng.randint(0, 4)):
            checks = rng.sample(list(expectations), rng.randint(0, 2))
            g["metadata"] = {"side_effects": {c: rng.choice(expectations[c]) for c in checks}}
            gold.append(g)
        trace = []
        for t in _trace(rng, rng.randint(0, 6)):
            t = dict(t, args=dict(t["args"]), result=rng.choice(results))
            if rng.random() < 0.5:
                t["args"]["path"] = rng.choice(files)
            if rng.random() < 0.3:
                t["args"]["url"] = "https://x"
            trace.append(t)
        cases.append({"fn": "side_effects", "gold": gold, "trace": trace})
    return cases


def _openai(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    for i, c in enumerate(calls):
        fn = {"name": c["tool"], "arguments": json.dumps(c["args"])}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{i}", "type": "function", "function": fn}],
            }
        )
    return {"messages": messages} if rng.random() < 0.5 else messages[1:] or [{"role": "user"}]


def _anthropic(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    blocks = [
        {"type": "tool_use", "id": f"t{i}", "name": c["tool"], "input": c["args"]}
        for i, c in enumerate(calls)
    ]
    return [{"role": "assistant", "content": [{"type": "text", "text": "ok"}, *blocks]}]


def _gemini(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    parts = [{"functionCall": {"name": c["tool"], "args": c["args"]}} for c in calls]
    return {"candidates": [{"content": {"role": "model", "parts": parts or [{"text": "x"}]}}]}


def _langchain(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    out = []
    for i, c in enumerate(calls):
        if rng.random() < 0.5:
            out.append({"tool": c["tool"], "tool_input": c["args"], "log": "..."})
        else:
            out.append({"name": c["tool"], "args": c["args"], "id": f"l{i}", "type": "tool_call"})
    return out


def _custom(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    out = []
    for c in calls:
        item: dict[str, Any] = {
            rng.choice(["tool", "name"]): c["tool"],
            "args": c["args"] or {"z": 0},
        }
        if rng.random() < 0.3:
            item["error"] = "timeout"
        if rng.random() < 0.3:
            item["result"] = {"n": 1}
        if rng.random() < 0.3:
            item["duration"] = 0.25
        out.append(item)
    return {"calls": out}


def _mcp(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    messages: list[Any] = []
    for i, c in enumerate(calls, 1):
        messages.append(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": c["tool"], "arguments": c["args"]},
            }
        )
        r = rng.random()
        if r < 0.5:
            messages.append(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "duration": 0.5,
                    "result": {"content": [{"type": "text", "text": f"r{i}"}]},
                }
            )
        elif r < 0.7:
            messages.append(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "result": {"isError": True, "content": [{"type": "text", "text": "404"}]},
                }
            )
        elif r < 0.85:
            messages.append({"jsonrpc": "2.0", "id": i, "error": {"code": -1, "message": "bad"}})
    return {"format": "mcp", "messages": messages}


def _otel(rng: random.Random, calls: list[dict[str, Any]]) -> Any:
    spans = []
    for i, c in enumerate(calls):
        attrs = [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": c["tool"]}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": json.dumps(c["args"])}},
        ]
        span: dict[str, Any] = {
            "name": f"execute_tool {c['tool']}",
            "attributes": attrs,
            "startTimeUnixNano": str(1000 + i),
            "endTimeUnixNano": str(2000 + i),
        }
        if rng.random() < 0.3:
            span["status"] = {"code": 2, "message": "failed"}
        spans.append(span)
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


SHAPES = {
    "openai": _openai,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "langchain": _langchain,
    "custom": _custom,
    "mcp": _mcp,
    "otel": _otel,
}
# what 1.10 records correctly for each format (it reads no results or failures for the first four)
FIELDS = {
    "openai": ("tool", "args"),
    "anthropic": ("tool", "args"),
    "gemini": ("tool", "args"),
    "langchain": ("tool", "args"),
    "custom": ("tool", "args", "result", "duration", "is_error"),
    "mcp": ("tool", "args", "result", "duration", "is_error"),
    "otel": ("tool", "args", "duration", "is_error"),
}


def _adapter_cases(rng: random.Random) -> list[dict[str, Any]]:
    cases = []
    for fmt, shape in SHAPES.items():
        for _ in range(N):
            calls = [
                {"tool": rng.choice(TOOLS), "args": _args(rng)} for _ in range(rng.randint(1, 5))
            ]
            cases.append({"fn": "adapter", "format": fmt, "data": shape(rng, calls)})
    return cases


def _report_cases(rng: random.Random) -> list[dict[str, Any]]:
    cases = []
    for _ in range(N):
        actual = []
        for t in _trace(rng, rng.randint(0, 6)):
            item = {"tool": t["tool"], "args": t["args"]}
            if t["metadata"]:
                item["error"] = "boom"
            actual.append(item)
        rules = [{"tool": rng.choice(TOOLS)}] if rng.random() < 0.5 else []
        cases.append(
            {
                "fn": "reports",
                "expected": _gold(rng, rng.randint(0, 5)),
                "actual": actual,
                "rules": rules,
            }
        )
    return cases


def _fix_cases(rng: random.Random) -> list[dict[str, Any]]:
    """Without credentials for the exact comparison; with them (1.10 leaks) apart."""
    return [
        {
            "fn": "fix_list",
            "gold": _gold(rng, rng.randint(0, 6), padded=False),
            "trace": _trace(rng, rng.randint(0, 8), padded=False, secret=i >= N),
        }
        for i in range(2 * N)
    ]


# -- running and comparing --------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b and type(a) is type(b))


def _greedy(case: dict[str, Any]) -> bool:
    """1.10 pairs greedily: more than 12 trace calls of a tool the gold expects."""
    counts = Counter(c["tool"] for c in case.get("trace", []))
    return any(counts[g["tool"]] > 12 for g in case.get("gold", []))


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, Any], Any, Any]]:
    tmp = tmp_path_factory.mktemp("differential")
    rng = random.Random(SEED)
    cases = (
        _metric_cases(rng)
        + _side_effect_cases(rng, tmp)
        + _adapter_cases(rng)
        + _report_cases(rng)
        + _fix_cases(rng)
    )
    # 1.10 answers in its own process while this one computes its answers (files, not pipes,
    # so that neither side waits for the other to read)
    (tmp / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    with (tmp / "cases.json").open("rb") as given, (tmp / "answers.json").open("wb") as got:
        proc = subprocess.Popen(
            [str(PYTHON), "-I", str(DRIVER)],
            stdin=given,
            stdout=got,
            stderr=subprocess.PIPE,
            cwd=tmp,
        )
        ours = [answer(case, str(tmp)) for case in cases]
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    theirs = json.loads((tmp / "answers.json").read_text(encoding="utf-8"))
    assert len(theirs) == len(cases)
    return list(zip(cases, ours, theirs, strict=True))


def _kinds(
    answers: list[tuple[dict[str, Any], Any, Any]], fn: str
) -> list[tuple[dict[str, Any], Any, Any]]:
    found = [a for a in answers if a[0]["fn"] == fn]
    assert found
    return found


@pytest.mark.parametrize(
    "fn,kwargs", METRICS, ids=[f"{f}{'-' + ','.join(k) if k else ''}" for f, k in METRICS]
)
def test_metrics_equal(answers: list[Any], fn: str, kwargs: dict[str, Any]) -> None:
    checked = 0
    for case, ours, theirs in _kinds(answers, fn):
        if case["kwargs"] != kwargs:
            continue
        checked += 1
        if fn == "calculate_argument_f1" and _greedy(case) and not _same(ours, theirs):
            assert ours["recall"] >= theirs["recall"] - 1e-12, case  # exact beats greedy
            continue
        assert _same(ours, theirs), (case, ours, theirs)
    assert checked == N


@pytest.mark.parametrize(
    "fn",
    [
        "calculate_latency",
        "calculate_cost_attribution",
        "find_secrets",
        "check_forbidden_calls",
        "calculate_tool_correctness_with_args",
        "side_effects",
    ],
)
def test_other_functions_equal(answers: list[Any], fn: str) -> None:
    found = _kinds(answers, fn)
    assert len(found) == N
    for case, ours, theirs in found:
        assert _same(ours, theirs), (case, ours, theirs)


@pytest.mark.parametrize("fmt", list(SHAPES))
def test_adapters_equal(answers: list[Any], fmt: str) -> None:
    found = [a for a in _kinds(answers, "adapter") if a[0]["format"] == fmt]
    assert len(found) == N
    for case, ours, theirs in found:
        keep = FIELDS[fmt]
        mine = [{k: c[k] for k in keep} for c in ours]
        assert _same(mine, [{k: c[k] for k in keep} for c in theirs]), (case, ours, theirs)


def test_reports_json_and_csv_content(answers: list[Any]) -> None:
    found = _kinds(answers, "reports")
    assert len(found) == N
    leaked = 0
    for case, ours, theirs in found:
        summary = {k: ours["summary"][k] for k in theirs["summary"]}
        assert _same(summary, theirs["summary"]), case
        assert _same(ours["metrics"], theirs["metrics"]), case
        # the CSV: 1.10's rows, redacted where 1.10 leaks credentials
        their_csv = "\r\n".join(redact_secrets(line) for line in theirs["csv"].split("\r\n"))
        assert ours["csv"] == their_csv, case
        leaked += any(s in theirs["csv"] for s in SECRETS)
        assert not any(s in ours["csv"] for s in SECRETS)
    assert leaked > 20  # the redaction was exercised


def test_fix_list_equal(answers: list[Any]) -> None:
    found = _kinds(answers, "fix_list")
    assert len(found) == 2 * N
    leaked = 0
    for case, ours, theirs in found[:N]:
        assert ours == theirs, (case, ours, theirs)
    for case, ours, theirs in found[N:]:  # with credentials: the same items, redacted
        assert [(t, f, n) for t, _, f, n in ours] == [(t, f, n) for t, _, f, n in theirs], case
        assert not any(s in json.dumps(ours) for s in SECRETS), case
        leaked += any(s in json.dumps(theirs) for s in SECRETS)
    assert leaked > 5


def test_fix_list_compares_arguments_as_the_score_does() -> None:
    """The documented difference: 1.10 flags ``' NYC'`` against ``'NYC'`` (plain ``!=``),
    though argument F1 counts the two as equal; the fix list here agrees with the score."""
    gold = [ToolCall("search", {"q": " NYC", "x": 1})]
    trace = [ToolCall("search", {"q": "NYC", "x": 2})]
    assert [f.problem for f in build_eval_fix_list(gold, trace)] == [
        "`search` called with unexpected arguments (x: 1 != 2)"
    ]
    assert M.calculate_argument_f1(gold, trace)["f1"] == 0.5


def test_sql_rows_reads_sqlite(tmp_path: Path) -> None:
    """New in this package: ``sql_rows`` with a database and a query counts the query's rows."""
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table users (name text)")
        conn.execute("insert into users values ('ada')")
    validate = default_validators()["sql_rows"]
    call = ToolCall("insert_user", {"name": "ada"})
    query = {"database": str(db), "query": "select * from users where name = 'ada'"}
    assert validate(call, query) is True
    assert validate(call, {**query, "min": 2}) is False
    assert validate(call, {**query, "query": "select * from users where name = 'bob'"}) is False
