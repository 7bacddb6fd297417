"""The document index's file: its schema, and opening it as one clear error or a ready connection.

Owns ``documents.sqlite3``'s tables (collections, roots, files, chunks and their FTS5 terms),
the settings every connection takes (WAL, foreign keys), the language column's migration call,
and the one line a file SQLite refuses becomes. Does not own what is stored in it
(`app.documents.index`, `app.documents.chunk_rows`) or the ranking queries
(`app.documents.search`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from app.documents import languages
from app.documents.extract import DocumentError
from app.documents.scan import storable
from app.system.sqlite_wal import use_wal

BUSY_TIMEOUT_S = 30.0  # how long an opener or a write waits for another thread or process

SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at REAL NOT NULL,
    embed_model TEXT);
CREATE TABLE IF NOT EXISTS roots (
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL, PRIMARY KEY (collection_id, path));
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL, size INTEGER, mtime REAL, sha256 TEXT,
    status TEXT NOT NULL, error TEXT, indexed_at REAL NOT NULL,
    UNIQUE (collection_id, path));
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL, locator TEXT NOT NULL, text TEXT NOT NULL,
    model TEXT, vector BLOB, language TEXT);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(terms, tokenize='unicode61');
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks
    BEGIN DELETE FROM chunks_fts WHERE rowid = old.id; END;
"""


def open_index(path: Path | None) -> sqlite3.Connection:
    """A connection to the index at ``path`` (None: in memory), its schema in place; a file
    SQLite refuses (not a database, damaged, held by another program) is one `DocumentError`
    line, the file left as it was."""
    if path is not None:  # None: in memory (a chat's attachments, searched per question)
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(":memory:" if path is None else path, timeout=BUSY_TIMEOUT_S)
    conn.row_factory = sqlite3.Row
    try:
        _prepare(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise DocumentError(_open_failure(path, exc)) from exc
    return conn


def _prepare(conn: sqlite3.Connection) -> None:
    use_wal(conn, BUSY_TIMEOUT_S)  # the indexer and search open it at once at start-up
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a power cut may lose the last files
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(SCHEMA)
    languages.migrate(conn)  # an index made before the language column gains it


def _open_failure(path: Path | None, exc: sqlite3.DatabaseError) -> str:
    """One line for an index file SQLite refused; the file itself is left as it was."""
    where = "the in-memory index" if path is None else storable(path)
    if "locked" in str(exc):
        return f"{where} is in use by another program (still locked after {BUSY_TIMEOUT_S:.0f} s)"
    return (
        f"{where} cannot be opened as a document index ({exc}); "
        "move it aside and Hearth starts a new one"
    )
