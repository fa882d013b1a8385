"""One case of the differential test, run through Toolscore 1.10's public module paths.

The same code answers for both packages: test_differential_110.py imports :func:`answer`
(this package, under 1.10's paths), and runs this file with Toolscore 1.10's python, which
reads ``[{"fn": name, ...}]`` as JSON on stdin and writes one JSON answer per case (the
function's output, or ``{"raised": "ExceptionName"}``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

from toolscore import evaluate
from toolscore import metrics as M
from toolscore.adapters import (
    AnthropicAdapter,
    CustomAdapter,
    GeminiAdapter,
    LangChainAdapter,
    MCPAdapter,
    OpenAIAdapter,
    OTelAdapter,
)
from toolscore.adapters.base import ToolCall
from toolscore.diff import build_eval_fix_list
from toolscore.reports import generate_csv_report, generate_json_report
from toolscore.validators import FileSystemValidator, HTTPValidator, SQLValidator

ADAPTERS = {
    "openai": OpenAIAdapter,
    "anthropic": AnthropicAdapter,
    "gemini": GeminiAdapter,
    "langchain": LangChainAdapter,
    "custom": CustomAdapter,
    "mcp": MCPAdapter,
    "otel": OTelAdapter,
}
VALIDATORS = {
    "http_ok": HTTPValidator().validate,
    "file_exists": FileSystemValidator().validate,
    "sql_rows": SQLValidator().validate,
}


def calls(items: list[dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall(**item) for item in items]


def call_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "tool": call.tool,
        "args": call.args,
        "result": call.result,
        "duration": call.duration,
        "is_error": call.is_error,
    }


def run(case: dict[str, Any], tmp: str) -> Any:
    fn = case["fn"]
    if fn == "adapter":
        return [call_dict(c) for c in ADAPTERS[case["format"]]().parse(case["data"])]
    gold, trace = calls(case.get("gold", [])), calls(case.get("trace", []))
    if fn == "fix_list":
        return [[f.tool, f.problem, f.fix, f.priority] for f in build_eval_fix_list(gold, trace)]
    if fn == "side_effects":
        return M.calculate_side_effect_success_rate(gold, trace, VALIDATORS)
    if fn == "find_secrets":
        return M.find_secrets(trace)
    if fn == "check_forbidden_calls":
        return M.check_forbidden_calls(trace, M.rules_from_json(case["rules"]))
    if fn in ("calculate_latency", "calculate_cost_attribution"):
        return getattr(M, fn)(trace)
    if fn == "calculate_tool_correctness_with_args":
        out = M.calculate_tool_correctness_with_args(gold, trace)
        return [out["tool_correctness_strict"], len(out["matches"]), len(out["mismatches"])]
    if fn == "reports":
        result = evaluate(case["expected"], case["actual"], forbidden=case["rules"])
        json_path = os.path.join(tmp, "r.json")
        csv_path = os.path.join(tmp, "r.csv")
        generate_json_report(result, json_path)
        generate_csv_report(result, csv_path)
        with open(json_path, encoding="utf-8") as f:
            record = json.load(f)
        with open(csv_path, encoding="utf-8", newline="") as f:
            text = f.read()
        return {"summary": record["summary"], "metrics": record["metrics"], "csv": text}
    return getattr(M, fn)(gold, trace, **case.get("kwargs", {}))


def answer(case: dict[str, Any], tmp: str) -> Any:
    """The case's answer as JSON sees it (tuples become lists, keys strings)."""
    try:
        found = run(case, tmp)
    except Exception as exc:  # the answer is the exception's type
        found = {"raised": type(exc).__name__}
    return json.loads(json.dumps(found, default=repr))


def main() -> None:
    cases = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as tmp:
        json.dump([answer(case, tmp) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
