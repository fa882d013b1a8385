"""The records every part of toolscore speaks: calls, findings and batches.

A source turns bytes into :class:`ToolCall` objects; the pipeline hands them to the checks in
:class:`Batch` objects; checks answer with :class:`Finding` objects. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from string import Formatter
from typing import TYPE_CHECKING, Any, Literal, cast

from .failed import DEFAULT_FAILURES

if TYPE_CHECKING:
    from .columns import Columns
    from .errors import InputError

__all__ = ["Batch", "ExpectedCall", "Finding", "Location", "Severity", "ToolCall", "error_text"]

_FORMATTER = Formatter()

Severity = Literal["error", "warning", "info"]
FindingValues = tuple[
    str, str, Severity, int | None, str | None, tuple[str, int | None, int | None] | None,
    str | None, int | None, str | None, str | None, str | None,
]  # fmt: skip
"""A :class:`Finding` as plain values (:meth:`Finding.values`): check, kind, severity, call
index, tool, location (source, line, offset), preview, rule, path, detail, template."""
FindingCountKey = tuple[str, str, str | None, int | None]
"""What findings are counted by (check, kind, tool, rule): a baseline's
:func:`~toolscore.baseline.finding_key`, before it is written as text."""


@dataclass(slots=True)
class Location:
    """Where something sits in an input: a file plus a line (JSON Lines) or a byte offset."""

    source: str
    """The file name, ``<stdin>`` or ``<stream>``."""
    line: int | None = None
    """1-based line number, for line-framed input."""
    offset: int | None = None
    """0-based byte offset, for JSON documents."""

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.source}:{self.line}"
        if self.offset is not None:
            return f"{self.source}: byte {self.offset}"
        return self.source


@dataclass(slots=True)
class ToolCall:
    """One tool call an agent made (or, in a gold file, was expected to make)."""

    tool: str
    """The tool's name, compared exactly and case-sensitively."""
    args: Any = None
    """The arguments: usually a dict; ``None`` in a gold file means "don't check"."""
    result: Any = None
    """What the tool returned, where the trace records it."""
    timestamp: float | None = None
    duration: float | None = None
    """Seconds the call took, where the trace records it."""
    cost: float | None = None
    """USD, where the trace records it."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Format-specific extras; ``is_error``, ``error`` and ``id`` live here as in Toolscore."""
    index: int = -1
    """0-based position in the trace; set by the source that read it."""
    location: Location | None = None
    """Where the call was read, for messages; ``None`` for in-memory calls."""
    complete: bool = True
    """False while the call's result is still to come (OpenAI ``tool`` messages, MCP
    responses). The source sets it True and hands the call on again once the result arrives."""

    def __post_init__(self) -> None:
        if not self.tool:
            raise ValueError("Tool name cannot be empty")

    @property
    def is_error(self) -> bool:
        """True when the call failed by the default rules of :mod:`toolscore.failed`:
        ``metadata["is_error"] is True``, a truthy ``error``, or a result that says so
        (an ``error`` in it, ``success: false``, a status >= 400, ``Error:``, a traceback)."""
        return (
            DEFAULT_FAILURES.of(
                self.metadata.get("is_error") if self.metadata else None,
                self.metadata.get("error") if self.metadata else None,
                self.result,
            )
            is not None
        )

    @property
    def error(self) -> str | None:
        """The recorded error message (:func:`error_text`)."""
        return error_text(self.metadata.get("error") if self.metadata else None)


def error_text(err: Any) -> str | None:
    """A call's recorded ``error`` as a message: ``None`` when it is missing, a bool or falsy
    (no error by the failure rules), else the text (a non-string as ``str()`` gives it)."""
    if not err or isinstance(err, bool):
        return None
    return err if isinstance(err, str) else str(err)


# Gold calls use the same record; the alias documents intent at call sites.
ExpectedCall = ToolCall


