"""Gold for a dataset: one for every trace, one per trace id (JSON Lines), or one file each.

* **One gold** (today's gold file, or the calls in Python): every trace is scored against it.
* **Keyed JSON Lines**: each line ``{"trace_id": ..., "expected": [...]}`` (``calls`` is read
  for ``expected``; the id key is ``--trace-key`` or the first of the usual names found). It is
  indexed once into an SQLite file next to the run's other temporary files, so a million
  traces' gold never sits in memory; workers look each trace's gold up there. A gold whose
  entries come to at most :data:`GOLD_IN_MEMORY` bytes is read from the index into each
  worker's memory instead (equal entries, a task's trials', held once), where a lookup costs
  a dictionary's, not an SQL query's.
* **A directory** of gold files, matched to traces by name: the trace id (a multi-trace
  file's id, or a single-trace file's path below TRACES without extensions) against each gold
  file's path below the directory without extensions (``gold/task1.json`` is the gold of
  ``traces/task1.jsonl``). Two options (the GitHub Action's matching, see
  :func:`~.run.evaluate_dataset`): ``gold_by_base_name`` also matches a trace file's base
  name (``gold/c.json`` for ``traces/team/c.jsonl`` when there is no ``gold/team/c.json``),
  and ``default_gold`` is the gold of every trace that the directory has none for.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from ..calls import ToolCall
from ..errors import GoldFileError, RuleFileError, UsageError
from ..gold import Gold, gold_from_dicts, gold_of_json, read_gold_file
from ..hardrules.spec import gold_rule_spec, ruleset_from_json
from .inputs import is_url, list_inputs, open_fs, open_input
from .shape import keyed_gold_key

if TYPE_CHECKING:
    import sqlite3

__all__ = ["GOLD_IN_MEMORY", "GoldSpec", "base_name", "build_gold", "gold_lookup"]

GOLD_IN_MEMORY = 48 << 20
"""A keyed gold whose entries come to at most this many bytes (as indexed: the expected calls'
JSON) is held in each worker's memory; a larger one is looked up in its SQLite index, trace
by trace. The benchmark's 100,000-trace gold is 40 MB, 10 MB once its 4 trials a task share
their entries."""


@dataclass(frozen=True)
class GoldSpec:
    """How workers find a trace's gold (picklable)."""

    kind: str
    """``one``, ``keyed``, ``dir`` or ``none`` (no gold: every trace is checked, unscored)."""
    path: str | None = None
    """``one``: the gold file; ``keyed``: the SQLite index."""
    calls: tuple[Mapping[str, Any], ...] | None = None
    """``one``: the expected calls, when given in Python."""
    files: Mapping[str, str] = field(default_factory=dict)
    """``dir``: gold name -> file."""
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    count: int = 0
    """Gold entries (keyed, dir)."""
    problems: tuple[str, ...] = ()
    """Lines of a keyed gold file that could not be used (duplicates, bad lines): the first
    100 described."""
    problem_count: int = 0
    """All of them."""
    source: str | None = None
    """``keyed``: the gold file itself, which a worker on another machine (where ``path``
    does not exist) indexes for itself; ``one``: the URL ``path`` is a copy of, which such a
    worker reads itself."""
    key: str | None = None
    body_bytes: int = 0
    """``keyed``: the bytes of the gold entries, as indexed."""
    default: str | None = None
    """``dir``: the gold file of a trace that has none in the directory."""
    by_base_name: bool = False
    """``dir``: a single-trace file also matches the gold named after its base name."""
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Identifies this gold in a worker's cache."""


def build_gold(
    gold: str | Sequence[Mapping[str, Any]] | None,
    workdir: str,
    *,
    key: str | None,
    storage_options: Mapping[str, Any] | None = None,
    default: str | None = None,
    by_base_name: bool = False,
    follow_symlinks: bool = False,
    skipped: list[str] | None = None,
) -> GoldSpec:
    """Read what ``gold`` is and prepare it for the workers.

    ``default`` and ``by_base_name`` apply to a directory (see the module's doc); the
    ``default`` file is read here, so a missing or malformed one fails before anything runs.
    A directory's links are taken as :func:`~.inputs.list_inputs` says (``follow_symlinks``,
    ``skipped``).

    Raises:
        GoldFileError: the file is missing or unreadable, or a keyed file has no usable line.
    """
    options = dict(storage_options or {})
    if gold is None:
        return GoldSpec("none")
    if not isinstance(gold, str):
        return GoldSpec("one", calls=tuple(gold))
    local_dir = not is_url(gold) and os.path.isdir(gold)
    if local_dir or (is_url(gold) and _url_is_dir(gold, options)):
        if default is not None:
            read_gold_file(default)
        listed = list_inputs(gold, options, follow_symlinks=follow_symlinks, skipped=skipped)
        files = {item.name: item.url for item in listed}
        return GoldSpec(
            "dir",
            files=files,
            storage_options=options,
            count=len(files),
            default=default,
            by_base_name=by_base_name,
        )
    try:
        with open_input(gold, options) as f:
            head = f.read(1 << 16)
    except FileNotFoundError:
        raise GoldFileError(gold, "Gold standard file not found") from None
    except OSError as exc:
        raise GoldFileError(gold, f"cannot read the gold file: {exc}") from None
    found = keyed_gold_key(head)
    if found is None:
        if is_url(gold):
            local = os.path.join(workdir, "gold.json")
            with open_input(gold, options) as src, open(local, "wb") as dst:
                dst.write(src.read())
            spec = GoldSpec("one", path=local, source=gold, storage_options=options)
        else:
            local, spec = gold, GoldSpec("one", path=gold)
        read_gold_file(local)  # a malformed gold fails before anything runs
        return spec
    if key is not None and key != "auto":
        found = key
    return _index(gold, os.path.join(workdir, "gold.sqlite"), found, options)


