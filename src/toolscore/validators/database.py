"""The ``sql_rows`` side-effect validator: did a query or statement touch the rows it should?

Toolscore 1.10's ``toolscore.validators.database``. The row count is read from the call's
result (an int, a list of rows, or a dict's ``rows_affected``, ``rowcount``, ``row_count``,
``count`` or ``rows``) or its metadata (``rows_affected``, ``rowcount``, ``row_count``). New
here: a gold value ``{"database": "app.db", "query": "SELECT ..."}`` runs the query on that
SQLite file (opened read-only) and counts the rows it returns, so a side effect is checked in
the database itself rather than in what the agent reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..calls import ToolCall

__all__ = ["SQLValidator"]

_COUNT_KEYS = ("rows_affected", "rowcount", "row_count")


def _number(value: Any) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _rows(call: ToolCall) -> tuple[int | None, list[Any] | None]:
    """``(row count, rows)`` as the call recorded them."""
    result = call.result
    if isinstance(result, int):
        return result, None
    if isinstance(result, list):
        return len(result), result
    if isinstance(result, Mapping):
        for key in (*_COUNT_KEYS, "count"):
            if key in result:
                return _number(result[key]), None
        rows = result.get("rows")
        if isinstance(rows, list):
            return len(rows), rows
        if isinstance(rows, int):
            return rows, None
    md = call.metadata or {}
    for key in _COUNT_KEYS:
        if key in md:
            return _number(md[key]), None
    return None, None


def query_rows(database: str, query: str) -> list[tuple[Any, ...]]:
    """The rows ``query`` returns from the SQLite file ``database``, opened read-only.

    A gold file is input (a pull request may bring one), so the query may only read: an
    authorizer refuses anything but reading the database's own tables and calling functions
    (no ``ATTACH`` of another file, no pragma, no write), and the query is one statement.

    Raises:
        sqlite3.DatabaseError: the query is refused or fails (a "Validator error" detail).
    """
    import sqlite3  # function-local: ``toolscore eval`` starts without it unless a query runs

    allowed = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}

    def authorize(action: int, *_: Any) -> int:
        return sqlite3.SQLITE_OK if action in allowed else sqlite3.SQLITE_DENY

    uri = Path(database).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        conn.set_authorizer(authorize)
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def _in_bounds(count: int, bounds: Mapping[str, Any]) -> bool:
    low, high = bounds.get("min"), bounds.get("max")
    return (low is None or count >= low) and (high is None or count <= high)


class SQLValidator:
    """Checks the rows a call touched against a gold call's ``sql_rows`` value.

    Args:
        where: every returned row must hold these column values.
        contains_row: some returned row must hold these column values.
    """

    def __init__(
        self, where: dict[str, Any] | None = None, contains_row: dict[str, Any] | None = None
    ) -> None:
        self.where = where
        self.contains_row = contains_row

    def validate(self, call: ToolCall, expected: Any) -> bool:
        """``expected`` ``True``: at least one row; an int: exactly that many;
        ``{"min", "max"}``: a range; ``{"database", "query", ["min", "max"]}``: the query's
        rows in that SQLite file (at least one without bounds).

        Raises:
            sqlite3.Error: the database cannot be opened or the query fails.
        """
        if isinstance(expected, Mapping) and "query" in expected:
            found = query_rows(str(expected.get("database", "")), str(expected["query"]))
            bounds = {k: expected[k] for k in ("min", "max") if k in expected}
            return _in_bounds(len(found), bounds) if bounds else bool(found)
        count, rows = _rows(call)
        if count is None:
            return False
        if self.where is not None or self.contains_row is not None:
            if rows is None:
                return False
            dict_rows = [r for r in rows if isinstance(r, Mapping)]
            if self.where is not None and not all(
                len(dict_rows) == len(rows) and all(r.get(k) == v for k, v in self.where.items())
                for r in dict_rows
            ):
                return False
            if self.contains_row is not None and not any(
                all(r.get(k) == v for k, v in self.contains_row.items()) for r in dict_rows
            ):
                return False
        if expected is True:
            return count > 0
        if isinstance(expected, int):
            return count == expected
        if isinstance(expected, Mapping):
            return _in_bounds(count, expected)
        return False
