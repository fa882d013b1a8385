"""Readable assertion failures: expected against actual, call by call, argument by argument.

What ``assert_tools``, ``expect(...).run()`` and the pytest plugin's fixtures raise when an
expectation fails::

    Expected vs actual tool calls (score 0.62 < 0.90 required):
        #  expected                          actual
      ✓ 1  search(q=Regex('weather.*'))      search(q='weather NYC')
      ✗ 2  fetch(city='BOS')                 fetch(city='NYC')
             city: expected 'BOS', got 'NYC'
      ✗ 3  summarize(…any args…)             — missing —
      ✗ 4  — extra —                         run_shell(command='ls')
    score 0.62 < 0.90 required · selection 0.75 · args 0.50 · sequence 0.50
    Fix: `summarize` was expected but never called: make sure the agent has this tool and
    is prompted to use it.

Calls are aligned by tool name (the longest common subsequence; positionally past
:data:`ALIGN_LIMIT` calls a side). A call gets ``✓`` only when its tool matches and every
expected argument compares equal as the score compares it (matchers, lenient or strict), so
``search(q='NYC')`` against ``search(q='BOS')`` is ``✗`` with the argument named. Matchers
are shown as what they accept (``Regex('weather.*')``, ``ANY``). The last line is the most
useful fix: a missing call before a wrong tool, before wrong arguments, before an extra call.
The whole text is redacted with :func:`toolscore.redact.redact_secrets`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .matchers import OptionalArg, compare_values
from .redact import redact_secrets
from .sanitize import shown

__all__ = ["ALIGN_LIMIT", "Row", "align", "call_text", "render_failure", "row_for"]

ALIGN_LIMIT = 2000
"""Calls on a side above which the alignment is positional (the LCS is quadratic)."""
_VALUE_CHARS = 60
_CALL_CHARS = 70
_MAX_ROWS = 200


def _value(value: Any) -> str:
    # redacted before it is cut, so that a cut never leaves part of a credential unredacted;
    # and one line, without control codes (toolscore.sanitize)
    text = shown(repr(value))
    if len(text) > _VALUE_CHARS:
        text = text[: _VALUE_CHARS - 1] + "…"
    return text


def call_text(tool: str, args: Any, *, expected: bool = False) -> str:
    """``tool(k=v, ...)``, values redacted; an expected call whose arguments are not checked
    is ``tool(…any args…)``."""
    tool = shown(tool)
    if args is None:
        return f"{tool}(…any args…)" if expected else f"{tool}()"
    if isinstance(args, Mapping):
        inner = ", ".join(f"{shown(str(k))}={_value(v)}" for k, v in args.items())
    else:
        inner = _value(args)
    text = f"{tool}({inner})"
    if len(text) > _CALL_CHARS:
        text = text[: _CALL_CHARS - 2] + "…)"
        text = redact_secrets(text)
    return text


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the comparison: an expected call, an actual call, or both."""

    expected: Any
    actual: Any
    ok: bool
    details: tuple[str, ...] = ()
    """Per-argument differences."""
    problem: str = ""
    """``missing``, ``extra``, ``wrong_tool``, ``wrong_args`` or ``""``."""


def _args_details(expected: Any, actual: Any, strict: bool) -> list[str]:
    if expected is None:
        return []
    got = actual if isinstance(actual, Mapping) else {}
    if not isinstance(expected, Mapping):
        return (
            []
            if compare_values(expected, actual, strict)
            else [f"arguments: expected {_value(expected)}, got {_value(actual)}"]
        )
    lines = []
    for key, want in expected.items():
        if key not in got:
            if want.__class__ is OptionalArg:
                continue
            lines.append(f"{shown(str(key))}: expected {_value(want)}, missing")
        elif not compare_values(want, got[key], strict):
            lines.append(f"{shown(str(key))}: expected {_value(want)}, got {_value(got[key])}")
    extra = [k for k in got if k not in expected]
    if extra:
        noun = "argument" if len(extra) == 1 else "arguments"
        lines.append(f"unexpected {noun}: {', '.join(shown(str(k)) for k in extra)}")
    return lines


def row_for(expected: Any, actual: Any, strict: bool = False) -> Row:
    """Compare one expected call with one actual call (either may be ``None``)."""
    if actual is None:
        return Row(expected, None, False, (), "missing")
    if expected is None:
        return Row(None, actual, False, (), "extra")
    if expected.tool != actual.tool:
        detail = f"tool: expected {shown(repr(expected.tool))}"
        return Row(expected, actual, False, (detail,), "wrong_tool")
    details = _args_details(expected.args, actual.args, strict)
    return Row(expected, actual, not details, tuple(details), "wrong_args" if details else "")