def _url_is_dir(url: str, options: dict[str, Any]) -> bool:
    fs, path = open_fs(url, options)
    return bool(fs.isdir(path))


def _index(gold: str, db: str, key: str, options: dict[str, Any]) -> GoldSpec:
    from ._sqlite import scratch  # here, for a keyed gold only (sqlite3: about 1 MB of RSS)

    conn = scratch(db)
    conn.execute("CREATE TABLE gold (id TEXT PRIMARY KEY, body BLOB) WITHOUT ROWID")
    problems: list[str] = []
    unusable = 0
    count = 0
    batch: list[tuple[str, bytes]] = []
    body_bytes = 0

    def flush() -> None:
        nonlocal count, unusable
        before = conn.total_changes
        conn.executemany("INSERT OR IGNORE INTO gold VALUES (?, ?)", batch)
        added = conn.total_changes - before
        unusable += len(batch) - added
        if added != len(batch) and len(problems) < 100:
            problems.append(f"{gold}: {len(batch) - added} duplicate trace id(s); first kept")
        count += added
        batch.clear()

    with open_input(gold, options) as f:
        lineno = 0
        for raw in f:
            lineno += 1
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                unusable += 1
                if len(problems) < 100:
                    problems.append(f"{gold}:{lineno}: malformed JSON: {exc}")
                continue
            calls = obj.get("expected", obj.get("calls")) if isinstance(obj, dict) else None
            trace_id = obj.get(key) if isinstance(obj, dict) else None
            if trace_id is None or not isinstance(calls, list):
                unusable += 1
                if len(problems) < 100:
                    problems.append(
                        f"{gold}:{lineno}: not a gold line ({{{key!r}: ..., 'expected': [...]}})"
                    )
                continue
            if b'"$' in raw:  # operators or alternatives: an unknown one is an input error
                _check_operators(gold, lineno, calls)
            try:  # a trial's own rules, checked here: a bad one is this line's problem
                rules = gold_rule_spec(obj, f"{gold}:{lineno}")
                if rules is not None:
                    ruleset_from_json(rules, f"{gold}:{lineno}")
            except RuleFileError as exc:
                unusable += 1
                if len(problems) < 100:
                    problems.append(str(exc))
                continue
            # msgspec's bytes are their length; orjson's keep a buffer of some 4 KB each,
            # 40 MB for a batch of small gold entries
            body = msgspec.json.encode(calls if rules is None else {"calls": calls, "rules": rules})
            batch.append((str(trace_id), body))
            body_bytes += len(body)
            if len(batch) >= 10_000:
                flush()
    flush()
    conn.commit()
    conn.close()
    if not count:
        raise GoldFileError(gold, f"no gold line with {key!r} and 'expected' (or 'calls')")
    return GoldSpec(
        "keyed",
        path=db,
        count=count,
        problems=tuple(problems),
        problem_count=unusable,
        source=gold,
        key=key,
        storage_options=options,
        body_bytes=body_bytes,
    )


def _check_operators(gold: str, lineno: int, calls: list[Any]) -> None:
    """Raises GoldFileError naming the file and line when a gold line's ``$`` operators or
    alternatives are wrong (an unknown operator, a bad operand)."""
    try:
        gold_from_dicts(calls)
    except UsageError as exc:
        raise GoldFileError(gold, str(exc), line=lineno) from None


