"""The sql_rows validator's query reads the named SQLite file and nothing else."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from toolscore.validators.database import query_rows


@pytest.fixture
def database(tmp_path: Path) -> str:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE orders (id INTEGER, status TEXT)")
    conn.executemany("INSERT INTO orders VALUES (?, ?)", [(1, "paid"), (2, "open")])
    conn.commit()
    conn.close()
    return str(path)


def test_a_query_reads_rows(database: str) -> None:
    assert query_rows(database, "SELECT id FROM orders WHERE status = 'paid'") == [(1,)]


@pytest.mark.parametrize(
    "query",
    [
        "ATTACH DATABASE 'other.db' AS other",
        "PRAGMA table_info(orders)",
        "DELETE FROM orders",
        "INSERT INTO orders VALUES (3, 'x')",
        "CREATE TABLE x (y)",
    ],
)
def test_a_query_that_would_do_more_than_read_is_refused(database: str, query: str) -> None:
    with pytest.raises(sqlite3.DatabaseError):
        query_rows(database, query)
    assert query_rows(database, "SELECT count(*) FROM orders") == [(2,)]


def test_one_statement_only(database: str) -> None:
    with pytest.raises(sqlite3.Error):
        query_rows(database, "SELECT 1; DELETE FROM orders")
