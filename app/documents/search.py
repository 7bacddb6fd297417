"""Hybrid search over the document index's tables: keyword, dense and fused rankings.

Owns the read side of ``documents.sqlite3``: FTS5 bm25 over bigram terms, a numpy brute-force
cosine search over float16 vector BLOBs (with a per-collection-set matrix cache keyed by
SQLite's ``data_version``), reciprocal rank fusion, and turning chunk ids into `Hit` rows that
carry the fused score and what it came from (the chunk's bm25 and cosine), marking files
deleted since indexing as missing. Does not own the schema, collections or
indexing (`app.documents.index`), nor the term and fusion rules (`app.documents.ranking`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from app.documents import ranking
from app.documents.extract import DocumentError

if TYPE_CHECKING:
    from app.documents.index import Embedder

SearchMode = Literal["hybrid", "keyword", "dense"]
CANDIDATES = 50  # per ranking, before fusion

# collection ids -> (data_version, float32 matrix, chunk ids); emptied whenever the index writes
VectorCache = dict[tuple[int, ...], tuple[int, np.ndarray, list[int]]]


@dataclass(frozen=True)
class Hit:
    """One chunk found. ``score`` is the fused rank score, sum(1 / (60 + rank)) over the
    rankings that found it: 1/61 = 0.0164 for first in one, 0.0328 for first in both, so it
    orders hits but says little alone; ``bm25`` (FTS5's, higher is better) and ``cosine``
    (to the query's embedding) say why, None where that ranking did not find the chunk."""

    file: str
    locator: str
    text: str
    score: float
    chunk_id: int
    bm25: float | None = None
    cosine: float | None = None


def search_collections(
    conn: sqlite3.Connection,
    cache: VectorCache,
    embedder: Embedder | None,
    cids: tuple[int, ...],
    query: str,
    top_k: int,
    mode: SearchMode,
) -> list[Hit]:
    """The ``top_k`` best chunks of the collections ``cids`` for ``query``."""
    if not cids or not query.strip() or top_k <= 0:
        return []
    bm25: dict[int, float] = {}
    cosine: dict[int, float] = {}
    rankings: list[list[int]] = []
    if mode in ("hybrid", "keyword"):
        bm25 = dict(keyword_ranking(conn, cids, query, CANDIDATES))
        rankings.append(list(bm25))
    if mode in ("hybrid", "dense") and embedder is not None:
        cosine = dict(dense_ranking(conn, cache, embedder, cids, query, CANDIDATES))
        rankings.append(list(cosine))
    elif mode == "dense":
        raise DocumentError("dense search needs an embedding model")
    fused = ranking.fuse(rankings) if len(rankings) > 1 else _as_scored(rankings[0])
    return hits_of(conn, fused, top_k, bm25, cosine)


def keyword_ranking(
    conn: sqlite3.Connection, cids: tuple[int, ...], query: str, limit: int
) -> list[tuple[int, float]]:
    """Chunk ids and bm25 scores (higher is better), best first."""
    expression = ranking.match_expression(query)
    if expression is None:
        return []
    marks = ",".join("?" * len(cids))
    rows = conn.execute(
        "SELECT k.id, chunks_fts.rank FROM chunks_fts JOIN chunks k ON k.id = chunks_fts.rowid"
        " JOIN files f ON f.id = k.file_id"
        f" WHERE chunks_fts MATCH ? AND f.collection_id IN ({marks})"
        " ORDER BY chunks_fts.rank LIMIT ?",
        (expression, *cids, limit),
    ).fetchall()
    return [(int(r[0]), -float(r[1])) for r in rows]  # FTS5's rank is bm25 negated


def dense_ranking(
    conn: sqlite3.Connection,
    cache: VectorCache,
    embedder: Embedder,
    cids: tuple[int, ...],
    query: str,
    limit: int,
) -> list[tuple[int, float]]:
    """Chunk ids and cosine similarities to the query, best first."""
    ids, matrix = _vector_matrix(conn, cache, embedder.name, cids)
    vector = embedder.embed([query], query=True)[0]
    return [(ids[i], score) for i, score in ranking.dense_top_k(matrix, vector, limit)]


def _vector_matrix(
    conn: sqlite3.Connection, cache: VectorCache, model: str, cids: tuple[int, ...]
) -> tuple[list[int], np.ndarray]:
    version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    cached = cache.get(cids)
    if cached is not None and cached[0] == version:
        return cached[2], cached[1]
    marks = ",".join("?" * len(cids))
    rows = conn.execute(
        "SELECT k.id, k.vector FROM chunks k JOIN files f ON f.id = k.file_id"
        f" WHERE f.collection_id IN ({marks}) AND k.model = ?",
        (*cids, model),
    ).fetchall()
    ids = [int(r[0]) for r in rows]
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float16)
    matrix = (
        matrix.reshape(len(rows), -1).astype(np.float32) if rows else np.zeros((0, 1), np.float32)
    )
    cache[cids] = (version, matrix, ids)
    return ids, matrix


def hits_of(
    conn: sqlite3.Connection,
    scored: list[tuple[int, float]],
    top_k: int,
    bm25: dict[int, float] | None = None,
    cosine: dict[int, float] | None = None,
) -> list[Hit]:
    """`Hit` rows for scored chunk ids, best first, with each chunk's bm25 and cosine."""
    bm25, cosine = bm25 or {}, cosine or {}
    hits: list[Hit] = []
    for chunk_id, score in scored:
        row = conn.execute(
            "SELECT k.locator, k.text, f.path, f.id, f.sha256 FROM chunks k"
            " JOIN files f ON f.id = k.file_id WHERE k.id = ?",
            (chunk_id,),
        ).fetchone()
        if row is None:
            continue
        if row["sha256"] is not None and not Path(row["path"]).exists():
            _mark_missing(conn, int(row["id"]))
            continue
        hits.append(
            Hit(
                row["path"],
                row["locator"],
                row["text"],
                score,
                chunk_id,
                bm25.get(chunk_id),
                cosine.get(chunk_id),
            )
        )
        if len(hits) == top_k:
            break
    return hits


def _mark_missing(conn: sqlite3.Connection, fid: int) -> None:
    with conn:
        conn.execute(
            "UPDATE files SET status = 'missing', error = ? WHERE id = ?",
            ("the file is gone (moved or deleted); rescan to drop it", fid),
        )


def _as_scored(ids: list[int]) -> list[tuple[int, float]]:
    return [(i, 1.0 / (ranking.RRF_K + rank)) for rank, i in enumerate(ids, start=1)]


def passage_context(conn: sqlite3.Connection, chunk_id: int, chars: int) -> tuple[str, str]:
    """The text just before and after chunk ``chunk_id`` in its file (up to ``chars`` each way,
    from its neighbouring chunks), for showing a passage in context."""
    row = conn.execute("SELECT file_id, ordinal FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    if row is None:
        return "", ""
    ordinal = int(row["ordinal"])
    near = conn.execute(
        "SELECT ordinal, text FROM chunks WHERE file_id = ? AND ordinal IN (?, ?)",
        (row["file_id"], ordinal - 1, ordinal + 1),
    ).fetchall()
    texts = {int(r["ordinal"]): str(r["text"]) for r in near}
    before, after = texts.get(ordinal - 1, ""), texts.get(ordinal + 1, "")
    return (before[-chars:] + "\n\n" if before else ""), ("\n\n" + after[:chars] if after else "")
