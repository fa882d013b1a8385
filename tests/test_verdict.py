"""The one verdict: violations of every kind, pass criteria, checks only, empty trials, and
gold rules (a gold file's, a keyed gold line's) through every door."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from _secrets import PLANTED
from toolscore import evaluate, evaluate_trace
from toolscore.dataset import evaluate_dataset
from toolscore.reports.console import EvalSummary
from toolscore.verdict import PassCriterion, Verdict, Violations, judge

GOLD = [{"tool": "search", "args": {"q": "x"}}, {"tool": "fetch", "args": {"url": "u"}}]
LEAKY_KEY = PLANTED["github_token"][0]


def _calls(*names: str, **args: object) -> list[dict[str, object]]:
    return [{"tool": name, "args": dict(args)} for name in names]


def test_violations_count_every_kind() -> None:
    trace = [
        {"tool": "search", "args": {"q": "x"}},
        {"tool": "rm", "args": {"path": "/"}},
        {"tool": "fetch", "args": {"url": "u", "token": LEAKY_KEY}},
    ]
    rules = {"forbidden": [{"tool": "rm"}], "max_calls": 2}
    verdict = evaluate(GOLD, trace, forbidden=rules).verdict()
    assert verdict.violations == Violations(forbidden=1, credentials=1, rules=1)
    assert verdict.violations.total == 3
    assert verdict.passed is False
    assert "3 violation(s)" in verdict.criterion.reasons(verdict)
    # without the violations condition, the same trace passes on its score and calls
    lenient = PassCriterion(min_score=0.5, no_violations=False)
    assert judge(evaluate(GOLD, trace, forbidden=rules), lenient).passed is True


def test_pass_criterion_thresholds_and_reasons() -> None:
    perfect = evaluate(GOLD, GOLD).verdict()
    assert perfect.passed is True and perfect.grade == "A"
    assert perfect.score == pytest.approx(1.0)
    # a numeric minimum is reached within 1e-9 (a perfect default score is 0.9999999999999999)
    assert PassCriterion(min_score=1.0).passes(perfect) is True
    half = evaluate(GOLD, GOLD[:1]).verdict()
    assert half.passed is False
    assert half.criterion.reasons(half) == [
        f"grade {half.grade} below A",
        "required calls 50% completed",
    ]
    assert half.grade in "BCD"
    by_grade = PassCriterion(min_score="D", all_calls=False)
    assert by_grade.passes(half) is True
    assert PassCriterion(min_score="D").passes(half) is False
    none = Verdict(None, None, None, Violations(), None, PassCriterion())
    assert PassCriterion().passes(none) is None and not none.has_gold
    assert none.to_json()["score"] is None


def test_checks_only_has_no_score_and_no_advice(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        "\n".join(json.dumps(c) for c in _calls("bash", "bash", command="ls")) + "\n", "utf-8"
    )
    result = evaluate_trace(None, trace, forbidden=[{"tool": "bash"}])
    assert result.has_gold is False
    verdict = result.verdict()
    assert (verdict.score, verdict.grade, verdict.passed) == (None, None, None)
    assert verdict.violations.forbidden == 2
    record = result.to_dict()
    assert record["score"] is None and record["grade"] is None
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(EvalSummary(result))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "No gold: checks only   2 call(s)   violations: 2 forbidden call(s)" in out
    assert "matches forbidden rule 1" in out
    for absent in ("Grade", "Overall Score", "unexpected extra call", "expected spec"):
        assert absent not in out


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        json.dumps({"messages": [{"role": "user", "content": "hi"}]})[:-2]
        + ', {"role": "assistant", "content": "hello"}]}',
    ],
    ids=["empty-array", "chat-without-tool-calls"],
)
def test_an_explicit_empty_trace_is_evaluated(tmp_path: Path, text: str) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(text, "utf-8")
    result = evaluate_trace(GOLD, trace)
    assert result.input_error is None
    assert result.trace_calls_count == 0
    assert result.score == pytest.approx(evaluate(GOLD, []).score)


def test_unrecognised_input_without_calls_is_still_an_error(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}), "utf-8")
    from toolscore.errors import FormatNotDetected

    with pytest.raises(FormatNotDetected):
        evaluate_trace(GOLD, trace)


def test_a_gold_file_object_s_rules_apply_through_evaluate_trace(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"calls": GOLD, "match": ["superset"]}), "utf-8")
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(GOLD[0]) + "\n", "utf-8")
    verdict = evaluate_trace(gold, trace).verdict()
    assert verdict.violations.rules == 1
    assert verdict.passed is False


def test_a_keyed_gold_line_carries_its_own_rules(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    lines = [
        {"trace_id": "t1", "expected": GOLD, "match": ["superset"]},
        {"trace_id": "t2", "expected": GOLD, "rules": {"max_calls": 1}},
        {"trace_id": "t3", "expected": GOLD},
    ]
    gold.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    traces = tmp_path / "traces.jsonl"
    rows = [{"trace_id": t, **c} for t in ("t1", "t2", "t3") for c in GOLD[:1]]
    rows.append({"trace_id": "t2", **GOLD[1]})
    traces.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    result = evaluate_dataset(str(gold), str(traces), engine="inline")
    records = {r.trace_id: r for r in result}
    # t1 misses fetch (superset broken), t2 makes two calls (budget of one), t3 has no rules
    assert (records["t1"].violations, records["t2"].violations, records["t3"].violations) == (
        1,
        1,
        0,
    )
    for trace_id, line in zip(("t1", "t2", "t3"), lines, strict=True):
        alone = evaluate(
            line["expected"],  # type: ignore[arg-type]
            [
                {k: v for k, v in r.items() if k != "trace_id"}
                for r in rows
                if r["trace_id"] == trace_id
            ],
            forbidden={k: v for k, v in line.items() if k in ("match",)} or line.get("rules"),  # type: ignore[arg-type]
        ).verdict()
        assert records[trace_id].violations == alone.violations.total
        assert records[trace_id].passed == alone.passed
        assert records[trace_id].score == pytest.approx(alone.score, abs=1e-9)
    result.close()


def test_a_bad_rule_in_a_keyed_gold_line_names_the_line(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    good = {"trace_id": "t1", "expected": GOLD}
    bad = {"trace_id": "t2", "expected": GOLD, "match": ["sideways"]}
    gold.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", "utf-8")
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"trace_id": "t1", **GOLD[0]}) + "\n", "utf-8")
    result = evaluate_dataset(str(gold), str(traces), engine="inline")
    assert result.gold_problems == 1
    assert any(f"{gold}:2" in p and "sideways" in p for p in result.problems)
    result.close()


def test_a_numeric_minimum_is_one_test_for_every_gate() -> None:
    """A perfect default score (0.9999999999999999) clears 1.0 at every gate: the exit
    status's, the JUnit gate's, the pass rule's and the dataset's mean (all ask passes())."""
    from toolscore.verdict import passes

    perfect = evaluate(GOLD, GOLD).score
    assert perfect < 1.0 and passes(perfect, 1.0)
    assert not passes(perfect - 1e-6, 1.0)
    assert passes(0.9, "A") and not passes(0.89, "A")
    assert PassCriterion(min_score=1.0, all_calls=False).passes(evaluate(GOLD, GOLD).verdict())
