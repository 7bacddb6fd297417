"""Writing one file's rows into the document index: its `files` row, its chunks with their
keyword terms, languages and embedding vectors, and dropping files that vanished.

Owns the row writes `DocumentIndex` makes while it adds or rescans, and the `Embedder`
protocol the vectors come from. Does not own deciding which files changed or why one is
skipped (`app.documents.index`), the schema (`app.documents.index_file`), chunking
(`app.documents.chunking`) or the ranking queries (`app.documents.search`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from app.documents import languages, ranking
from app.documents.chunking import Chunk, TokenCounter, chunk_document
from app.documents.extract import Document
from app.documents.records import IndexReport

EMBED_BATCH = 16


class Embedder(Protocol):
    """A sentence embedding model: rows are float32 and L2-normalised."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray: ...


def store_file(
    conn: sqlite3.Connection,
    cid: int,
    path: str,
    size: int | None,
    mtime: float | None,
    digest: str | None,
    error: str | None,
    status: str = "failed",
) -> int:
    """Insert or replace the row of ``path`` (its old chunks dropped); ``status`` is what
    a file with an ``error`` is marked ("skipped" or "failed"), else "ok". Its id."""
    with conn:
        conn.execute(
            "DELETE FROM chunks WHERE file_id IN"
            " (SELECT id FROM files WHERE collection_id = ? AND path = ?)",
            (cid, path),
        )
        conn.execute(
            "INSERT INTO files(collection_id, path, size, mtime, sha256, status, error,"
            " indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(collection_id, path) DO UPDATE SET size = excluded.size,"
            " mtime = excluded.mtime, sha256 = excluded.sha256, status = excluded.status,"
            " error = excluded.error, indexed_at = excluded.indexed_at",
            (cid, path, size, mtime, digest, "ok" if error is None else status, error, time.time()),
        )
    row = conn.execute(
        "SELECT id FROM files WHERE collection_id = ? AND path = ?", (cid, path)
    ).fetchone()
    return int(row["id"])


def store_chunks(
    conn: sqlite3.Connection,
    fid: int,
    document: Document,
    embedder: Embedder | None,
    max_tokens: int,
    count_tokens: TokenCounter | None,
) -> int:
    """Chunk ``document`` into file ``fid``'s rows (terms, language, vector); how many."""
    chunks = chunk_document(document, max_tokens, count_tokens)
    vectors = _embed_chunks(chunks, embedder)
    model = embedder.name if embedder is not None else None
    with conn:
        for chunk, vector in zip(chunks, vectors, strict=True):
            cur = conn.execute(
                "INSERT INTO chunks(file_id, ordinal, locator, text, model, vector, language)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    fid,
                    chunk.ordinal,
                    chunk.locator,
                    chunk.text,
                    model if vector is not None else None,
                    vector,
                    languages.chunk_language(chunk.text),
                ),
            )
            conn.execute(
                "INSERT INTO chunks_fts(rowid, terms) VALUES (?, ?)",
                (cur.lastrowid, ranking.index_terms(chunk.locator + "\n" + chunk.text)),
            )
    return len(chunks)


def _embed_chunks(chunks: list[Chunk], embedder: Embedder | None) -> list[bytes | None]:
    if embedder is None:
        return [None] * len(chunks)
    out: list[bytes | None] = []
    for start in range(0, len(chunks), EMBED_BATCH):
        batch = chunks[start : start + EMBED_BATCH]
        texts = [f"{c.locator}\n{c.text}" if c.locator else c.text for c in batch]
        matrix = embedder.embed(texts, query=False).astype(np.float16)
        out += [row.tobytes() for row in matrix]
    return out


def drop_vanished(
    conn: sqlite3.Connection, present: set[str], known: dict[str, sqlite3.Row], report: IndexReport
) -> None:
    """Drop the rows of ``known`` files no longer ``present`` on disk, counted in ``report``."""
    gone = [row["id"] for path, row in known.items() if path not in present]
    with conn:
        for fid in gone:
            conn.execute("DELETE FROM chunks WHERE file_id = ?", (fid,))
            conn.execute("DELETE FROM files WHERE id = ?", (fid,))
    report.removed += len(gone)
