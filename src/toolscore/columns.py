"""Column views of a batch's calls: what the built-in checks and the JSON report read.

A check that looked at each :class:`~toolscore.calls.ToolCall` one attribute at a time would
spend most of its time in the interpreter. The built-in checks read a batch a column at a time
instead (every tool name, every argument value), which C-level builtins (``map``, ``zip``,
``Counter.update``, ``set.update``) walk for a fraction of the cost, and they ask for one call
(its location, its error text) only when a finding needs it.

There are two kinds of view: :class:`ListColumns` over ``ToolCall`` objects (any format), and
the custom format's decoded blocks (:class:`toolscore.sources.custom.CustomBlock`), whose calls
only become ``ToolCall`` objects when someone asks for them (a user's check, ``keep_calls``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._signature import Canonical, canonical_many
from .failed import DEFAULT_FAILURES, FailureRules, failure_of
from .records import call_json, json_safe, record_bytes, write_joined

if TYPE_CHECKING:
    from .calls import Location, ToolCall

__all__ = ["Columns", "ListColumns", "call_json", "record_bytes", "write_joined"]


class Columns(ABC):
    """The calls of one batch, column by column, in index order.

    Positions (``i``) run from 0 to ``n - 1``; :meth:`index` maps one to the call's index in
    the trace.
    """

    __slots__ = ("_args_of", "_by_tool", "_failed", "_kind", "_sigs", "n")

    def __init__(self, n: int, kind: Canonical) -> None:
        self.n = n
        self._kind: Canonical = kind
        """Where the arguments come from, for their canonical texts (see
        :data:`~toolscore._signature.Canonical`)."""
        self._sigs: list[bytes] | None = None
        self._failed: tuple[FailureRules, list[tuple[int, str]]] | None = None
        self._by_tool: dict[str, list[int]] | None = None
        self._args_of: dict[str, list[Any]] = {}

    @property
    def json_values(self) -> bool:
        """Whether the arguments were decoded from a trace, so hold only JSON values: dicts
        with string keys, lists, strings, numbers, booleans and None (no tuples, no other
        mappings, as Python code may pass)."""
        return self._kind != "any"

    @property
    @abstractmethod
    def tools(self) -> list[str]:
        """Every call's tool name."""

    @property
    @abstractmethod
    def args(self) -> list[Any]:
        """Every call's arguments, as recorded (usually dicts)."""

    @abstractmethod
    def index(self, i: int) -> int:
        """The trace index of the call at position ``i``."""

    @abstractmethod
    def location(self, i: int) -> Location | None:
        """Where the call at position ``i`` was read."""

    @abstractmethod
    def error(self, i: int) -> str | None:
        """The recorded error message of the call at ``i`` (:attr:`ToolCall.error`)."""

    @abstractmethod
    def durations(self) -> list[float]:
        """The durations that count for the latency metrics (numbers only), in order."""

    @abstractmethod
    def costs(self) -> list[tuple[str, float]]:
        """``(tool, cost)`` of the calls whose cost counts (numbers only), in order."""

    @abstractmethod
    def calls(self) -> list[ToolCall]:
        """Every call as a :class:`ToolCall` (a new list)."""

    @abstractmethod
    def records(self) -> list[bytes]:
        """Every call's ``to_dict()`` record as JSON on one line (see :func:`call_json`)."""

    def write_records(self, write: Callable[[bytes | memoryview], object], separator: bytes) -> int:
        """Write every call's record, each followed by ``separator``; returns how many."""
        return write_joined(write, self.records(), separator)

    def result_texts(self) -> list[Any]:
        """Every call's result as JSON text (bytes-like; ``null`` where there is none): what
        the data-flow rules scan for credentials. Built on demand: no check but those reads
        it."""
        return [
            b"null" if c.result is None else record_bytes(json_safe(c.result)) for c in self.calls()
        ]

    def sigs(self) -> list[bytes]:
        """Every call's canonical arguments (:func:`~toolscore._signature.canonical_args`),
        computed once and shared by the checks that need them."""
        if self._sigs is None:
            self._sigs = canonical_many(self.args, self._kind)
        return self._sigs

    def by_tool(self) -> dict[str, list[int]]:
        """Each tool's call positions, in order, the tools in order of their first call
        (computed once and shared: the policy, expected-calls and hard-rules checks each
        read a batch a tool at a time). The lists are shared too: do not change them."""
        if self._by_tool is None:
            groups: defaultdict[str, list[int]] = defaultdict(list)
            for i, tool in enumerate(self.tools):  # the fastest grouping in CPython 3.11
                groups[tool].append(i)
            self._by_tool = dict(groups)
        return self._by_tool

    def args_of(self, tool: str) -> list[Any]:
        """The arguments of ``tool``'s calls, in the order of :meth:`by_tool`'s positions
        (computed once a tool and shared: the policy, expected-calls and hard-rules checks
        each read them). The list is shared: do not change it."""
        column = self._args_of.get(tool)
        if column is None:
            args = self.args
            column = self._args_of[tool] = [args[i] for i in self.by_tool().get(tool, ())]
        return column

    def failures(self, rules: FailureRules = DEFAULT_FAILURES) -> list[tuple[int, str]]:
        """The calls that failed, in order: ``(position, the rule that says so)`` (see
        :mod:`toolscore.failed`; computed once for the same rules)."""
        found = self._failed
        if found is None or found[0] is not rules:
            found = self._failed = (rules, self._find_failures(rules))
        return found[1]

    def failed(self, rules: FailureRules = DEFAULT_FAILURES) -> list[int]:
        """The positions of the calls that failed (:meth:`failures`), in order."""
        return [i for i, _ in self.failures(rules)]

    def judged(self) -> list[int]:
        """The positions of the calls that failed by the rules they were last judged by (the
        run's: the errors check judges a batch before the call sinks and the kept calls see
        it), else by the default rules: what a call's record says in ``is_error``."""
        found = self._failed
        return [i for i, _ in (found[1] if found is not None else self.failures())]

    @abstractmethod
    def _find_failures(self, rules: FailureRules) -> list[tuple[int, str]]:
        """:meth:`failures`, computed."""


