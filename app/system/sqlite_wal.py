"""Switching a SQLite file to write-ahead logging when several openers may race.

Owns one thing: `use_wal`, shared by the chat store and the document index, which both open
their files from more than one thread or process at start-up. It does not open or configure
connections otherwise.
"""

from __future__ import annotations

import sqlite3
import time

RETRY_S = 0.02  # between attempts: the other opener's switch takes a few milliseconds


def use_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Put ``conn``'s file in WAL mode. The switch needs the file to itself and SQLite answers
    "database is locked" at once instead of calling the busy handler, so when first openers
    race it is retried for up to ``timeout_s``; usually another opener has switched it by
    then. An in-memory database answers "memory" and stays so: one attempt, as for any file."""
    deadline = time.monotonic() + timeout_s
    while conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(RETRY_S)
