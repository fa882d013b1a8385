"""The dataset run's SQLite files are opened with a small page cache (the driver's peak RSS at
a million traces), except a worker's lookups of a large gold (SQLite's default)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from toolscore.dataset._sqlite import CACHE_KIB, connect, scratch


def test_connections_take_the_small_page_cache_unless_asked_otherwise(tmp_path: Path) -> None:
    path = str(tmp_path / "x.sqlite")
    small = connect(path)
    small.execute("CREATE TABLE t (id TEXT PRIMARY KEY) WITHOUT ROWID")
    small.executemany("INSERT INTO t VALUES (?)", [(f"id{i}",) for i in range(1000)])
    small.commit()
    assert small.execute("PRAGMA cache_size").fetchone()[0] == -CACHE_KIB
    default = sqlite3.connect(path).execute("PRAGMA cache_size").fetchone()[0]
    kept = connect(f"file:{path}?mode=ro", uri=True, cache_kib=None)
    assert kept.execute("PRAGMA cache_size").fetchone()[0] == default != -CACHE_KIB
    assert kept.execute("SELECT count(*) FROM t").fetchone()[0] == 1000
    small.close()
    kept.close()


def test_a_working_file_has_no_journal_and_no_sync(tmp_path: Path) -> None:
    conn = scratch(str(tmp_path / "w.sqlite"))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "off"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 0
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == -CACHE_KIB
    conn.close()
