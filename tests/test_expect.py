from __future__ import annotations

from typing import Any

import pytest

from toolscore import Contains, ToolScoreAssertionError, assert_tools, expect


def agent(prompt: str) -> list[dict[str, Any]]:
    return [{"tool": "run_shell", "args": {"command": "make clean\nrm -rf build"}}]


def test_does_not_call_catches_second_line() -> None:
    with pytest.raises(ToolScoreAssertionError, match="Forbidden tool"):
        expect(agent).on("clean up").does_not_call("run_shell", command=Contains("rm -rf")).run()


def test_does_not_call_passes_when_args_differ() -> None:
    result = expect(agent).on("x").does_not_call("run_shell", command=Contains("sudo")).run()
    assert result.score == 0.0  # forbidden-only expectations are not scored


def test_no_expectations_is_an_error() -> None:
    with pytest.raises(ValueError, match="no expectations declared"):
        expect(agent).on("x").run()


def test_callable_needs_prompt() -> None:
    with pytest.raises(ValueError, match="no prompt was set"):
        expect(agent).calls("run_shell").run()


def test_min_score_epsilon_and_failure() -> None:
    calls = [{"tool": "a"}]
    assert assert_tools(calls, calls, min_score=1.0).score == pytest.approx(1.0)
    with pytest.raises(ToolScoreAssertionError, match="required"):
        assert_tools([{"tool": "a"}, {"tool": "b"}], [{"tool": "c"}], min_score=0.9)
    with pytest.raises(ValueError, match=r"between 0\.0 and 1\.0"):
        assert_tools(calls, calls, min_score=2)


@pytest.mark.anyio
async def test_run_async_awaits_agent() -> None:
    async def async_agent(prompt: str) -> list[dict[str, Any]]:
        return [{"tool": "search", "args": {"q": prompt}}]

    result = await expect(async_agent).on("hi").calls("search", q="hi").run_async()
    assert result.grade == "A"
    with pytest.raises(TypeError, match="run_async"):
        expect(async_agent).on("hi").calls("search").run()
