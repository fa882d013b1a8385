"""The baseline file: written for diffs (keys sorted, one trace a line; the layout is in
:mod:`toolscore.baseline`), and read back streamed, one entry at a time."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ._baseline_summary import TraceSummary, aggregate, baseline_name
from .errors import InputError
from .outputs import write_report

BASELINE_FORMAT = "toolscore-baseline"
BASELINE_VERSION = 1
MAX_BASELINE_DEPTH = 8
"""Nesting a baseline file may have: its entries are four deep (the file, ``traces``, a
trace, its ``findings``); a deeper file is refused before anything of it is built."""


def _line(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def baseline_lines(
    aggregate_data: Mapping[str, Any], entries: Iterable[tuple[str, TraceSummary]]
) -> Iterator[str]:
    """The baseline file's lines (each with its newline) for an aggregate and ``(trace_id,
    summary)`` entries **sorted by trace id**: the layout of the module docstring, produced
    one trace at a time (a dataset's baseline is written without holding its traces)."""
    yield "{\n"
    yield f'"aggregate": {_line(dict(aggregate_data))},\n'
    yield f'"format": {_line(BASELINE_FORMAT)},\n'
    previous: str | None = None
    for trace_id, summary in entries:
        if previous is None:
            yield '"traces": {\n'
        else:
            yield previous + ",\n"
        previous = f"{_line(baseline_name(str(trace_id)))}: {_line(summary.to_json())}"
    if previous is None:
        yield '"traces": {},\n'
    else:
        yield previous + "\n},\n"
    yield f'"version": {BASELINE_VERSION}\n'
    yield "}\n"


def dumps_baseline(summaries: Mapping[str, TraceSummary]) -> str:
    """The baseline file's text for ``trace_id -> summary``: sorted keys, one trace a line."""
    return "".join(baseline_lines(aggregate(summaries), sorted(summaries.items())))


def write_baseline(path: str | os.PathLike[str], summaries: Mapping[str, TraceSummary]) -> None:
    """Write the baseline of ``trace_id -> summary`` to ``path``, as every report is written
    (:func:`toolscore.outputs.write_report`: atomically, through a device or FIFO).

    Raises:
        OSError: the file cannot be written (naming ``path``).
    """
    named = {baseline_name(trace_id): summary for trace_id, summary in summaries.items()}
    write_baseline_entries(path, aggregate(named), sorted(named.items()))


def write_baseline_entries(
    path: str | os.PathLike[str],
    aggregate_data: Mapping[str, Any],
    entries: Iterable[tuple[str, TraceSummary]],
) -> None:
    """Write a baseline from its aggregate and ``(trace_id, summary)`` entries sorted by id
    (by :func:`~toolscore.baseline.baseline_name` of the id, which is what is written),
    streamed (see :func:`baseline_lines`), as :func:`write_baseline` writes it.

    Raises:
        OSError: the file cannot be written (naming ``path``).
    """
    write_report(path, (line.encode("utf-8") for line in baseline_lines(aggregate_data, entries)))


@dataclass(frozen=True, slots=True)
class Baseline:
    """A baseline file as read: the per-trace summaries (its aggregate is recomputed)."""

    traces: dict[str, TraceSummary]
    path: str = "<baseline>"


def load_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline file written by :func:`write_baseline` (for a large one, stream its
    entries with :func:`iter_baseline`).

    Raises:
        InputError: the file is missing, not JSON, or not a toolscore baseline (of this
            version); the message names the file and the entry.
    """
    name = os.fspath(path)
    return Baseline(dict(iter_baseline(name)), name)


def iter_baseline(path: str | os.PathLike[str]) -> Iterator[tuple[str, TraceSummary]]:
    """The ``(trace_id, summary)`` entries of a baseline file, streamed (ijson): memory is
    one entry at a time, whatever the number of traces. The file is checked (JSON, format,
    version) before this returns; an entry that is not a summary raises as it is reached.

    Raises:
        InputError: as :func:`load_baseline`.
    """
    name = os.fspath(path)
    _check_header(name)
    return _entries(name)


def _open_baseline(name: str) -> Any:
    try:
        return open(name, "rb")
    except FileNotFoundError:
        raise InputError(name, "baseline file not found") from None
    except OSError as exc:
        raise InputError(name, f"cannot read the baseline: {exc.strerror}") from None


def _json_error(name: str, exc: Exception) -> InputError:
    if isinstance(exc, UnicodeDecodeError):
        return InputError(name, "invalid UTF-8", offset=exc.start)
    return InputError(name, f"invalid JSON: {exc}")


def _check_header(name: str) -> None:
    """The top level of the file: an object with the format, version and traces, nested no
    deeper than :data:`MAX_BASELINE_DEPTH` (checked on the parser's events before any entry
    is built: a file nested 100,000 deep is an input error, not gigabytes of prefixes)."""
    import ijson  # ijson costs ~20 ms (decimal, inspect): loaded only when a baseline is read

    found: dict[str, Any] = {}
    depth = 0
    key: Any = None  # the top-level key being read
    with _open_baseline(name) as f:
        try:
            for event, value in ijson.basic_parse(f, use_float=True):
                if event == "start_map" or event == "start_array":
                    if depth == 0 and event != "start_map":
                        break
                    depth += 1
                    if depth > MAX_BASELINE_DEPTH:
                        raise InputError(
                            name,
                            f"arrays and objects nested deeper than {MAX_BASELINE_DEPTH} "
                            f"levels (in {key!r}): not a toolscore baseline",
                        )
                    if depth == 2 and key == "traces":
                        found["traces"] = event
                elif event == "end_map" or event == "end_array":
                    depth -= 1
                elif depth == 1:
                    if event == "map_key":
                        key = value
                    elif key in ("format", "version"):
                        found[key] = value
                    elif key == "traces":
                        found["traces"] = event
                elif depth == 0:
                    break  # a scalar document
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise _json_error(name, exc) from None
        except OSError as exc:
            raise InputError(name, f"cannot read the baseline: {exc.strerror}") from None
    if found.get("format") != BASELINE_FORMAT:
        raise InputError(name, f'not a toolscore baseline (no "format": "{BASELINE_FORMAT}")')
    if found.get("version") != BASELINE_VERSION:
        raise InputError(
            name, f"baseline version {found.get('version')!r}; this toolscore reads version 1"
        )
    if found.get("traces") != "start_map":
        raise InputError(name, '"traces" must be an object')


def _entries(name: str) -> Iterator[tuple[str, TraceSummary]]:
    import ijson  # ijson costs ~20 ms (decimal, inspect): loaded only when a baseline is read

    with _open_baseline(name) as f:
        try:
            for trace_id, entry in ijson.kvitems(f, "traces", use_float=True):
                try:
                    stored = baseline_name(trace_id)  # a baseline written before ids were
                    yield stored, TraceSummary.from_json(entry, f"trace {stored!r}")  # redacted
                except ValueError as exc:
                    raise InputError(name, str(exc)) from None
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise _json_error(name, exc) from None