class GoldLookup:
    """A worker's view of the gold: ``get(trace_id, name)`` -> the calls, or ``None``."""

    def __init__(self, spec: GoldSpec) -> None:
        self.spec = spec
        self._one: list[ToolCall] | None = None
        self._conn: sqlite3.Connection | None = None
        self._from_dicts = gold_from_dicts
        self._default: list[ToolCall] | None = None
        self._bodies: dict[str, bytes] | None = None
        self._load = read_gold_file
        if spec.kind == "one":
            if spec.calls is not None:
                self._one = gold_from_dicts(list(spec.calls))
            elif spec.path is not None:
                if not os.path.exists(spec.path) and spec.source is not None:
                    # the driver's copy of a gold behind a URL, on another machine: this
                    # worker reads the URL itself
                    self._one = self._load_file(spec.source)
                else:
                    self._one = read_gold_file(spec.path)
        elif spec.kind == "keyed" and spec.path is not None:
            path = spec.path
            if not os.path.exists(path) and spec.source is not None and spec.key is not None:
                # another machine's index: build this worker's own from the gold file
                self._tmp = tempfile.mkdtemp(prefix="toolscore-gold-")
                path = os.path.join(self._tmp, "gold.sqlite")
                _index(spec.source, path, spec.key, dict(spec.storage_options))
            from ._sqlite import connect  # here, for a keyed gold only (sqlite3: about 1 MB)

            self._conn = connect(f"file:{path}?mode=ro", uri=True, cache_kib=None)
            if spec.body_bytes <= GOLD_IN_MEMORY:
                self._bodies = _read_all(self._conn)
                self._conn.close()
                self._conn = None

    @property
    def in_memory(self) -> bool:
        """Whether a keyed gold is held in memory (else looked up in its index)."""
        return self._bodies is not None

    def get(self, trace_id: str | None, name: str | None) -> list[ToolCall] | None:
        """The gold of a trace (by id, else by its file's name); ``None`` when it has none.

        Raises:
            GoldFileError: a matched gold file is unreadable.
        """
        if self._one is not None:
            return self._one
        if self._bodies is not None or self._conn is not None:
            if trace_id is None:
                return None
            if self._bodies is not None:
                body = self._bodies.get(trace_id)
            else:
                row = self._conn.execute(  # type: ignore[union-attr]
                    "SELECT body FROM gold WHERE id = ?", (trace_id,)
                ).fetchone()
                body = None if row is None else row[0]
            if body is None:
                return None
            # the trials of a task share their gold: one list, read once
            return gold_of_json(body, lambda: self._entry(orjson.loads(body), trace_id))
        if self.spec.kind == "dir":
            spec = self.spec
            for candidate in (trace_id, name):
                path = spec.files.get(candidate) if candidate is not None else None
                if path is not None:
                    return self._load_file(path)
            if spec.by_base_name and name is not None and "/" in name:
                path = spec.files.get(base_name(name))
                if path is not None:
                    return self._load_file(path)
            if spec.default is not None:
                if self._default is None:
                    self._default = self._load(spec.default)
                return self._default
        return None

    def _entry(self, data: Any, trace_id: str) -> list[ToolCall]:
        """A keyed gold entry: its calls, or its calls with its own rules."""
        if isinstance(data, list):
            return self._from_dicts(data)
        where = f"{self.spec.source or 'gold'} ({trace_id})"
        return Gold(self._from_dicts(data["calls"]), ruleset_from_json(data["rules"], where))

    def _load_file(self, path: str) -> list[ToolCall]:
        if not is_url(path):
            return self._load(path)

        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            with open_input(path, dict(self.spec.storage_options)) as src:
                tmp.write(src.read())
            tmp.flush()
            calls = self._load(tmp.name)
        return calls


def _read_all(conn: sqlite3.Connection) -> dict[str, bytes]:
    """Every entry of an index, equal entries (a task's trials) sharing one ``bytes``."""
    bodies: dict[str, bytes] = {}
    shared: dict[bytes, bytes] = {}
    for trace_id, body in conn.execute("SELECT id, body FROM gold"):
        bodies[trace_id] = shared.setdefault(body, body)
    return bodies


def base_name(name: str) -> str:
    """A trace name's last component: ``team/c`` -> ``c`` (see ``by_base_name``)."""
    return name.rsplit("/", 1)[-1]


_LOOKUPS: dict[str, GoldLookup] = {}


def gold_lookup(spec: GoldSpec) -> GoldLookup:
    """The process's lookup for ``spec`` (made once per worker process)."""
    lookup = _LOOKUPS.get(spec.token)
    if lookup is None:
        _LOOKUPS.clear()
        lookup = _LOOKUPS[spec.token] = GoldLookup(spec)
    return lookup


def gold_ids(spec: GoldSpec) -> Iterator[str]:
    """Every gold entry's id (keyed) or name (dir), for "gold without a trace"."""
    if spec.kind == "keyed" and spec.path is not None:
        from ._sqlite import connect  # here, for a keyed gold only (sqlite3: about 1 MB)

        conn = connect(f"file:{spec.path}?mode=ro", uri=True)
        try:
            for (trace_id,) in conn.execute("SELECT id FROM gold ORDER BY id"):
                yield trace_id
        finally:
            conn.close()
    elif spec.kind == "dir":
        yield from sorted(spec.files)
