"""The hard-rules check against the public conformance helper: a trace fed whole and in
random consecutive parts (each part's state pickled, as another process sends it) gives the
same state and the same findings."""

from __future__ import annotations

from typing import Any

import pytest

from toolscore.calls import ToolCall
from toolscore.checks.hardrules import HardRulesCheck
from toolscore.hardrules import ruleset
from toolscore.testing import check_conformance

KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
TOOLS = ["search", "fetch", "deploy", "http_post", "get_env", "read_file", "curl"]


def _trace(n: int) -> list[ToolCall]:
    calls = []
    for i in range(n):
        tool = TOOLS[(i * 5 + i // 3) % len(TOOLS)]
        args: dict[str, Any] = {"q": "x" if i % 4 else 3, "i": i}
        if tool == "read_file":
            args = {"path": "/home/u/.ssh/id_rsa" if i % 3 == 0 else "README.md"}
        result = {"token": KEY} if tool == "get_env" and i > n // 2 else "ok"
        calls.append(ToolCall(tool, args, result=result, index=i))
    return calls


RULES: dict[str, Any] = {
    "allow": TOOLS[:-1],
    "order": [{"before": "search", "after": "deploy"}, ["fetch", "http_post"]],
    "counts": [{"tool": "deploy", "max": 2}, {"tool": "search", "min": 100}],
    "max_calls": 25,
    "schemas": {"search": {"type": "object", "properties": {"q": {"type": "string"}},
                           "required": ["q"]}},
    "data_flow": [{"sinks": ["http_post", "curl"]},
                  {"id": "ssh", "sinks": ["http_post"], "credentials": False,
                   "sources": [{"tool": "read_file", "args": {"path": "/home/u/.ssh/id_rsa"}}]}],
    "match": ["strict", "unordered", "subset", "superset"],
    "arguments": {"mode": "subset"},
}  # fmt: skip
GOLD = [ToolCall("search", {"q": "x"}, index=0), ToolCall("fetch", None, index=1)]


@pytest.mark.parametrize("n", [0, 1, 7, 40])
def test_the_hard_rules_check_conforms(n: int) -> None:
    rules = ruleset(RULES)
    check_conformance(lambda: HardRulesCheck(rules, GOLD), _trace(n), max_examples=60)


@pytest.mark.parametrize("kind", ["allow", "order", "counts", "max_calls", "schemas",
                                  "data_flow", "match"])  # fmt: skip
def test_each_rule_kind_alone_conforms(kind: str) -> None:
    spec = {kind: RULES[kind]}
    if kind == "match":
        spec["arguments"] = RULES["arguments"]
    rules = ruleset(spec)
    check_conformance(lambda: HardRulesCheck(rules, GOLD), _trace(30), max_examples=30)