@dataclass(slots=True, frozen=True, init=False, eq=False)
class Finding:
    """Something a check noticed, reported the moment it is known: a structured value.

    A finding is its fields (what kind of thing, which call, which line, which tool, which
    rule, which argument path...); its :attr:`message` is rendered from them where it is
    shown, from a ``template`` whose ``{names}`` are the fields (see :meth:`render`). So a
    finding moves (:meth:`moved`: a part of a trace read on its own, numbered from 0) by
    changing its numbers, never its text. A finding made from a plain ``message`` (a user
    check's) shows that text as it is.

    Findings never hold raw arguments: every field a template shows is safe to print.

    Two findings are equal when they say the same thing about the same call: same check,
    kind, severity, rendered message, call index, tool, location and preview.
    """

    check: str
    """The check that emitted it: ``errors``, ``secrets``, ``policy``, ``input``..."""
    kind: str
    """What it is within the check: ``failed_call``, ``retry_after_error``, a credential kind,
    ``forbidden_call``, ``malformed_line``..."""
    severity: Severity
    call_index: int | None
    """0-based index of the call concerned, when there is one."""
    tool: str | None
    location: Location | None
    preview: str | None
    """A redacted preview of the offending value (credentials)."""
    rule: int | None
    """0-based index of the forbidden rule matched."""
    path: str | None
    """The argument's path (``headers.Authorization``), redacted."""
    detail: str | None
    """Free text the template shows as ``{detail}``: a (redacted) error message, a rule's
    reason, what is wrong with a line; the whole message when there is no template."""
    template: str | None
    """How the message is rendered from the fields (:meth:`render`); None: ``detail`` as is."""

    def __init__(
        self,
        check: str,
        kind: str,
        severity: Severity,
        message: str | None = None,
        call_index: int | None = None,
        tool: str | None = None,
        location: Location | None = None,
        preview: str | None = None,
        *,
        rule: int | None = None,
        path: str | None = None,
        detail: str | None = None,
        template: str | None = None,
    ) -> None:
        if message is not None:
            if template is not None or detail is not None:
                raise TypeError("a Finding takes a message, or a template and its fields")
            detail = message
        # the slots' own setters (frozen: no __setattr__), a third quicker than
        # object.__setattr__ by name; a check makes one finding per failed call
        _SET_CHECK(self, check)
        _SET_KIND(self, kind)
        _SET_SEVERITY(self, severity)
        _SET_CALL_INDEX(self, call_index)
        _SET_TOOL(self, tool)
        _SET_LOCATION(self, location)
        _SET_PREVIEW(self, preview)
        _SET_RULE(self, rule)
        _SET_PATH(self, path)
        _SET_DETAIL(self, detail)
        _SET_TEMPLATE(self, template)

    @property
    def message(self) -> str:
        """One human-readable line, already redacted: :meth:`render`."""
        return self.render()

    def render(self) -> str:
        """The message: ``template`` with its ``{names}`` filled from the fields.

        Names: ``call`` (1-based call number), ``previous`` (the call before it, 1-based),
        ``tool``, ``kind``, ``rule`` (1-based), ``path``, ``preview``, ``detail``,
        ``location`` (``file:line`` or ``file: byte N``), ``source``, ``line``. The fields'
        values are inserted as they are (a brace in a detail is not a placeholder).
        """
        template = self.template
        if template is None:
            return self.detail or ""
        render: Callable[[Finding], str] | None = _RENDERERS.get(template, _UNSEEN)
        if render is _UNSEEN:
            render = _RENDERERS[template] = _renderer(template)
        if render is not None:
            return render(self)
        index = self.call_index
        loc = self.location
        return template.format(
            call=None if index is None else index + 1,
            previous=index,
            tool=self.tool,
            kind=self.kind,
            rule=None if self.rule is None else self.rule + 1,
            path=self.path,
            preview=self.preview,
            detail=self.detail,
            location=loc,
            source=None if loc is None else loc.source,
            line=None if loc is None else loc.line,
        )

    def moved(self, calls: int, lines: int) -> Finding:
        """The same finding ``calls`` calls and ``lines`` lines further on: how a finding of
        a part of a trace read on its own (numbered from 0) takes its place in the whole.
        Only the numbers change; the message follows, being rendered from them."""
        index = self.call_index
        loc = self.location
        if index is not None and calls:
            index += calls
        if loc is not None and loc.line is not None and lines:
            loc = Location(loc.source, loc.line + lines, loc.offset)
        if index is self.call_index and loc is self.location:
            return self
        return Finding(
            self.check,
            self.kind,
            self.severity,
            None,
            index,
            self.tool,
            loc,
            self.preview,
            rule=self.rule,
            path=self.path,
            detail=self.detail,
            template=self.template,
        )

    def values(self) -> FindingValues:
        """The finding as a tuple of plain values (:meth:`from_values` turns it back): what
        a part of a trace read in another process sends, pickled ten times faster than the
        object."""
        loc = self.location
        return (self.check, self.kind, self.severity, self.call_index, self.tool,
                None if loc is None else (loc.source, loc.line, loc.offset),
                self.preview, self.rule, self.path, self.detail, self.template)  # fmt: skip

    @staticmethod
    def from_values(values: FindingValues) -> Finding:
        """The finding of :meth:`values`."""
        check, kind, severity, index, tool, loc, preview, rule, path, detail, template = values
        location = None if loc is None else Location(*loc)
        return Finding(
            check, kind, severity, None, index, tool, location, preview,
            rule=rule, path=path, detail=detail, template=template,
        )  # fmt: skip

    def _view(self) -> tuple[Any, ...]:
        return (self.check, self.kind, self.severity, self.render(), self.call_index,
                self.tool, self.location, self.preview)  # fmt: skip

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Finding):
            return NotImplemented
        return self._view() == other._view()

    def __hash__(self) -> int:
        loc = self.location
        where = None if loc is None else (loc.source, loc.line, loc.offset)
        view = self._view()
        return hash((*view[:6], where, view[7]))

    def __repr__(self) -> str:
        return (
            f"Finding(check={self.check!r}, kind={self.kind!r}, severity={self.severity!r}, "
            f"message={self.render()!r}, call_index={self.call_index!r}, tool={self.tool!r}, "
            f"location={self.location!r}, preview={self.preview!r})"
        )

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON-safe dict (the findings stream's line)."""
        loc = self.location
        return {
            "check": self.check,
            "kind": self.kind,
            "severity": self.severity,
            "message": self.render(),
            "call_index": self.call_index,
            "tool": self.tool,
            "location": None
            if loc is None
            else {"source": loc.source, "line": loc.line, "offset": loc.offset},
            "preview": self.preview,
        }


(
    _SET_CHECK,
    _SET_KIND,
    _SET_SEVERITY,
    _SET_CALL_INDEX,
    _SET_TOOL,
    _SET_LOCATION,
    _SET_PREVIEW,
    _SET_RULE,
    _SET_PATH,
    _SET_DETAIL,
    _SET_TEMPLATE,
) = (
    getattr(Finding, name).__set__
    for name in (
        "check", "kind", "severity", "call_index", "tool", "location", "preview", "rule",
        "path", "detail", "template",
    )
)  # fmt: skip


_FIELDS = {
    "call": "(None if f.call_index is None else f.call_index + 1)",
    "previous": "f.call_index",
    "tool": "f.tool",
    "kind": "f.kind",
    "rule": "(None if f.rule is None else f.rule + 1)",
    "path": "f.path",
    "preview": "f.preview",
    "detail": "f.detail",
    "location": "f.location",
    "source": "(None if f.location is None else f.location.source)",
    "line": "(None if f.location is None else f.location.line)",
}
"""The expression :meth:`Finding.render` reads each name of a template with (``f``: the
finding), as :meth:`Finding.render`'s :meth:`str.format` call gives it."""
_RENDERERS: dict[str, Callable[[Finding], str] | None] = {}
"""Each template seen, as a function (None: one :meth:`str.format` renders: with a format
spec, a conversion or an unknown name)."""
_UNSEEN: Any = object()


def _renderer(template: str) -> Callable[[Finding], str] | None:
    """``template`` as one f-string over the fields it names, made once (four times quicker
    than :meth:`str.format` with every field; a check makes one finding per failed call).
    The template's texts are the function's constants, never part of its source."""
    if len(_RENDERERS) > 1024:  # user checks' templates: bounded
        _RENDERERS.clear()
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError:
        return None
    texts: dict[str, str] = {}
    body: list[str] = []
    for text, name, spec, conversion in parsed:
        if text:
            texts[f"_t{len(texts)}"] = text
            body.append(f"{{_t{len(texts) - 1}}}")
        if name is None:
            continue
        if spec or conversion or name not in _FIELDS:
            return None
        body.append(f"{{{_FIELDS[name]}}}")
    defaults = "".join(f", {n}={n}" for n in texts)
    namespace: dict[str, Any] = dict(texts)
    exec(f"def render(f{defaults}):\n    return f'{''.join(body)}'\n", namespace)
    return cast("Callable[[Finding], str]", namespace["render"])


class Batch:
    """What crosses a task boundary: the calls read from one chunk of input.

    ``calls`` are new calls, in index order, seen for the first time (their result may still be
    pending). ``done`` are calls whose result is now known, released by the pipeline in index
    order; for formats that carry the result on the call itself, every call is in both lists.

    A batch of the custom format may instead hold a decoded ``block``
    (:class:`~toolscore.columns.Columns`): its calls are then both new and done, and they only
    become ``ToolCall`` objects when ``calls`` or ``done`` is read. The built-in checks read
    :meth:`columns` and :meth:`done_columns`, which never build them.
    """

    __slots__ = (
        "_calls",
        "_columns",
        "_done",
        "_done_columns",
        "block",
        "decoded",
        "error",
        "findings",
    )

    def __init__(
        self,
        calls: list[ToolCall] | None = None,
        done: list[ToolCall] | None = None,
        findings: list[Finding] | None = None,
        error: InputError | None = None,
        *,
        block: Columns | None = None,
    ) -> None:
        self._calls = calls
        self._done = done
        self.findings: list[Finding] = [] if findings is None else findings
        """Findings raised while reading (a malformed line), to forward with the batch."""
        self.error = error
        """A fatal input error met after the calls above were read (truncated or malformed
        JSON). The batch's calls still count; the source stops after this batch."""
        self.block = block
        self.decoded = False
        """The calls were decoded from a trace (their arguments are JSON values); set by the
        readers."""
        self._columns: Columns | None = None
        self._done_columns: Columns | None = None

    @property
    def calls(self) -> list[ToolCall]:
        if self._calls is None:
            self._materialize()
        assert self._calls is not None
        return self._calls

    @calls.setter
    def calls(self, value: list[ToolCall]) -> None:
        self._unblock()
        self._calls = value
        self._columns = None

    @property
    def done(self) -> list[ToolCall]:
        if self._done is None:
            self._materialize()
        assert self._done is not None
        return self._done

    @done.setter
    def done(self, value: list[ToolCall]) -> None:
        self._unblock()
        self._done = value
        self._done_columns = None

    def _materialize(self) -> None:
        """Build the ``calls`` and ``done`` lists (two lists: changing one leaves the other)."""
        if self.block is None:
            calls: list[ToolCall] = []
            done: list[ToolCall] = []
        else:
            calls = self._calls if self._calls is not None else self.block.calls()
            done = list(calls)
        if self._calls is None:
            self._calls = calls
        if self._done is None:
            self._done = done

    def _unblock(self) -> None:
        """A block batch that is changed becomes a batch of ``ToolCall`` lists."""
        if self.block is not None:
            self._materialize()
            self.block = None
            self._columns = self._done_columns = None

    @property
    def n_calls(self) -> int:
        """``len(calls)``, without building the calls of a block."""
        if self._calls is None:
            return self.block.n if self.block is not None else 0
        return len(self._calls)

    @property
    def n_done(self) -> int:
        """``len(done)``, without building the calls of a block."""
        if self._done is None:
            return self.block.n if self.block is not None else 0
        return len(self._done)

    @property
    def empty(self) -> bool:
        """No call, no finding and no error: nothing to hand on."""
        return not (self.n_calls or self.n_done or self.findings or self.error is not None)

    def columns(self) -> Columns:
        """The new calls as columns."""
        if self._columns is None:
            if self.block is not None:
                self._columns = self.block
            elif self._done_columns is not None and self._done is self._calls:
                self._columns = self._done_columns  # one list: one set of columns
            else:
                # start-up of `toolscore --version`: columns (~10 ms) load when used
                from .columns import ListColumns

                self._columns = ListColumns(self.calls, "json" if self.decoded else "any")
        return self._columns

    def done_columns(self) -> Columns:
        """The completed calls as columns (the same object as :meth:`columns` for a block,
        or when ``calls`` and ``done`` are one list)."""
        if self._done_columns is None:
            if self.block is not None:
                self._done_columns = self.block
            elif self._columns is not None and self._done is self._calls:
                self._done_columns = self._columns
            else:
                # start-up of `toolscore --version`: columns (~10 ms) load when used
                from .columns import ListColumns

                self._done_columns = ListColumns(self.done, "json" if self.decoded else "any")
        return self._done_columns

    def __repr__(self) -> str:
        return (
            f"Batch(calls={self.n_calls}, done={self.n_done}, findings={len(self.findings)}, "
            f"error={self.error!r})"
        )