def align(expected: Sequence[Any], actual: Sequence[Any]) -> list[tuple[Any, Any]]:
    """Pairs ``(expected call or None, actual call or None)`` in order: calls of the same tool
    along the longest common subsequence of names; unmatched runs side by side."""
    n, m = len(expected), len(actual)
    if n > ALIGN_LIMIT or m > ALIGN_LIMIT:
        return [
            (expected[i] if i < n else None, actual[i] if i < m else None) for i in range(max(n, m))
        ]
    matcher = difflib.SequenceMatcher(
        a=[c.tool for c in expected], b=[c.tool for c in actual], autojunk=False
    )
    pairs: list[tuple[Any, Any]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pairs.extend(zip(expected[i1:i2], actual[j1:j2], strict=True))
        elif op == "replace":
            width = max(i2 - i1, j2 - j1)
            for k in range(width):
                e = expected[i1 + k] if i1 + k < i2 else None
                a = actual[j1 + k] if j1 + k < j2 else None
                pairs.append((e, a))
        elif op == "delete":
            pairs.extend((e, None) for e in expected[i1:i2])
        else:
            pairs.extend((None, a) for a in actual[j1:j2])
    return pairs


def _fix(rows: Sequence[Row]) -> str | None:
    order = {"missing": 0, "wrong_tool": 1, "wrong_args": 2, "extra": 3}
    bad = [r for r in rows if r.problem]
    if not bad:
        return None
    row = min(bad, key=lambda r: order[r.problem])
    exp = "" if row.expected is None else shown(row.expected.tool)
    act = "" if row.actual is None else shown(row.actual.tool)
    if row.problem == "missing":
        return (
            f"`{exp}` was expected but never called: make sure the agent has "
            "this tool and is prompted to use it for this task."
        )
    if row.problem == "wrong_tool":
        return (
            f"`{act}` was called where `{exp}` was expected: adjust "
            f"the prompt or the tool descriptions so the agent picks `{exp}`."
        )
    if row.problem == "wrong_args":
        return (
            f"`{exp}` was called with other arguments ({row.details[0]}): align "
            "the arguments, or relax the expectation with a matcher (ANY, Regex, Approx) if "
            "the value may vary."
        )
    return (
        f"`{act}` was called but not expected: remove the redundant call, or add "
        "it to the expected calls if it is intended."
    )


def render_failure(
    expected: Sequence[Any],
    actual: Sequence[Any],
    *,
    score: float | None = None,
    min_score: float | None = None,
    metrics: tuple[float, float, float] | None = None,
    strict: bool = False,
    header: str | None = None,
    fix: str | None = None,
    extra: Sequence[str] = (),
) -> str:
    """The failure text for expected and actual calls (``ToolCall``-like objects with
    ``tool`` and ``args``).

    Args:
        expected: the expected calls.
        actual: the calls made.
        score, min_score: the score and the minimum it missed, for the header and summary.
        metrics: ``(selection, argument F1, sequence)`` for the summary line.
        strict: compare argument types exactly, as the score did.
        header: replaces the first line.
        fix: replaces the computed fix (the last line).
        extra: lines shown before the fix (forbidden calls...).
    """
    rows = [row_for(e, a, strict) for e, a in align(expected, actual)]
    if header is None:
        header = "Expected vs actual tool calls"
        if score is not None and min_score is not None:
            header += f" (score {score:.2f} < {min_score:.2f} required)"
        header += ":"
    shown = [r.expected for r in rows[:_MAX_ROWS] if r.expected is not None]
    width = max([len("expected"), *(len(call_text(e.tool, e.args, expected=True)) for e in shown)])
    lines = [header, f"    {'#':>3}  {'expected':<{width}}  actual"]
    for i, row in enumerate(rows[:_MAX_ROWS], 1):
        exp = (
            "— extra —"
            if row.expected is None
            else call_text(row.expected.tool, row.expected.args, expected=True)
        )
        act = "— missing —" if row.actual is None else call_text(row.actual.tool, row.actual.args)
        mark = "✓" if row.ok else "✗"
        lines.append(f"  {mark} {i:>3}  {exp:<{width}}  {act}")
        lines.extend(f"         {detail}" for detail in row.details)
    if len(rows) > _MAX_ROWS:
        hidden = rows[_MAX_ROWS:]
        bad = sum(1 for r in hidden if not r.ok)
        lines.append(f"  ... {len(hidden)} more rows ({bad} not matching)")
    if score is not None and min_score is not None:
        summary = f"score {score:.2f} < {min_score:.2f} required"
        if metrics is not None:
            sel, args, seq = metrics
            summary += f" · selection {sel:.2f} · args {args:.2f} · sequence {seq:.2f}"
        lines.append(summary)
    lines.extend(extra)
    if fix is None:
        fix = _fix(rows)
    if fix is not None:
        lines.append(f"Fix: {fix}")
    elif score is not None and min_score is not None:
        lines.append(
            "Fix: every call matches; the score is lowered by the weights or by failed calls: "
            "check the required calls and the failed-call findings."
        )
    return redact_secrets("\n".join(lines))
