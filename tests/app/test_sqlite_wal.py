"""The WAL switch shared by the chat store and the document index, raced by real threads on
real SQLite files (CI once caught four openers of an old document index failing with
"database is locked": SQLite does not wait on a busy file for a journal-mode switch)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from app.system.sqlite_wal import use_wal

OPENERS = 8
ROUNDS = 60  # a plain PRAGMA failed in 3-6 of 100 rounds of 8 openers on this machine


def _rollback_file(path: Path) -> None:
    """A file in SQLite's default rollback-journal mode, as an index from an old Hearth is."""
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
    conn.close()


def _race(path: Path) -> list[BaseException]:
    start = threading.Barrier(OPENERS)
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        conn = sqlite3.connect(path, timeout=5)
        try:
            use_wal(conn, 5.0)
        except BaseException as exc:  # collected for the assertion in the test
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=open_it) for _ in range(OPENERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_openers_racing_to_switch_a_file_to_wal_all_succeed(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        path = tmp_path / f"r{round_}.sqlite3"
        _rollback_file(path)
        assert _race(path) == []
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


def test_an_in_memory_database_stays_in_memory_mode() -> None:
    conn = sqlite3.connect(":memory:")
    use_wal(conn, 0.1)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "memory"
    conn.close()


def test_a_file_held_by_another_writer_past_the_timeout_raises(tmp_path: Path) -> None:
    path = tmp_path / "held.sqlite3"
    _rollback_file(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    conn = sqlite3.connect(path, timeout=0.05)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            use_wal(conn, 0.1)
    finally:
        conn.close()
        holder.execute("ROLLBACK")
        holder.close()
