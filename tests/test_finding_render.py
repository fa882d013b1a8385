"""A finding's message: the template rendered from the fields, as ``str.format`` gives it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolscore.calls import Finding, Location

NAMES = ["call", "previous", "tool", "kind", "rule", "path", "preview", "detail"]
NAMES += ["location", "source", "line"]


def _formatted(f: Finding) -> str:
    """The message by ``str.format`` with every field, as the rendering documents it."""
    assert f.template is not None
    index, loc = f.call_index, f.location
    return f.template.format(
        call=None if index is None else index + 1,
        previous=index,
        tool=f.tool,
        kind=f.kind,
        rule=None if f.rule is None else f.rule + 1,
        path=f.path,
        preview=f.preview,
        detail=f.detail,
        location=loc,
        source=None if loc is None else loc.source,
        line=None if loc is None else loc.line,
    )


def _outcome(render: Any) -> tuple[str, Any]:
    """The message, or the error it raised (a format spec a ``None`` field cannot take)."""
    try:
        return "message", render()
    except (TypeError, ValueError) as exc:
        return "error", (type(exc), str(exc))


_TEXT = st.text(alphabet=st.sampled_from("ab '\"\\\n{}%:…"), max_size=6)
_PIECE = st.one_of(
    _TEXT.map(lambda t: t.replace("{", "{{").replace("}", "}}")),
    st.sampled_from(NAMES).map(lambda n: "{" + n + "}"),
    st.sampled_from(["{call:>4}", "{tool!r}", "{detail!s:.3}"]),
)
_MAYBE_TEXT = st.none() | st.text(max_size=8)
_MAYBE_INT = st.none() | st.integers(0, 10**6)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_PIECE, max_size=8).map("".join),
    _MAYBE_INT,
    _MAYBE_TEXT,
    _MAYBE_INT,
    _MAYBE_TEXT,
    _MAYBE_TEXT,
    st.none() | st.tuples(st.text(max_size=5), _MAYBE_INT, _MAYBE_INT),
)
def test_render_is_the_template_formatted_with_the_fields(
    template: str,
    index: int | None,
    tool: str | None,
    rule: int | None,
    path: str | None,
    detail: str | None,
    where: Any,
) -> None:
    loc = None if where is None else Location(*where)
    f = Finding("c", "k", "warning", None, index, tool, loc, "p", rule=rule, path=path,
                detail=detail, template=template)  # fmt: skip
    expected = _outcome(lambda: _formatted(f))
    assert _outcome(f.render) == expected
    assert _outcome(f.render) == expected  # the second time from the remembered renderer


def test_a_template_with_an_unknown_name_fails_as_str_format_does() -> None:
    f = Finding("c", "k", "warning", None, 0, "t", template="call {call} {nope}")
    try:
        f.render()
    except KeyError as exc:
        assert exc.args == ("nope",)
    else:  # pragma: no cover - the assertion's message
        raise AssertionError("an unknown name rendered")
