"""What the format tests share: a trace read back through the streamed reader, and the
arbitrary-JSON inputs that every dialect must survive."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from toolscore.calls import Finding, ToolCall
from toolscore.errors import InputError
from toolscore.integrations import call_to_dict
from toolscore.sources import Session, iter_batches


def streamed(path: Path, format: str = "auto") -> list[dict[str, Any]]:
    """The calls of ``path`` read 7 bytes at a time (every chunk boundary), as helper dicts."""
    found: list[ToolCall] = []
    for batch in iter_batches(path, format, chunk_size=7):
        assert batch.error is None
        found.extend(batch.calls)
    return [call_to_dict(c) for c in found]


def json_like(keys: list[str]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON whose object keys come from ``keys`` (a format's own field names), so
    the values reach deep into a dialect's code paths."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(keys), inner, max_size=5)
        ),
        max_leaves=20,
    )


def assert_numbered(got: list[ToolCall]) -> None:
    """Every call a dialect yields is complete, named, and numbered 0, 1, 2, ..."""
    assert all(c.complete and c.tool for c in got)
    assert [c.index for c in got] == list(range(len(got)))


def fed(
    data: bytes, format: str = "auto", *, cuts: list[int] | None = None, step: int = 0
) -> tuple[list[ToolCall], list[Finding], InputError | None, str]:
    """Feed ``data`` through a session whole, at ``cuts``, or ``step`` bytes at a time."""
    session = Session(format, "t")
    if step:
        pieces = [data[i : i + step] for i in range(0, len(data), step)]
    else:
        bounds = [0, *sorted(set(cuts or [])), len(data)]
        pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
    calls: list[ToolCall] = []
    done: list[int] = []
    findings: list[Finding] = []
    error: InputError | None = None
    for piece in pieces:
        batch = session.feed(piece)
        calls += batch.calls
        done += [c.index for c in batch.done]
        findings += batch.findings
        if batch.error is not None:
            error = batch.error
            break
    else:
        batch = session.close()
        calls += batch.calls
        done += [c.index for c in batch.done]
        findings += batch.findings
        error = batch.error
    assert sorted(done) == [c.index for c in calls], "every call is released exactly once"
    assert [c.index for c in calls] == list(range(len(calls)))
    name = session.decoder.name if session.decoder is not None else ""
    return calls, findings, error, name
