"""Dataset summaries that point at the problem: breakdowns (``--group-by``), ``--k``, failing
traces and tasks first, tools by failed calls, rounded human outputs, full-precision JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run_cli
from _datasets import dataset_in
from toolscore.dataset import TraceRecord, evaluate_dataset, pass_hat_k
from toolscore.dataset.aggregate import Aggregate, overall_pass
from toolscore.dataset.groups import MAX_GROUPS, OTHER_GROUPS, GroupBy, Groups
from toolscore.dataset.reports import render_html
from toolscore.errors import UsageError

TWO_GROUPS = r"^(?P<model>[^/]+)/task\d{5}(?P<digit>\d)/"
"""Two regex groups over the generator's ids (``model-a/task000123/trial2``): the model (one
value) and the task number's last digit (ten values)."""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """6,000 small traces (1,500 tasks of 4 trials, 2-4 calls each)."""
    return dataset_in(tmp_path_factory.mktemp("big"), 6000, seed=5, min_calls=2, max_calls=4)


BigRun = tuple[str, str, dict[str, Any]]


def _big_run(big: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> BigRun:
    """``toolscore eval`` on the 6,000 traces by two regex groups: its console output, its
    Markdown and its JSON report."""
    gold, traces = big
    base = tmp_path_factory.mktemp("run")
    out, md = base / "report.json", base / "report.md"
    got = run_cli(
        "eval", str(gold), str(traces), "--engine", "inline", "--group-by", TWO_GROUPS,
        "--k", "1,2,4", "-o", str(out), "--markdown", str(md),
    )  # fmt: skip
    assert got.returncode in (0, 1), got.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    return got.stdout, md.read_text(encoding="utf-8"), report


def test_two_regex_groups_on_6000_traces_print_one_table_per_group(
    big: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """One run (a few seconds) for two points: the breakdowns, and the Tasks table."""
    big_run = _big_run(big, tmp_path_factory)
    console, text, report = big_run
    _tasks_table_shows_failing_tasks_first(big_run)
    # one table per group, with its groups (not a line per task)
    assert console.count("By model (1 group, failing first)") == 1
    assert console.count("By digit (10 groups, failing first)") == 1
    assert "pass^4" in console
    assert len(console.splitlines()) < 150
    assert "## By model (1 group, failing first)" in text
    assert "## By digit (10 groups, failing first)" in text
    assert "| digit | traces | pass rate | mean score | pass^1 | pass^2 | pass^4 |" in text
    summary = report["summary"]
    groups = summary["groups"]
    assert list(groups) == ["model", "digit"]
    assert [g["traces"] for g in groups["model"]] == [6000]
    assert sorted(g["group"] for g in groups["digit"]) == [str(d) for d in range(10)]
    assert sum(g["traces"] for g in groups["digit"]) == 6000
    assert sum(g["passed"] for g in groups["digit"]) == summary["passed"]
    # one model: its figures are the run's
    (model,) = groups["model"]
    assert model["pass_rate"] == summary["pass_rate"]
    assert model["pass_hat_k"] == summary["pass_hat_k"]
    assert list(summary["pass_hat_k"]) == ["1", "2", "4"]
    # failing first: the groups' pass rates rise
    rates = [g["pass_rate"] for g in groups["digit"]]
    assert rates == sorted(rates)


def test_group_pass_hat_k_counts_each_groups_trials(tmp_path: Path) -> None:
    """pass^k of a group is the mean over its tasks of C(c,k)/C(n,k), with a task's trials
    counted within the group; the mean score is the group's own."""
    gold, traces = tmp_path / "gold.jsonl", tmp_path / "traces.jsonl"
    expected = [{"tool": "search", "args": {"q": "x"}}]
    # model a: task t1 passes 2 of 2, t2 passes 1 of 2; model b: t1 passes 0 of 2
    plan = {
        "a/t1/trial0": True, "a/t1/trial1": True, "a/t2/trial0": True, "a/t2/trial1": False,
        "b/t1/trial0": False, "b/t1/trial1": False,
    }  # fmt: skip
    with gold.open("w") as g, traces.open("w") as t:
        for trace_id, ok in plan.items():
            g.write(json.dumps({"trace_id": trace_id, "expected": expected}) + "\n")
            call = expected[0] if ok else {"tool": "delete", "args": {}}
            t.write(json.dumps({"trace_id": trace_id, "index": 0, **call}) + "\n")
    result = evaluate_dataset(
        str(gold), str(traces), engine="inline", group_by=r"^(?P<model>[^/]+)/", k=[1, 2]
    )
    try:
        rows = {row.value: row for row in result.groups["model"]}
        assert [row.value for row in result.groups["model"]] == ["b", "a"]  # failing first
        assert rows["a"].traces == 4 and rows["a"].passed == 3
        assert rows["b"].pass_rate == 0.0
        hat = {k: h for k, _, _, h in rows["a"].pass_k}
        assert hat[1] == pytest.approx((1.0 + 0.5) / 2)
        assert hat[2] == pytest.approx((1.0 + pass_hat_k(2, 1, 2)) / 2)
        scores = [r.score for r in result if r.trace_id.startswith("a/") and r.score is not None]
        assert rows["a"].mean == pytest.approx(sum(scores) / len(scores))
    finally:
        result.close()


def _field_dataset(tmp_path: Path) -> tuple[Path, Path]:
    gold, traces = tmp_path / "gold.jsonl", tmp_path / "traces.jsonl"
    expected = [{"tool": "search", "args": {"q": "x"}}]
    with gold.open("w") as g, traces.open("w") as t:
        for i in range(6):
            trace_id = f"t{i}"
            model = "gpt" if i % 2 else "claude"
            g.write(json.dumps({"trace_id": trace_id, "expected": expected}) + "\n")
            call = expected[0] if model == "claude" else {"tool": "other", "args": {}}
            t.write(json.dumps({"trace_id": trace_id, "model": model, "index": 0, **call}) + "\n")
            t.write(json.dumps({"trace_id": trace_id, "index": 1, "tool": "noop"}) + "\n")
    return gold, traces


@pytest.mark.parametrize("engine", ["inline", "local"])
def test_group_by_a_field_of_the_traces_lines(tmp_path: Path, engine: str) -> None:
    gold, traces = _field_dataset(tmp_path)
    result = evaluate_dataset(
        str(gold), str(traces), engine=engine, workers=2, group_by=["model", "status"]
    )
    try:
        by_model = {row.value: row for row in result.groups["model"]}
        assert set(by_model) == {"gpt", "claude"}
        assert by_model["gpt"].traces == by_model["claude"].traces == 3
        assert by_model["gpt"].pass_rate == 0.0
        assert [row.value for row in result.groups["status"]] == ["ok"]
        assert all(r.fields["model"] in ("gpt", "claude") for r in result)
    finally:
        result.close()


def test_a_regex_that_matches_no_id_is_a_usage_error(tmp_path: Path) -> None:
    gold, traces = _field_dataset(tmp_path)
    for option in ("--group-by", "--task-regex"):
        got = run_cli(
            "eval", str(gold), str(traces), "--engine", "inline",
            option, r"^(?P<model>nomatch)/",
        )  # fmt: skip
        assert got.returncode == 2, (option, got.stdout, got.stderr)
        assert f"{option} '^(?P<model>nomatch)/' matches no trace id" in got.stderr
        assert "(the first id: 't0')" in got.stderr


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["^(oops"], "--group-by '^(oops'"),
        (["^[a-z]+/"], "named groups"),
        (["model", "(?P<model>.+)"], "asked for twice"),
    ],
)
def test_bad_group_by_is_a_usage_error(specs: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        GroupBy.parse(specs)


def test_bad_k_is_a_usage_error(tmp_path: Path) -> None:
    gold, traces = _field_dataset(tmp_path)
    got = run_cli("eval", str(gold), str(traces), "--engine", "inline", "--k", "0,2")
    assert got.returncode == 2
    assert "--k" in got.stderr


def _record(i: int, **fields: Any) -> TraceRecord:
    values: dict[str, Any] = {"trace_id": f"m{i % 3}/t{i}", "task": f"t{i}", "order": (0, i)}
    values.update(fields)
    return TraceRecord(**values)


def test_worst_traces_are_the_lowest_scored_failing_ones() -> None:
    agg = Aggregate()
    agg.add(_record(1, score=0.2, passed=True))  # passed: never among the worst
    agg.add(_record(2, score=1.0, passed=False))  # failed at 100% (a violation)
    agg.add(_record(3, score=0.6, passed=False))
    agg.add(_record(4, score=0.9, passed=None))
    assert [trace_id for _, _, trace_id in agg.worst] == ["m0/t3", "m2/t2"]


def test_tools_are_sorted_by_failed_calls() -> None:
    agg = Aggregate()
    agg.add(_record(1, tools={"rare": [5, 5, 0], "busy": [1000, 407, 3]}))
    assert [row[0] for row in agg.tool_rates()] == ["busy", "rare"]


def _tasks_table_shows_failing_tasks_first(big_run: BigRun) -> None:
    _, md, report = big_run
    section = md.split("Tasks (failing first, 10 of 1,500; pass@k / pass^k for k = 1,2,4)")[1]
    rows = section.split("\n\n")[1].splitlines()[2:]
    assert len(rows) == 10
    passed = [row.split(" | ")[1] for row in rows]
    assert all(p != "4/4" for p in passed)
    fractions = [int(p.split("/")[0]) / int(p.split("/")[1]) for p in passed]
    assert fractions == sorted(fractions)
    assert all(len(row.split(" | ")[2].split()) == 3 for row in rows)  # k = 1, 2 and 4 only
    assert fractions[0] == min(t["passed"] / t["trials"] for t in report["tasks"])


def test_human_outputs_round_and_the_json_keeps_full_precision(
    tmp_path: Path,
) -> None:
    gold, traces = tmp_path / "gold.jsonl", tmp_path / "traces.jsonl"
    # three traces scored 1/3 of the way: a mean with a long tail of digits
    expected = [{"tool": "a", "args": {}}, {"tool": "b", "args": {}}, {"tool": "c", "args": {}}]
    with gold.open("w") as g, traces.open("w") as t:
        for i in range(3):
            g.write(json.dumps({"trace_id": f"x{i}", "expected": expected}) + "\n")
            t.write(json.dumps({"trace_id": f"x{i}", "index": 0, "tool": "a"}) + "\n")
    out, junit, md = tmp_path / "r.json", tmp_path / "j.xml", tmp_path / "r.md"
    got = run_cli(
        "eval", str(gold), str(traces), "--engine", "inline", "-o", str(out),
        "--junit", str(junit), "--markdown", str(md), "--group-by", "task",
    )  # fmt: skip
    assert got.returncode in (0, 1), got.stderr
    summary = json.loads(out.read_text(encoding="utf-8"))["summary"]
    mean = summary["mean_score"]
    assert len(repr(mean)) > 8  # full precision kept
    assert summary["groups"]["task"][0]["mean_score"] == summary["worst"][0]["score"]
    long_number = re.compile(r"\d\.\d{5,}")
    for text in (got.stdout, md.read_text(encoding="utf-8"), junit.read_text(encoding="utf-8")):
        assert not long_number.search(text), long_number.search(text)
    assert f"| {mean:.1%} |" in md.read_text(encoding="utf-8")  # the group's mean score


def test_html_has_the_group_tables(tmp_path: Path) -> None:
    gold, traces = _field_dataset(tmp_path)
    result = evaluate_dataset(str(gold), str(traces), engine="inline", group_by="model")
    try:
        page = render_html(result)
        assert "<h2>By model (2 groups, failing first)</h2>" in page
        assert "<th>pass^1</th>" in page
    finally:
        result.close()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["x", "y"]),
            st.floats(0, 1),
            st.booleans(),
        ),
        max_size=30,
    ),
    st.integers(0, 30),
)
def test_groups_merge_exactly_in_any_split(
    items: list[tuple[str, str, float, bool]], cut: int
) -> None:
    by = GroupBy.parse([r"^(?P<model>\w)/(?P<kind>\w)"])
    records = [
        _record(i, trace_id=f"{m}/{k}/{i}", score=s, passed=p)
        for i, (m, k, s, p) in enumerate(items)
    ]
    whole, left, right = Groups(by), Groups(by), Groups(by)
    for r in records:
        whole.add(r)
    for r in records[:cut]:
        left.add(r)
    for r in records[cut:]:
        right.add(r)
    right.merge(left)  # (in either order)
    for mine, theirs in zip(whole.tables, right.tables, strict=True):
        assert mine.keys() == theirs.keys()
        for value, counts in mine.items():
            other = theirs[value]
            assert (counts.traces, counts.passed, counts.judged, counts.scored) == (
                other.traces,
                other.passed,
                other.judged,
                other.scored,
            )
            assert counts.score_sum.total().value() == other.score_sum.total().value()
    assert whole.matched == right.matched and whole.example == right.example


