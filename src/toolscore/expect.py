"""The fluent API: ``expect(agent).on(prompt).calls(...).does_not_call(...).run()``.

It collects expected calls and forbidden rules, runs the agent (or takes its result), and
checks the outcome with the same pipeline as ``evaluate()``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .result import EvaluationResult

# ``import toolscore`` imports this module (``toolscore.expect`` is its function), so what it
# uses is imported when first used: ``toolscore --help`` and ``--version`` need none of it.

__all__ = [
    "Expectation",
    "ToolScoreAssertionError",
    "assert_tools",
    "expect",
    "test_agent",
    "test_agent_async",
]

_EPSILON = 1e-9


def evaluate(*args: Any, **kwargs: Any) -> EvaluationResult:
    """:func:`toolscore.evaluate`, imported on first use."""
    # start-up of `import toolscore`: it loads expect, not the evaluation modules
    from .api import evaluate as run

    return run(*args, **kwargs)


def _ruleset(rules: Any) -> Any:
    # start-up of `import toolscore`: it loads expect, not the evaluation modules
    from .hardrules.spec import ruleset

    return ruleset(rules)


class ToolScoreAssertionError(AssertionError):
    """Raised when an expectation fails: a forbidden call, or a score below the minimum.

    ``result`` is the evaluation that failed, when there is one (a score below the minimum).
    """

    def __init__(self, *args: object, result: EvaluationResult | None = None) -> None:
        super().__init__(*args)
        self.result = result


def _check_range(min_score: float) -> None:
    if not 0.0 <= min_score <= 1.0:
        raise ValueError(f"min_score must be between 0.0 and 1.0, got {min_score}")


def _failure_text(result: EvaluationResult, min_score: float, strict: bool = False) -> str:
    # start-up of `import toolscore`: it loads expect, not the evaluation modules
    from .failures import render_failure

    return render_failure(
        result.gold_calls,
        result.trace_calls or [],
        score=result.score,
        min_score=min_score,
        metrics=(result.selection_accuracy, result.argument_f1, result.sequence_accuracy),
        strict=strict,
    )


def _check_rules(result: EvaluationResult) -> EvaluationResult:
    broken = result.rule_violations
    if broken:
        lines = "\n".join(f"  {v['message']}" for v in broken)
        raise ToolScoreAssertionError(f"{len(broken)} rule(s) broken:\n{lines}")
    return result


def _check_min_score(
    result: EvaluationResult, min_score: float, strict: bool = False
) -> EvaluationResult:
    __tracebackhide__ = True
    if result.score < max(0.0, min_score - _EPSILON):
        raise ToolScoreAssertionError(_failure_text(result, min_score, strict), result=result)
    return result


def assert_tools(
    expected: list[Mapping[str, Any]],
    actual: Any,
    min_score: float = 0.9,
    weights: Mapping[str, float] | None = None,
    strict: bool = False,
) -> EvaluationResult:
    """Evaluate and raise :class:`ToolScoreAssertionError` when the score is below ``min_score``."""
    _check_range(min_score)
    return _check_min_score(evaluate(expected, actual, weights, strict), min_score, strict)


def test_agent(
    agent: Any,
    input: Any,
    expected: list[Mapping[str, Any]],
    min_score: float | None = None,
    weights: Mapping[str, float] | None = None,
    strict: bool = False,
) -> EvaluationResult:
    """Run a sync ``agent(input)`` and evaluate its calls; check ``min_score`` when given."""
    if min_score is not None:
        _check_range(min_score)
    if inspect.iscoroutinefunction(agent):
        raise TypeError("agent is async — use `await toolscore.test_agent_async(...)` instead.")
    result = evaluate(expected, agent(input), weights, strict)
    return result if min_score is None else _check_min_score(result, min_score, strict)


async def test_agent_async(
    agent: Any,
    input: Any,
    expected: list[Mapping[str, Any]],
    min_score: float | None = None,
    weights: Mapping[str, float] | None = None,
    strict: bool = False,
) -> EvaluationResult:
    """Like :func:`test_agent`, awaiting the agent's response when it is awaitable."""
    if min_score is not None:
        _check_range(min_score)
    response = agent(input)
    if inspect.isawaitable(response):
        response = await response
    result = evaluate(expected, response, weights, strict)
    return result if min_score is None else _check_min_score(result, min_score, strict)


test_agent.__test__ = False  # type: ignore[attr-defined]
test_agent_async.__test__ = False  # type: ignore[attr-defined]


