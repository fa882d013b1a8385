"""Breakdowns of a dataset run (``--group-by``): pass rate, mean score and pass^k per group.

A breakdown is a *dimension*: a field (a record's ``task``, ``source``, ``status`` or
``grade``, or any other field, read from the first line of each trace of a multi-trace JSON
Lines file, such as ``model``), or a named group of a regex over the trace id (one regex with
two named groups gives two dimensions). :class:`GroupBy` parses what was asked for;
:class:`Groups` adds the records up per dimension and value, as a mergeable state beside
the dataset's :class:`~.aggregate.Aggregate` (integer counts and exact score sums, so the
order of merges does not matter). Its memory grows with the number of groups, never with
the traces: past :data:`MAX_GROUPS` values of one dimension, further values are counted
together under :data:`OTHER_GROUPS`. pass^k per group comes from the task spill
(:class:`~.aggregate.TaskSpill`), which keeps each judged trace's group values beside its
task: within a group, a task's trials are that group's traces of it.

Each regex also counts the ids it matched: one that matched none is a usage error once the
run ends (a silent "everything in one group" would hide a typo); so is a ``--task-regex``
that matched no id.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .._exact import ExactAdder
from ..errors import UsageError

__all__ = [
    "MAX_GROUPS",
    "NO_MATCH",
    "NO_VALUE",
    "OTHER_GROUPS",
    "GroupBy",
    "GroupRow",
    "Groups",
    "group_tables",
    "parse_ks",
]

MAX_GROUPS = 10_000
"""Values kept per dimension; past that, further values are counted under
:data:`OTHER_GROUPS`."""
OTHER_GROUPS = "(other groups)"
NO_MATCH = "(no match)"
"""The value of a regex's groups for an id it does not match."""
NO_VALUE = "(none)"
"""The value of a field a trace does not have (or a regex group that took no part)."""
RECORD_FIELDS = ("task", "source", "status", "grade")
"""Fields every record has; any other field is read from a trace's first line."""

_NAME = re.compile(r"[A-Za-z_][\w.-]*")