def test_groups_past_the_cap_are_counted_together() -> None:
    groups = Groups(GroupBy.parse(["task"]))
    for i in range(MAX_GROUPS + 5):
        groups.add(_record(i, passed=True, score=1.0))
    table = groups.tables[0]
    assert len(table) == MAX_GROUPS + 1
    assert table[OTHER_GROUPS].traces == 5
    assert groups.capped


def test_k_no_task_reaches_is_reported_empty() -> None:
    rows = overall_pass({(2, 1): 3}, [1, 4])
    assert rows[0][:2] == (1, 3)
    assert rows[1] == (4, 0, None, None)


def test_the_actions_summary_has_the_breakdowns_and_rounded_outputs(tmp_path: Path) -> None:
    from toolscore.action import main

    gold, traces = _field_dataset(tmp_path)
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    code = main(
        [
            "--traces", str(traces), "--gold-file", str(gold), "--workers", "1",
            "--group-by", "model", "--group-by", r"^(?P<digit>t\d)", "--k", "1",
            "--summary", str(summary), "--outputs", str(outputs),
        ]
    )  # fmt: skip
    assert code in (0, 1)
    text = summary.read_text(encoding="utf-8")
    assert "### By model (2 groups, failing first)" in text
    assert "### By digit (6 groups, failing first)" in text
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert re.fullmatch(r"\d\.\d{3}", values["score"]), values
