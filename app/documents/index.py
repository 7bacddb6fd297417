"""The document index: one SQLite file (WAL) of collections, files, chunks, keywords and vectors.

Owns collections and adding and rescanning folders in ``documents.sqlite3`` (its own file,
beside the conversation database, so a large index never slows or bloats the chats): which
files changed, which are skipped and why, each file's read and extraction. The schema and
opening live in `app.documents.index_file`, the row writes (chunks, keyword terms, float16
vector BLOBs) in `app.documents.chunk_rows`. One object per thread
(sqlite3's rule); `DocumentIndex.search` hands its connection and vector cache to
`app.documents.search`, which owns the ranking queries. Does not own extraction
(`app.documents.extract`), chunking (`app.documents.chunking`) or running the embedding model
(an `Embedder` is passed in; the app gets one from `app.bridge`) nor each chunk's language
(`app.documents.languages`, which records it as chunks are stored).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from app.documents import chunk_rows, languages
from app.documents.chunk_rows import Embedder
from app.documents.chunking import DEFAULT_MAX_TOKENS, TokenCounter
from app.documents.extract import Document, DocumentError, extract_bytes, kind_of, read_regular
from app.documents.index_file import open_index
from app.documents.records import (  # re-exported: callers import them from here
    CollectionInfo,
    FileInfo,
    IndexProgress,
    IndexReport,
    ProgressFn,
)
from app.documents.scan import list_files, refusal, storable
from app.documents.search import (
    Hit,
    SearchMode,
    VectorCache,
    passage_context,
    search_collections,
)
from app.documents.sections import ReadCancelled, one_line


class DocumentIndex:
    """Collections of indexed files in one SQLite file; see the module docstring."""

    def __init__(
        self,
        path: Path | None,
        embedder: Embedder | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        count_tokens: TokenCounter | None = None,
    ) -> None:
        self.path = path  # None: in memory (a chat's attachments, searched per question)
        self.embedder = embedder
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens
        self.conn = open_index(path)  # DocumentError: not SQLite, damaged, or held elsewhere
        self._vectors: VectorCache = {}

    def close(self) -> None:
        self.conn.close()

    # ---- collections ----------------------------------------------------------------------

    def collections(self) -> list[CollectionInfo]:
        rows = self.conn.execute(
            "SELECT c.id, c.name, c.embed_model, COUNT(DISTINCT f.id) AS files,"
            " (SELECT COUNT(*) FROM chunks k JOIN files g ON g.id = k.file_id"
            "  WHERE g.collection_id = c.id) AS chunks,"
            " COUNT(DISTINCT CASE WHEN f.status = 'failed' THEN f.id END) AS failed,"
            " COUNT(DISTINCT CASE WHEN f.status = 'skipped' THEN f.id END) AS skipped,"
            " COUNT(DISTINCT CASE WHEN f.status = 'missing' THEN f.id END) AS missing"
            " FROM collections c LEFT JOIN files f ON f.collection_id = c.id"
            " GROUP BY c.id ORDER BY c.name"
        ).fetchall()
        shares = languages.collection_shares(self.conn)
        return [
            CollectionInfo(
                r["name"],
                r["files"],
                r["chunks"],
                r["failed"],
                r["skipped"],
                r["missing"],
                r["embed_model"],
                shares.get(r["id"], ()),
            )
            for r in rows
        ]

    def roots(self, collection: str) -> list[str]:
        """The folders and files ``collection`` was built from (what a rescan walks)."""
        rows = self.conn.execute(
            "SELECT r.path FROM roots r JOIN collections c ON c.id = r.collection_id"
            " WHERE c.name = ? ORDER BY r.path",
            (collection,),
        ).fetchall()
        return [str(r[0]) for r in rows]

    def context(self, chunk_id: int, chars: int) -> tuple[str, str]:
        """The text around chunk ``chunk_id`` in its file (`app.documents.search.context`)."""
        return passage_context(self.conn, chunk_id, chars)

    def files(self, collection: str) -> list[FileInfo]:
        rows = self.conn.execute(
            "SELECT f.path, f.status, f.error, COUNT(k.id) AS chunks FROM files f"
            " JOIN collections c ON c.id = f.collection_id LEFT JOIN chunks k ON k.file_id = f.id"
            " WHERE c.name = ? GROUP BY f.id ORDER BY f.path",
            (collection,),
        ).fetchall()
        return [FileInfo(r["path"], r["status"], r["error"], r["chunks"]) for r in rows]

    def remove(self, collection: str) -> bool:
        """Drop ``collection`` and everything indexed in it; False when there was none."""
        with self.conn:
            self.conn.execute(
                "DELETE FROM chunks WHERE file_id IN (SELECT f.id FROM files f JOIN collections c"
                " ON c.id = f.collection_id WHERE c.name = ?)",
                (collection,),
            )
            cur = self.conn.execute("DELETE FROM collections WHERE name = ?", (collection,))
        self._vectors.clear()
        return cur.rowcount > 0

    def embed_model(self, collection: str) -> str | None:
        """The embedding model ``collection`` was indexed with (a path), if any."""
        row = self.conn.execute(
            "SELECT embed_model FROM collections WHERE name = ?", (collection,)
        ).fetchone()
        return None if row is None else row[0]

    def set_embed_model(self, collection: str, model: str | None) -> None:
        with self.conn:
            self.conn.execute(
                "UPDATE collections SET embed_model = ? WHERE name = ?", (model, collection)
            )

    def _collection_id(self, name: str, create: bool = False) -> int | None:
        row = self.conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
        if row is not None:
            return int(row["id"])
        if not create:
            return None
        if not name.strip():
            raise ValueError("a collection needs a name")
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO collections(name, created_at) VALUES (?, ?)", (name, time.time())
            )
        return int(cur.lastrowid or 0)

    # ---- indexing -------------------------------------------------------------------------

    def add(
        self,
        collection: str,
        path: Path,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Add a folder or file to ``collection`` (created if new) and index what changed."""
        path = path.expanduser().resolve()
        if not os.path.lexists(path):
            raise DocumentError(f"{storable(path)}: no such file or folder")
        if storable(path) != str(path):
            raise DocumentError(f"{storable(path)}: the name is not valid UTF-8; rename it first")
        cid = self._collection_id(collection, create=True)
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO roots VALUES (?, ?)", (cid, str(path)))
        return self.rescan(collection, progress, cancel)

    def rescan(
        self,
        collection: str,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> IndexReport:
        """Bring ``collection`` up to date with its folders: new, changed and removed files."""
        cid = self._collection_id(collection)
        if cid is None:
            raise DocumentError(f"no collection named {collection!r}")
        roots = [
            Path(r[0])
            for r in self.conn.execute("SELECT path FROM roots WHERE collection_id = ?", (cid,))
        ]
        on_disk = [(root, file) for root in roots for file in list_files(root)]
        known = {
            r["path"]: r
            for r in self.conn.execute("SELECT * FROM files WHERE collection_id = ?", (cid,))
        }
        report = IndexReport()
        for i, (root, file) in enumerate(on_disk):
            if cancel is not None and cancel.is_set():
                report.cancelled = True
                break
            key = storable(file)
            if progress is not None:
                progress(IndexProgress(i, len(on_disk), key))
            try:
                self._update_file(cid, root, file, known.get(key), report, cancel)
            except ReadCancelled:  # stopped inside a long file: it is read again next time
                report.cancelled = True
                break
            except Exception as exc:  # a bug or disk error on one file: the scan goes on
                message = one_line(f"{storable(file.name)}: indexing failed ({exc!r})")
                report.failed.append((key, message))
                with contextlib.suppress(sqlite3.Error):  # unrecorded, the report still says so
                    chunk_rows.store_file(self.conn, cid, key, None, None, None, message, "failed")
        else:
            present = {storable(f) for _, f in on_disk}
            chunk_rows.drop_vanished(self.conn, present, known, report)
            # Chunks indexed before languages were recorded get theirs from their stored text.
            languages.fill_missing(self.conn, cid, cancel)
            if progress is not None:
                progress(IndexProgress(len(on_disk), len(on_disk), ""))
        self._vectors.clear()
        return report

    def _update_file(
        self,
        cid: int,
        root: Path,
        file: Path,
        row: sqlite3.Row | None,
        report: IndexReport,
        cancel: threading.Event | None = None,
    ) -> None:
        key = storable(file)
        reason = refusal(file, root)  # before any read: links, pipes, devices, odd names
        if reason is not None:
            if row is not None and row["status"] == "skipped" and row["error"] == reason:
                report.unchanged += 1
                return
            report.skipped.append((key, reason))
            chunk_rows.store_file(self.conn, cid, key, None, None, None, reason, "skipped")
            return
        try:
            stat = file.stat()
        except OSError:
            return  # gone between listing and reading: the next rescan drops it
        same = row is not None and row["size"] == stat.st_size and row["mtime"] == stat.st_mtime
        if same and row is not None and row["status"] != "failed":  # a failure is retried
            report.unchanged += 1
            return
        digest: str | None = None
        try:
            kind = kind_of(file.name)
            data = read_regular(file)  # checked on the open file: regular, within the cap
            digest = hashlib.sha256(data).hexdigest()
            if row is not None and row["sha256"] == digest and row["status"] == "ok":
                with self.conn:
                    self.conn.execute(
                        "UPDATE files SET mtime = ? WHERE id = ?", (stat.st_mtime, row["id"])
                    )
                report.unchanged += 1
                return
            document = extract_bytes(key, data, kind, cancel)
        except DocumentError as exc:  # not a document Hearth can read: skipped, saying why
            message = one_line(str(exc))
            report.skipped.append((key, message))
            chunk_rows.store_file(
                self.conn, cid, key, stat.st_size, stat.st_mtime, digest, message, "skipped"
            )
            return
        fid = chunk_rows.store_file(self.conn, cid, key, stat.st_size, stat.st_mtime, digest, None)
        try:
            report.chunks += self._store_chunks(fid, document)
        except Exception as exc:  # an embedder or disk failure: this file failed, not the scan
            message = one_line(f"{file.name}: indexing failed ({exc})")
            report.failed.append((key, message))
            chunk_rows.store_file(
                self.conn, cid, key, stat.st_size, stat.st_mtime, digest, message, "failed"
            )
            return
        if row is None:
            report.added += 1
        else:
            report.updated += 1

    def add_document(self, collection: str, document: Document, key: str) -> int:
        """Index text that has no file on disk (an attachment, a paste) under ``key``; chunks."""
        cid = self._collection_id(collection, create=True)
        assert cid is not None
        fid = chunk_rows.store_file(self.conn, cid, key, None, None, None, None)
        count = self._store_chunks(fid, document)
        self._vectors.clear()
        return count

    def _store_chunks(self, fid: int, document: Document) -> int:
        return chunk_rows.store_chunks(
            self.conn, fid, document, self.embedder, self.max_tokens, self.count_tokens
        )

    # ---- search (`app.documents.search`) --------------------------------------------------

    def search(
        self, collections: Sequence[str], query: str, top_k: int = 5, mode: SearchMode = "hybrid"
    ) -> list[Hit]:
        """The ``top_k`` best chunks of ``collections`` for ``query``; chunks of files deleted
        since indexing are left out (and the file marked missing until a rescan drops it)."""
        cids = self._collection_ids(collections)
        return search_collections(self.conn, self._vectors, self.embedder, cids, query, top_k, mode)

    def _collection_ids(self, names: Sequence[str]) -> tuple[int, ...]:
        ids = [self._collection_id(n) for n in names]
        missing = [n for n, i in zip(names, ids, strict=True) if i is None]
        if missing:
            raise DocumentError(f"no collection named {missing[0]!r}")
        return tuple(sorted(i for i in ids if i is not None))
