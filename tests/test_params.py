"""Deferred option coercion (toolscore.cli._params): the same values and errors as typer's own."""

from __future__ import annotations

import math
from typing import Any

import pytest
import typer.main
from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import EXAMPLE, run_cli
from toolscore.cli import app, main
from toolscore.cli._params import defer_coercion


def _commands() -> tuple[Any, Any]:
    main.main(["--version"], standalone_mode=False)  # registers the other commands
    deferred = typer.main.get_command(app)
    defer_coercion(deferred)
    return deferred, typer.main.get_command(app)


DEFERRED, TYPERS = _commands()
SUBCOMMANDS = sorted(DEFERRED.commands)


def _params(command: Any) -> dict[str, Any]:
    ctx = command.make_context(command.name, [], resilient_parsing=True)
    return {p.name: p for p in command.get_params(ctx)}


def _coerce(command: Any, name: str, value: Any) -> tuple[str, Any]:
    ctx = command.make_context(command.name, [], resilient_parsing=True)
    param = next(p for p in command.get_params(ctx) if p.name == name)
    try:
        out = param.get_runtime_param().coerce(value, param=param, ctx=ctx)
    except Exception as exc:
        return "error", (type(exc).__name__, exc.format_message())
    return "value", (type(out).__name__, out)


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    if a[0] == "value" and b[0] == "value" and a[1][0] == b[1][0] == "float":
        x, y = a[1][1], b[1][1]
        return (math.isnan(x) and math.isnan(y)) or x == y
    return a == b


VALUES = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.text(alphabet="0123456789", max_size=25),
    st.sampled_from(["-1", "+4", " 3", "1_0", "0x10", "", "\udcff", "\uff11", "2.5", "nan"]),
    st.integers(min_value=-3, max_value=3),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.lists(st.text(max_size=8), max_size=4).map(tuple),
    st.lists(st.one_of(st.text(max_size=4), st.integers()), max_size=3),
)


def test_every_parameter_is_covered() -> None:
    for name in ["", *SUBCOMMANDS]:
        deferred = DEFERRED.commands[name] if name else DEFERRED
        typers = TYPERS.commands[name] if name else TYPERS
        assert set(_params(deferred)) == set(_params(typers))
    # the plain parameters (all of eval's) take the deferred coercion
    eval_params = _params(DEFERRED.commands["eval"])
    assert "help" in eval_params
    assert all(type(p.get_runtime_param()).__name__ == "_Deferred" for p in eval_params.values())


PARAMS = [
    (sub, name)
    for sub in ["", *SUBCOMMANDS]
    for name in sorted(_params(DEFERRED.commands[sub] if sub else DEFERRED))
]


@pytest.mark.parametrize(("sub", "name"), PARAMS)
@settings(max_examples=60, deadline=None)
@given(value=VALUES)
def test_deferred_coercion_is_typers(sub: str, name: str, value: Any) -> None:
    deferred = DEFERRED.commands[sub] if sub else DEFERRED
    typers = TYPERS.commands[sub] if sub else TYPERS
    ours, theirs = _coerce(deferred, name, value), _coerce(typers, name, value)
    assert _same(ours, theirs), (ours, theirs)


def test_a_value_typer_must_read_still_reads() -> None:
    done = run_cli("eval", "gold.json", "trace.json", "--workers", "-1", cwd=EXAMPLE)
    assert done.returncode == 2
    assert "Input should be greater than or equal to 0" in done.stderr