class ListColumns(Columns):
    """Columns over :class:`ToolCall` objects.

    Args:
        calls: the calls, in index order.
        kind: where their arguments come from (see
            :data:`~toolscore._signature.Canonical`): a trace's decoder (``json``) or Python
            code (``any``).
    """

    __slots__ = ("_args", "_calls", "_tools")

    def __init__(self, calls: list[ToolCall], kind: Canonical = "any") -> None:
        super().__init__(len(calls), kind)
        self._calls = calls
        self._tools: list[str] | None = None
        self._args: list[Any] | None = None

    @property
    def tools(self) -> list[str]:
        if self._tools is None:
            self._tools = [c.tool for c in self._calls]
        return self._tools

    @property
    def args(self) -> list[Any]:
        if self._args is None:
            self._args = [c.args for c in self._calls]
        return self._args

    def index(self, i: int) -> int:
        return self._calls[i].index

    def location(self, i: int) -> Location | None:
        return self._calls[i].location

    def _find_failures(self, rules: FailureRules) -> list[tuple[int, str]]:
        if not rules.reads_results:  # only the flags: a call without metadata succeeded
            calls = [(i, c) for i, c in enumerate(self._calls) if c.metadata]
        else:
            calls = list(enumerate(self._calls))
        return [(i, why) for i, c in calls if (why := failure_of(c, rules)) is not None]

    def error(self, i: int) -> str | None:
        return self._calls[i].error

    def durations(self) -> list[float]:
        return [d for c in self._calls if (d := c.duration) is not None and _is_number(d)]

    def costs(self) -> list[tuple[str, float]]:
        return [
            (c.tool, cost) for c in self._calls if (cost := c.cost) is not None and _is_number(cost)
        ]

    def calls(self) -> list[ToolCall]:
        return list(self._calls)

    def records(self) -> list[bytes]:
        failed = set(self.judged())
        return [call_json(c, i in failed) for i, c in enumerate(self._calls)]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
