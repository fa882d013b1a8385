"""Pass rules the user composes (``--pass``, ``pass_rule=``), and a verdict that agrees with
the benchmark's own on the shared tau-bench corpus."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from _cli import run_cli
from toolscore import evaluate
from toolscore.dataset import evaluate_dataset
from toolscore.errors import UsageError
from toolscore.verdict import DEFAULT_PASS, PassCriterion, parse_pass

BOOK = [{"tool": "book", "args": {"flight": "HAT001"}}]


def test_the_default_rule_written_out_is_the_default() -> None:
    assert parse_pass(DEFAULT_PASS) == PassCriterion() == parse_pass("default")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("grade>=B", PassCriterion("B", False, False)),
        ("score>=0.75 and required", PassCriterion(0.75, True, False)),
        ("no-violations:forbidden+credentials",
         PassCriterion(None, False, True, ("forbidden", "credentials"))),
        ("match:superset, no-violations",
         PassCriterion(None, False, True, None, ("superset",))),
        ("match:strict+unordered",
         PassCriterion(None, False, False, None, ("strict", "unordered"))),
    ],
)  # fmt: skip
def test_terms(text: str, want: PassCriterion) -> None:
    assert parse_pass(text) == want
    assert parse_pass(text).describe()  # every rule says what it is


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("grade>=Z", "grade"),
        ("score>=2", "between 0 and 1"),
        ("no-violations:secrets", "unknown violation kind 'secrets'"),
        ("match:sideways", "match needs a mode"),
        ("always", "unknown term 'always'"),
    ],
)
def test_bad_rules_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_pass(text)
    with pytest.raises(UsageError):
        evaluate(BOOK, BOOK, pass_rule=text or ",")


def test_match_superset_makes_every_expected_call_with_its_arguments() -> None:
    rule = "match:superset"
    read_then_book = [{"tool": "read", "args": {}}, *BOOK]
    assert evaluate(BOOK, read_then_book, pass_rule=rule).verdict().passed is True  # reads free
    wrong = [{"tool": "book", "args": {"flight": "HAT002"}}]
    verdict = evaluate(BOOK, wrong, pass_rule=rule).verdict()
    assert verdict.passed is False and verdict.matches == {"superset": False}
    assert verdict.criterion.reasons(verdict) == ["match superset failed"]
    # a trial that made no call passes only when its gold expects none
    assert evaluate([], [], pass_rule=rule).verdict().passed is True
    assert evaluate(BOOK, [], pass_rule=rule).verdict().passed is False
    # the default rule fails the same wrong argument on the required call... only by grade
    assert evaluate(BOOK, wrong).verdict().passed is False


def test_named_violation_kinds_leave_the_others_out() -> None:
    key = "gh" + "p_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVb"
    leaky = [{"tool": "book", "args": {"flight": "HAT001", "note": key}}]
    only_forbidden = evaluate(BOOK, leaky, pass_rule="no-violations:forbidden").verdict()
    assert only_forbidden.violations.credentials == 1 and only_forbidden.passed is True
    assert evaluate(BOOK, leaky, pass_rule="no-violations").verdict().passed is False


def test_the_command_line_gates_one_trace_on_its_pass_rule(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(BOOK))
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([{"tool": "book", "args": {"flight": "HAT002"}}]))
    out = tmp_path / "r.json"
    failed = run_cli("eval", str(gold), str(trace), "-o", str(out), "--pass", "match:superset")
    assert failed.returncode == 1, failed.stderr
    assert "does not pass --pass 'match:superset': match superset failed" in failed.stderr
    summary = json.loads(out.read_text())["summary"]
    assert summary["passed"] is False and summary["pass_criterion"] == "match superset"
    lenient = run_cli("eval", str(gold), str(trace), "-o", str(out), "--pass", "grade>=F")
    assert lenient.returncode == 0, lenient.stderr
    bad = run_cli("eval", str(gold), str(trace), "-o", str(out), "--pass", "bogus")
    assert bad.returncode == 2 and "unknown term 'bogus'" in bad.stderr


def _reward_pass_hat(gold_path: Path) -> tuple[dict[str, bool], list[float]]:
    rewarded: dict[str, bool] = {}
    by_task: dict[str, list[bool]] = defaultdict(list)
    for line in gold_path.read_text("utf-8").splitlines():
        row = json.loads(line)
        ok = row["reward"] >= 1.0
        rewarded[row["trace_id"]] = ok
        by_task[row["trace_id"].rsplit("/", 1)[0]].append(ok)
    hats = []
    for k in (1, 2, 3, 4):
        tasks = [v for v in by_task.values() if len(v) >= k]
        hats.append(sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in tasks) / len(tasks))
    return rewarded, hats


def test_tau_bench_verdicts_agree_with_the_benchmark(corpus: Path) -> None:
    """The README's rule: every expected call made with its arguments (reads are free), no
    call made where calls were expected fails. Its pass^1..4 are within 0.05 of the
    benchmark's own (from ``reward``), and it agrees with ``reward`` on 154 of 200 trials."""
    gold = corpus / "tau-bench-airline.gold.jsonl"
    rewarded, hats = _reward_pass_hat(gold)
    result = evaluate_dataset(
        str(gold),
        str(corpus / "tau-bench-airline.jsonl"),
        criterion=parse_pass("match:superset"),
        engine="inline",
    )
    records = {r.trace_id: r for r in result}
    assert len(records) == len(rewarded) == 200
    agree = sum(records[t].passed == ok for t, ok in rewarded.items())
    assert agree >= 154
    ours = {k: hat for k, _, _, hat in result.pass_k}
    for k, theirs in zip((1, 2, 3, 4), hats, strict=True):
        assert abs(ours[k] - theirs) <= 0.05, (k, ours[k], theirs)
    result.close()
