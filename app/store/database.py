"""`Database`: the SQLite connection under `Store` — opening, migrating, crash recovery, locking,
transactions.

Owns the one connection and how calls are serialised; does not own any query about
conversations or messages (`app.store.store`) or the schema text (`app.store.migrations`).
See `app.store.store` for the thread and crash-safety story.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from app.store.migrations import check_is_hearths, check_version, migrate
from app.store.records import StoreError
from app.system.sqlite_wal import use_wal

# An import adds its conversations hidden (``deleted_at`` < 0) in short transactions and shows
# them at the end; one still hidden after an hour was cut short by a crash.
STALE_IMPORT_S = 3600.0


class Database:
    """The SQLite file at ``path``: one lazily opened connection, a re-entrant lock.

    ``recover_interrupted=False`` leaves ``streaming`` replies alone: use it for a second
    process (the command-line export) that must not touch a running app's live reply.
    Opening writes nothing unless something needs recovery or migration, so it never waits
    for another process's write lock (a long command-line import) without need.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        recover_interrupted: bool = True,
        busy_timeout_s: float = 10.0,
    ) -> None:
        self.path = Path(path)
        self._busy_timeout_s = busy_timeout_s  # how long a write waits for another process
        self._recover_interrupted = recover_interrupted
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._depth = 0  # nesting of `transaction()` blocks
        self._recovered = 0

    # -- connection and transactions ------------------------------------------------------

    def open(self) -> None:
        """Open (create, migrate, recover) now rather than on the first call."""
        with self._lock:
            self._connection()

    @property
    def recovered(self) -> int:
        """How many interrupted replies were marked ``partial`` when the database was opened
        (opens it now if needed): the GUI may say "1 reply was interrupted"."""
        with self._lock:
            self._connection()
            return self._recovered

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=self._busy_timeout_s,
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        try:
            conn.row_factory = sqlite3.Row
            # Both read only: a refused file is left byte for byte as it was.
            check_is_hearths(conn, check_version(conn))
            conn.execute("PRAGMA foreign_keys = ON")
            use_wal(conn, self._busy_timeout_s)
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(conn)
            if self._recover_interrupted:
                self._recovered = self._recover(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        except StoreError:
            conn.close()
            raise
        return conn

    @staticmethod
    def _recover(conn: sqlite3.Connection) -> int:
        """Mark interrupted replies ``partial``; drop imports a crash cut short. Each write only
        after a read finds something to do: a write waits for the write lock, which another
        process (a long command-line import) may hold, and opening must not."""
        stale = -(time.time() - STALE_IMPORT_S)  # staged imports hold -(their start time)
        where = "FROM conversations WHERE deleted_at < 0 AND deleted_at > ?"
        if conn.execute(f"SELECT 1 {where}", (stale,)).fetchone() is not None:
            conn.execute(f"DELETE {where}", (stale,))
        if conn.execute("SELECT 1 FROM messages WHERE status = 'streaming'").fetchone() is None:
            return 0
        update = "UPDATE messages SET status = 'partial' WHERE status = 'streaming'"
        return conn.execute(update).rowcount

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group calls into one all-or-nothing transaction (nested blocks join the outer one)."""
        with self._lock:
            conn = self._connection()
            outermost = self._depth == 0
            if outermost:
                self._execute(conn, "BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
                if outermost:
                    self._execute(conn, "COMMIT")
            except BaseException:
                # Also after a failed COMMIT (e.g. disk full): never leave a transaction open.
                if outermost and conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._depth -= 1

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """The connection under the lock, with SQLite errors turned into `StoreError`."""
        with self._lock:
            conn = self._connection()
            try:
                yield conn
            except sqlite3.Error as exc:
                raise StoreError(f"database error ({self.path}): {exc}") from exc

    def _execute(self, conn: sqlite3.Connection, sql: str) -> None:
        try:
            conn.execute(sql)
        except sqlite3.Error as exc:
            raise StoreError(f"database error ({self.path}): {exc}") from exc
