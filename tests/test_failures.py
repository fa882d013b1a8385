"""Readable assertion failures: call by call, argument by argument, the most useful fix last."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolscore
from _secrets import PLANTED, assert_no_secrets, planted_text
from toolscore import ANY, Approx, Regex, ToolScoreAssertionError, assert_tools, expect
from toolscore.failures import align, render_failure, row_for
from toolscore.gold import calls_from_dicts


def _failure(expected: list[dict[str, Any]], actual: list[dict[str, Any]], **kw: Any) -> str:
    with pytest.raises(ToolScoreAssertionError) as info:
        assert_tools(expected, actual, **kw)
    return str(info.value)


def _row(text: str, number: int) -> str:
    (line,) = [ln for ln in text.splitlines() if ln[3:].lstrip().startswith(f"{number}  ")]
    return line


def test_wrong_argument_is_not_a_check_mark() -> None:
    text = _failure(
        [{"tool": "search", "args": {"q": "BOS"}}], [{"tool": "search", "args": {"q": "NYC"}}]
    )
    row = _row(text, 1)
    assert row.startswith("  ✗")
    assert "search(q='BOS')" in row and "search(q='NYC')" in row
    assert "q: expected 'BOS', got 'NYC'" in text
    assert "✓" not in text
    assert text.splitlines()[-1].startswith("Fix: `search` was called with other arguments")


def test_call_by_call_with_matchers_missing_and_extra() -> None:
    expected = [
        {"tool": "search", "args": {"q": Regex("weather.*")}},
        {"tool": "fetch", "args": {"url": ANY, "n": Approx(3, abs=0.5)}},
        {"tool": "summarize"},
    ]
    actual = [
        {"tool": "search", "args": {"q": "weather NYC"}},
        {"tool": "run_shell", "args": {"command": "ls"}},
        {"tool": "run_shell", "args": {"command": "pwd"}},
        {"tool": "fetch", "args": {"url": "https://x", "n": 7}},
    ]
    text = _failure(expected, actual)
    lines = text.splitlines()
    assert lines[0].startswith("Expected vs actual tool calls (score ")
    assert "< 0.90 required" in lines[0]
    assert _row(text, 1).startswith("  ✓") and "search(q=Regex('weather.*'))" in _row(text, 1)
    assert _row(text, 2).startswith("  ✗") and "run_shell(command='ls')" in _row(text, 2)
    assert _row(text, 4).startswith("  ✗") and "fetch(url=ANY, n=Approx(3, abs=0.5))" in text
    assert "— missing —" in _row(text, 5)
    assert "n: expected Approx(3, abs=0.5), got 7" in text
    assert "url:" not in text  # ANY matched
    assert "summarize(…any args…)" in text
    assert "— extra —" in text
    assert "score " in lines[-2] and "selection" in lines[-2] and "sequence" in lines[-2]
    # a missing call outranks a wrong tool, wrong arguments and an extra call
    assert lines[-1].startswith("Fix: `summarize` was expected but never called")


def test_extra_and_wrong_tool_fixes() -> None:
    extra = _failure(
        [{"tool": "a", "args": {}}], [{"tool": "a", "args": {}}, {"tool": "b", "args": {}}]
    )
    assert "— extra —" in extra
    assert extra.splitlines()[-1].startswith("Fix: `b` was called but not expected")
    wrong = _failure([{"tool": "a"}, {"tool": "b"}], [{"tool": "a"}, {"tool": "c"}])
    assert wrong.splitlines()[-1].startswith("Fix: `c` was called where `b` was expected")


def test_strict_mode_is_shown_as_the_score_saw_it() -> None:
    text = _failure(
        [{"tool": "t", "args": {"n": 1}}], [{"tool": "t", "args": {"n": 1.0}}], strict=True
    )
    assert "n: expected 1, got 1.0" in text
    assert_tools([{"tool": "t", "args": {"n": 1}}], [{"tool": "t", "args": {"n": 1.0}}])


def test_failure_text_is_redacted_even_when_values_are_cut() -> None:
    key = PLANTED["openai_api_key"][0]
    text = _failure(
        [{"tool": "post", "args": {"body": "x"}}],
        [{"tool": "post", "args": {"body": "y" * 50 + " " + key, "auth": planted_text()}}],
    )
    assert_no_secrets(text)
    assert "[REDACT" in text


def test_expect_api_and_forbidden_fix() -> None:
    with pytest.raises(ToolScoreAssertionError) as info:
        (
            expect([{"tool": "search", "args": {"q": "NYC"}}])
            .calls("search", q="BOS")
            .with_score(0.95)
            .run()
        )
    text = str(info.value)
    assert "q: expected 'BOS', got 'NYC'" in text and "< 0.95 required" in text
    with pytest.raises(ToolScoreAssertionError) as info:
        (
            expect([{"tool": "run_shell", "args": {"command": "rm -rf /", "t": planted_text()}}])
            .does_not_call("run_shell", command=toolscore.Contains("rm -rf"))
            .run()
        )
    text = str(info.value)
    assert text.startswith("Forbidden tool(s) were called: 'run_shell'")
    assert "Fix: call 1 `run_shell` matches does_not_call('run_shell', command=Contains" in text
    assert_no_secrets(text)


def test_alignment_is_positional_past_the_limit() -> None:
    expected = calls_from_dicts([{"tool": "a"}] * 3)
    actual = calls_from_dicts([{"tool": "b"}, {"tool": "a"}])
    pairs = align(expected, actual)
    assert [(e and e.tool, a and a.tool) for e, a in pairs] == [
        (None, "b"),
        ("a", "a"),
        ("a", None),
        ("a", None),
    ]
    text = render_failure(expected, actual)
    assert text.splitlines()[-1].startswith("Fix: `a` was expected but never called")


_values = st.one_of(
    st.integers(-3, 3), st.sampled_from(["x", " x", "y", "X"]), st.booleans(), st.just(1.0)
)
_args = st.dictionaries(st.sampled_from(["a", "b", "c"]), _values, max_size=3)


@settings(max_examples=300, deadline=None)
@given(expected=st.one_of(st.none(), _args), actual=_args, strict=st.booleans())
def test_check_mark_iff_the_arguments_score_perfectly(
    expected: dict[str, Any] | None, actual: dict[str, Any], strict: bool
) -> None:
    gold = {"tool": "t"} if expected is None else {"tool": "t", "args": expected}
    call = {"tool": "t", "args": actual}
    result = toolscore.evaluate([gold], [call], strict=strict)
    (e,) = calls_from_dicts([gold])
    (a,) = calls_from_dicts([call])
    assert row_for(e, a, strict).ok == (result.argument_f1 == 1.0)


def test_failure_text_is_one_safe_line_per_row() -> None:
    evil = "x\x1b[2J\n::error::pwned\u202e"
    text = _failure([{"tool": "a", "args": {"k": "v"}}], [{"tool": evil, "args": {evil: evil}}])
    assert "\x1b" not in text and "\u202e" not in text
    assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    assert "\\x1b[2J\\n" in text