def parse_ks(text: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """``--k 1,2,4`` as ``(1, 2, 4)`` (sorted, without repeats); ``None`` stays ``None``
    (every k from 1 to the most trials).

    Raises:
        UsageError: not a list of positive integers.
    """
    if text is None:
        return None
    items = text.split(",") if isinstance(text, str) else list(text)
    try:
        ks = sorted({int(item) for item in items if str(item).strip()})
    except ValueError:
        raise UsageError(f"--k: expected positive integers such as 1,2,4, got {text!r}") from None
    if not ks or ks[0] < 1:
        raise UsageError(f"--k: expected positive integers such as 1,2,4, got {text!r}")
    return tuple(ks)


@dataclass(frozen=True)
class _Regex:
    spec: str
    """As given (``--group-by`` or ``--task-regex``)."""
    option: str
    pattern: re.Pattern[str]
    names: tuple[str, ...]
    """Its named groups that are dimensions (none for ``--task-regex``)."""


@dataclass(frozen=True)
class GroupBy:
    """The dimensions asked for (``--group-by``, repeatable), and the regexes whose matches
    are counted (theirs and ``--task-regex``'s). Picklable: it travels to the workers, which
    read :attr:`line_fields`."""

    dims: tuple[str, ...] = ()
    """The dimensions' names, in the order given."""
    fields: tuple[str, ...] = ()
    """The dimensions that are fields."""
    regexes: tuple[_Regex, ...] = ()

    @classmethod
    def parse(cls, specs: Iterable[str] = (), task_regex: str | None = None) -> GroupBy:
        """Each spec is a field name (``model``, ``task``) or a regex with named groups
        (``^(?P<model>[^/]+)/(?P<category>[a-z]+)``).

        Raises:
            UsageError: a regex that does not compile or names no group, or two dimensions
                of one name.
        """
        dims: list[str] = []
        fields: list[str] = []
        regexes: list[_Regex] = []
        for spec in specs:
            if _NAME.fullmatch(spec):
                names: tuple[str, ...] = (spec,)
                fields.append(spec)
            else:
                try:
                    pattern = re.compile(spec)
                except re.error as exc:
                    raise UsageError(f"--group-by {spec!r}: {exc}") from None
                names = tuple(pattern.groupindex)
                if not names:
                    raise UsageError(
                        f"--group-by {spec!r}: neither a field name nor a regex with named "
                        "groups, such as '^(?P<model>[^/]+)/'"
                    )
                regexes.append(_Regex(spec, "--group-by", pattern, names))
            for name in names:
                if name in dims:
                    raise UsageError(f"--group-by: {name!r} is asked for twice")
                dims.append(name)
        if task_regex is not None:
            try:
                regexes.append(_Regex(task_regex, "--task-regex", re.compile(task_regex), ()))
            except re.error as exc:
                raise UsageError(f"--task-regex: {exc}") from None
        return cls(tuple(dims), tuple(fields), tuple(regexes))

    @property
    def line_fields(self) -> tuple[str, ...]:
        """The fields read from a trace's first line (the worker's part)."""
        return tuple(name for name in self.fields if name not in RECORD_FIELDS)

    def __bool__(self) -> bool:
        return bool(self.dims or self.regexes)

    def keys(self, record: Any) -> tuple[tuple[str, ...], tuple[bool, ...]]:
        """The record's value in each dimension, and whether each regex matched its id."""
        values: dict[str, str] = {}
        matched: list[bool] = []
        trace_id = record.trace_id
        for rx in self.regexes:
            m = rx.pattern.search(trace_id) if trace_id else None
            matched.append(m is not None)
            for name in rx.names:
                values[name] = NO_MATCH if m is None else (m.group(name) or NO_VALUE)
        for name in self.fields:
            if name in RECORD_FIELDS:
                got = getattr(record, name)
            else:
                got = record.fields.get(name)
            values[name] = NO_VALUE if got is None or got == "" else str(got)
        return tuple(values[name] for name in self.dims), tuple(matched)

    def read_line(self, data: bytes) -> dict[str, str]:
        """The :attr:`line_fields` of the first line of ``data`` (a trace's lines) that it
        has, as text."""
        end = data.find(b"\n")
        line = data if end < 0 else data[:end]
        try:
            obj = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return {}
        if not isinstance(obj, dict):
            return {}
        out: dict[str, str] = {}
        for name in self.line_fields:
            value = obj.get(name)
            if value is not None and not isinstance(value, (dict, list)):
                out[name] = str(value)
        return out


@dataclass
class _Counts:
    traces: int = 0
    judged: int = 0
    passed: int = 0
    scored: int = 0
    score_sum: ExactAdder = field(default_factory=ExactAdder)

    def merge(self, other: _Counts) -> None:
        self.traces += other.traces
        self.judged += other.judged
        self.passed += other.passed
        self.scored += other.scored
        self.score_sum.merge(other.score_sum)


@dataclass(frozen=True)
class GroupRow:
    """One group's figures (pass^k from the task spill, ``None`` for a k no task reaches)."""

    value: str
    traces: int
    judged: int
    passed: int
    mean: float | None
    pass_k: list[tuple[int, int, float | None, float | None]]
    """``(k, tasks with >= k trials, pass@k, pass^k)``."""

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    def to_json(self) -> dict[str, Any]:
        from .aggregate import pass_k_json  # (aggregate imports this module)

        return {
            "group": self.value,
            "traces": self.traces,
            "judged": self.judged,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "mean_score": self.mean,
            **pass_k_json(self.pass_k),
        }


@dataclass
class Groups:
    """Per dimension and value, the traces, passes and score sum; per regex, the ids it
    matched (``add`` a record, ``merge`` another: exact, in any order)."""

    by: GroupBy
    tables: list[dict[str, _Counts]] = field(default_factory=list)
    matched: list[int] = field(default_factory=list)
    ids: int = 0
    """Records with a trace id (the regexes were tried on these)."""
    example: tuple[tuple[int, int], str] | None = None
    """The first id read (for the message of a regex that matched none)."""

    def __post_init__(self) -> None:
        if not self.tables:
            self.tables = [{} for _ in self.by.dims]
        if not self.matched:
            self.matched = [0] * len(self.by.regexes)

    def add(self, record: Any) -> tuple[str, ...]:
        """Count one record; returns the group it went to in each dimension (its value, or
        :data:`OTHER_GROUPS` past the cap)."""
        values, matched = self.by.keys(record)
        if record.trace_id:
            self.ids += 1
            for i, hit in enumerate(matched):
                self.matched[i] += hit
            example = (record.order, record.trace_id)
            if self.example is None or example < self.example:
                self.example = example
        score, passed = record.score, record.passed
        slots = []
        for table, value in zip(self.tables, values, strict=True):
            counts = table.get(value)
            if counts is None:
                value, counts = self._slot(table, value)
            slots.append(value)
            counts.traces += record.status != "no_trace"
            if score is not None:
                counts.scored += 1
                counts.score_sum.add(score)
            if passed is not None:
                counts.judged += 1
                counts.passed += passed
        return tuple(slots)

    def merge(self, other: Groups) -> None:
        for table, theirs in zip(self.tables, other.tables, strict=True):
            for value, counts in theirs.items():
                mine = table.get(value)
                if mine is None:
                    mine = self._slot(table, value)[1]
                mine.merge(counts)
        self.matched = [a + b for a, b in zip(self.matched, other.matched, strict=True)]
        self.ids += other.ids
        if other.example is not None and (self.example is None or other.example < self.example):
            self.example = other.example

    @staticmethod
    def _slot(table: dict[str, _Counts], value: str) -> tuple[str, _Counts]:
        if value not in table and len(table) >= MAX_GROUPS:
            value = OTHER_GROUPS
        counts = table.get(value)
        if counts is None:
            counts = table[value] = _Counts()
        return value, counts

    @property
    def capped(self) -> bool:
        """Whether a dimension counted values past :data:`MAX_GROUPS` together (merged, a
        tally may then count under ``(other groups)`` what one by one is counted by name)."""
        return any(OTHER_GROUPS in table for table in self.tables)

    def unmatched(self) -> list[str]:
        """The regexes that matched no id (described for the error), when ids were read."""
        if not self.ids:
            return []
        example = "" if self.example is None else f" (the first id: {self.example[1]!r})"
        return [
            f"{rx.option} {rx.spec!r} matches no trace id{example}"
            for rx, n in zip(self.by.regexes, self.matched, strict=True)
            if n == 0
        ]

    def rows(
        self, dim: int, pass_k: dict[str, list[tuple[int, int, float | None, float | None]]]
    ) -> list[GroupRow]:
        """Dimension ``dim``'s groups, failing ones first: lowest pass rate, then lowest
        mean score, then by value (``pass_k``: each value's pass^k rows)."""
        rows = [
            GroupRow(
                value,
                c.traces,
                c.judged,
                c.passed,
                c.score_sum.total().value() / c.scored if c.scored else None,
                pass_k.get(value, []),
            )
            for value, c in self.tables[dim].items()
        ]
        rows.sort(
            key=lambda r: (
                r.pass_rate if r.pass_rate is not None else 2.0,
                r.mean if r.mean is not None else 2.0,
                r.value,
            )
        )
        return rows


def group_tables(
    groups: Groups | None,
    by_group: list[dict[str, Counter[tuple[int, int]]]],
    ks: Sequence[int],
) -> dict[str, list[GroupRow]]:
    """Each dimension's groups (failing ones first) with their pass@k and pass^k for ``ks``
    (``by_group``: the task spill's tasks by (n, c) per dimension and group)."""
    # import cycle: aggregate imports groups
    from .aggregate import overall_pass

    if groups is None:
        return {}
    return {
        dim: groups.rows(
            i, {value: overall_pass(counts, ks) for value, counts in by_group[i].items()}
        )
        for i, dim in enumerate(groups.by.dims)
    }