class Expectation:
    """Built by :func:`expect`; each method returns the expectation for chaining."""

    def __init__(self, subject: Any) -> None:
        self._subject = subject
        self._prompt: Any = None
        self._has_prompt = False
        self._calls: list[dict[str, Any]] = []
        self._forbidden: list[dict[str, Any]] = []
        self._min_score = 0.9
        self._weights: dict[str, float] | None = None
        self._strict = False
        self._rules: dict[str, Any] = {}

    def on(self, prompt: Any) -> Expectation:
        """The input to give a callable subject."""
        self._prompt = prompt
        self._has_prompt = True
        return self

    def calls(self, tool: str, **args: Any) -> Expectation:
        """Expect a call to ``tool``; with no keyword arguments its arguments are not checked."""
        call: dict[str, Any] = {"tool": tool}
        if args:
            call["args"] = args
        self._calls.append(call)
        return self

    then_calls = calls

    def does_not_call(self, tool: str, **args: Any) -> Expectation:
        """Forbid calls to ``tool`` (only those whose arguments match, when given)."""
        self._forbidden.append({"tool": tool, "args": args or None})
        return self

    # -- hard rules: pass/fail, checked before the score ------------------------------------

    def _add(self, key: str, item: Any) -> Expectation:
        self._rules.setdefault(key, []).append(item)
        _ruleset(self._rules)  # a bad rule fails here, where it was written
        return self

    def calls_in_order(self, *tools: str) -> Expectation:
        """Each tool is called before any call to the next (``A`` before ``B`` before ...)."""
        return self._add("order", list(tools))

    def calls_before(self, before: str, after: str) -> Expectation:
        """``before`` is called before any call to ``after``."""
        return self._add("order", {"before": before, "after": after})

    def calls_at_most(self, tool: str, times: int) -> Expectation:
        """``tool`` is called at most ``times`` times."""
        return self._add("counts", {"tool": tool, "max": times})

    def calls_at_least(self, tool: str, times: int) -> Expectation:
        """``tool`` is called at least ``times`` times."""
        return self._add("counts", {"tool": tool, "min": times})

    def calls_between(self, tool: str, low: int, high: int) -> Expectation:
        """``tool`` is called between ``low`` and ``high`` times (both included)."""
        return self._add("counts", {"tool": tool, "min": low, "max": high})

    def within_steps(self, steps: int) -> Expectation:
        """The whole trace makes at most ``steps`` calls."""
        return self._add("counts", {"max": steps, "id": "max_calls"})

    def only_calls(self, *tools: str) -> Expectation:
        """No tool but these is called (an allowlist)."""
        self._rules["allow"] = sorted(set(self._rules.get("allow", tools)) & set(tools))
        _ruleset(self._rules)
        return self

    def with_schemas(self, definitions: Any) -> Expectation:
        """Every call's arguments match its tool's JSON Schema (OpenAI, Anthropic or MCP
        tool definitions, or ``{tool: schema}``)."""
        self._rules["schemas"] = definitions
        _ruleset(self._rules)
        return self

    def does_not_leak_to(self, *sinks: str, sources: Any = None) -> Expectation:
        """No call to ``sinks`` after a call whose result carried a credential, or after a
        call matching ``sources`` (forbidden-rule form: ``[{"tool": "read_file", "args":
        {"path": Contains(".ssh")}}]``)."""
        rule: dict[str, Any] = {"sinks": list(sinks), "id": f"data_flow[{len(self._flows())}]"}
        if sources is not None:
            rule["sources"] = list(sources)
        return self._add("data_flow", rule)

    def _flows(self) -> list[Any]:
        flows: list[Any] = self._rules.get("data_flow", [])
        return flows

    def matches_trajectory(self, mode: str = "strict") -> Expectation:
        """The calls match the expected ones (``.calls(...)``) as a whole: ``strict`` (same
        calls, same order), ``unordered``, ``subset`` (no call unexpected) or ``superset``
        (every expected call made)."""
        match = self._rules.setdefault("match", [])
        if mode not in match:
            match.append(mode)
        _ruleset(self._rules)
        return self

    def with_argument_mode(self, mode: str, tool: str | None = None, **per_arg: str) -> Expectation:
        """How arguments match in :meth:`matches_trajectory`: ``exact``, ``ignore``,
        ``subset`` (extra actual arguments are fine) or ``superset``; for every tool, or for
        ``tool`` only, with per-argument modes as keywords (``page="ignore"``)."""
        arguments = self._rules.setdefault("arguments", {})
        if tool is None:
            arguments["mode"] = mode
        else:
            spec: dict[str, Any] = {"mode": mode}
            if per_arg:
                spec["args"] = per_arg
            arguments.setdefault("tools", {})[tool] = spec
        _ruleset(self._rules)
        return self

    def with_score(self, min_score: float) -> Expectation:
        _check_range(min_score)
        self._min_score = min_score
        return self

    def with_weights(self, **weights: float) -> Expectation:
        # start-up of `import toolscore`: it loads expect, not the evaluation modules
        from .result import normalize_weights

        normalize_weights(weights)
        self._weights = dict(weights)
        return self

    def with_strict_args(self) -> Expectation:
        self._strict = True
        return self

    def _declared(self) -> None:
        if not self._calls and not self._forbidden and not self._rules:
            raise ValueError(
                "no expectations declared — call .calls(), .then_calls(), or .does_not_call() "
                "before .run()."
            )

    def _is_callable(self) -> bool:
        return callable(self._subject) and not isinstance(self._subject, (list, dict))

    def _actual_sync(self) -> Any:
        if not self._is_callable():
            if self._has_prompt:
                raise TypeError(
                    "expect() was given a non-callable subject (a raw result or list), but "
                    ".on(prompt) was also called.  Use .on() only when the subject is an agent "
                    "callable."
                )
            return self._subject
        if not self._has_prompt:
            raise ValueError(
                "expect() was given a callable subject but no prompt was set. Call .on(prompt) "
                "before .run()."
            )
        if inspect.iscoroutinefunction(self._subject):
            raise TypeError("subject is an async function — use `expect(...).run_async()` instead.")
        response = self._subject(self._prompt)
        if inspect.isawaitable(response):
            if inspect.iscoroutine(response):
                response.close()
            raise TypeError("subject is async — use `expect(...).run_async()` instead.")
        return response

    def _finish(self, actual: Any) -> EvaluationResult:
        # start-up of `import toolscore`: it loads expect, not the evaluation modules
        from .api import extract_calls
        from .gold import calls_from_dicts
        from .rules import check_forbidden_calls, rules_from_python

        if self._forbidden:
            calls = calls_from_dicts(extract_calls(actual))
            report = check_forbidden_calls(calls, rules_from_python(self._forbidden))
            hits = report["violations"]
            if hits:
                names = ", ".join(dict.fromkeys(repr(v["tool"]) for v in hits))
                offending = "; ".join(f"{v['tool']}({v['args'] or {}})" for v in hits)
                # start-up of `import toolscore`: it loads expect, not the evaluation modules
                from .redact import redact_secrets

                first = hits[0]
                rule = self._forbidden[first["rule"]]
                raise ToolScoreAssertionError(
                    redact_secrets(
                        f"Forbidden tool(s) were called: {names}\n"
                        f"Forbidden calls: {offending}\n"
                        f"Actual calls: {[c.tool for c in calls]}\n"
                        f"Fix: call {first['index'] + 1} `{first['tool']}` matches "
                        f"does_not_call({_rule_text(rule)}): change the prompt or the "
                        "agent's tools so it does not make this call."
                    )
                )
        rules = _ruleset(self._rules) if self._rules else None
        if not self._calls:
            return _check_rules(evaluate([], actual, strict=self._strict, rules=rules))
        result = evaluate(self._calls, actual, self._weights, self._strict, rules=rules)
        return _check_min_score(_check_rules(result), self._min_score, self._strict)

    def run(self) -> EvaluationResult:
        """Run the subject (sync), then check forbidden calls and the minimum score.

        Raises:
            ToolScoreAssertionError: a forbidden call was made, a rule was broken
                (``calls_in_order``, ``calls_at_most``, ``only_calls``...) or the score is
                too low.
        """
        self._declared()
        return self._finish(self._actual_sync())

    async def run_async(self) -> EvaluationResult:
        """Like :meth:`run`, for async agents (the response is awaited)."""
        self._declared()
        if not self._is_callable():
            return self._finish(self._actual_sync())
        if not self._has_prompt:
            return self._finish(self._actual_sync())
        response = self._subject(self._prompt)
        if inspect.isawaitable(response):
            response = await response
        return self._finish(response)


def _rule_text(rule: Mapping[str, Any]) -> str:
    # start-up of `import toolscore`: it loads expect, not the evaluation modules
    from .failures import call_text

    text = call_text(rule["tool"], rule.get("args") or {})
    return repr(rule["tool"]) + (
        ", " + text[len(rule["tool"]) + 1 : -1] if rule.get("args") else ""
    )


def expect(subject: Any) -> Expectation:
    """Start a fluent expectation on an agent callable or on its result."""
    return Expectation(subject)
