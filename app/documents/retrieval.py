"""Per-question retrieval for the chat: collections and a chat's attachments, one search code.

Owns one worker thread holding two `DocumentIndex` objects (sqlite3 objects stay on their
thread): the collections file (``documents.sqlite3``, read here while `CollectionIndexer`
writes it on its own thread; WAL lets both run) and an in-memory index of the attachments the
chat has asked about, one collection per document text (named by its SHA-256, chunked and
embedded once per run while short enough not to keep the question waiting, the oldest
dropped past `MAX_ATTACHMENT_SETS`). Both are searched with
`app.documents.search` (FTS5 bigram keywords; fused with dense vectors when the collection was
indexed with an embedding model, or, for attachments, when ``attachment_model`` names one),
and the rankings merged by reciprocal rank. Each `Passage` carries the text around it (its
neighbouring chunks) so a source can be shown in context. Reading collection lists and roots
for the UI also runs here, so it never waits behind a long indexing job. Qt-free; does not
own indexing (`app.documents.background`) or the prompt (`app.chat.document_context`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from app.documents import ranking
from app.documents.chunking import chunk_document
from app.documents.extract import Document, DocumentError
from app.documents.index import CollectionInfo, DocumentIndex, Embedder, FileInfo
from app.documents.search import Hit, hits_of

T = TypeVar("T")
CONTEXT_CHARS = 600  # shown on each side of a passage in its "in context" dialog
MAX_ATTACHMENT_SETS = 64  # documents kept indexed in memory (per run)
# An attachment is embedded while the question waits, so only a short one: a long one is
# searched by keywords (a collection, indexed in the background, has no such limit).
MAX_EMBEDDED_CHUNKS = 48


@dataclass(frozen=True, slots=True)
class Passage:
    """One retrieved chunk: where it is from, what it says, and the text around it."""

    file: str  # what to show: the attachment's name, or the path inside the collection folder
    path: str  # the file on disk ("" for an attachment)
    collection: str  # "" for an attachment
    locator: str
    text: str
    before: str
    after: str
    score: float


@dataclass(frozen=True, slots=True)
class AttachedText:
    """A chat attachment to search: ``key`` (its text's SHA-256) names it in memory."""

    key: str
    document: Document


class Retriever:
    """Searches collections of the index at ``path`` and attachments; see the module docstring.

    ``open_embedder`` loads an embedding model by its path (`app.bridge.open_embedder`; heavy,
    run on this worker); ``attachment_model`` says which model attachments are embedded with
    (None: keyword search only), asked each time so a model installed later is picked up.
    """

    def __init__(
        self,
        path: Path,
        *,
        open_embedder: Callable[[str], Embedder] | None = None,
        attachment_model: Callable[[], str | None] | None = None,
    ) -> None:
        self.path = path
        self.open_embedder = open_embedder
        self.attachment_model = attachment_model or (lambda: None)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-retrieve")
        self._files: DocumentIndex | None = None  # both created and used on the worker only
        self._memory: DocumentIndex | None = None
        # attachment key -> the model it was indexed for (None: keyword only), oldest first
        self._attached: OrderedDict[str, str | None] = OrderedDict()
        self._embedders: dict[str, Embedder | None] = {}
        self._lock = threading.Lock()  # close() against a late submit
        self._closed = False

    # -- the GUI's calls: each returns a Future at once -------------------------------------
    def search(
        self,
        query: str,
        collections: Sequence[str] = (),
        attachments: Sequence[AttachedText] = (),
        top_k: int = 5,
    ) -> Future[list[Passage]]:
        return self._submit(self._search, query, tuple(collections), tuple(attachments), top_k)

    def collections(self) -> Future[list[CollectionInfo]]:
        return self._submit(lambda: self._open().collections())

    def files(self, collection: str) -> Future[list[FileInfo]]:
        return self._submit(lambda: self._open().files(collection))

    def roots(self) -> Future[dict[str, list[str]]]:
        """Each collection's folders (what a watcher watches)."""
        return self._submit(self._roots)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._executor.submit(self._close)
        self._executor.shutdown(wait=True)

    def _submit(self, fn: Callable[..., T], *args: object) -> Future[T]:
        with self._lock:
            if self._closed:
                raise DocumentError("document search has been shut down")
            return self._executor.submit(fn, *args)

    # -- on the worker -----------------------------------------------------------------------
    def _open(self) -> DocumentIndex:
        if self._files is None:
            self._files = DocumentIndex(self.path)
        return self._files

    def _roots(self) -> dict[str, list[str]]:
        index = self._open()
        return {c.name: index.roots(c.name) for c in index.collections()}

    def _embedder(self, model: str | None) -> Embedder | None:
        """The model at ``model``, opened once; one that cannot be opened (moved, damaged)
        leaves keyword search, which needs none."""
        if model is None or self.open_embedder is None:
            return None
        if model not in self._embedders:
            try:
                self._embedders[model] = self.open_embedder(model)
            except Exception:
                self._embedders[model] = None
        return self._embedders[model]

    def _search(
        self,
        query: str,
        collections: tuple[str, ...],
        attachments: tuple[AttachedText, ...],
        top_k: int,
    ) -> list[Passage]:
        rankings: list[list[Passage]] = []
        if attachments:
            rankings.append(self._search_attachments(query, attachments, top_k))
        if collections:
            rankings += self._search_collections(query, collections, top_k)
        return merge(rankings, top_k)

    def _search_collections(
        self, query: str, names: tuple[str, ...], top_k: int
    ) -> list[list[Passage]]:
        index = self._open()
        known = {str(r[0]) for r in index.conn.execute("SELECT name FROM collections")}
        by_model: dict[str | None, list[str]] = {}
        for name in names:
            if name in known:  # one removed since the chat chose it is passed over
                by_model.setdefault(index.embed_model(name), []).append(name)
        out = []
        for model, group in by_model.items():
            index.embedder = self._embedder(model)
            hits = index.search(group, query, top_k, mode="hybrid")
            out.append([self._passage(index, h, self._collection_of(h, group)) for h in hits])
        return out

    def _collection_of(self, hit: Hit, group: list[str]) -> str:
        if len(group) == 1:
            return group[0]
        row = (
            self._open()
            .conn.execute(
                "SELECT c.name FROM chunks k JOIN files f ON f.id = k.file_id"
                " JOIN collections c ON c.id = f.collection_id WHERE k.id = ?",
                (hit.chunk_id,),
            )
            .fetchone()
        )
        return str(row[0]) if row is not None else group[0]

    def _passage(self, index: DocumentIndex, hit: Hit, collection: str) -> Passage:
        before, after = index.context(hit.chunk_id, CONTEXT_CHARS)
        shown = hit.file
        if collection:
            shown = relative_path(hit.file, index.roots(collection))
        path = hit.file if collection else ""
        return Passage(shown, path, collection, hit.locator, hit.text, before, after, hit.score)

    def _search_attachments(
        self, query: str, attachments: tuple[AttachedText, ...], top_k: int
    ) -> list[Passage]:
        memory = self._memory_index()
        memory.embedder = self._embedder(self.attachment_model())
        keys: list[str] = []
        for a in attachments:
            if a.key in keys:
                continue
            keys.append(a.key)
            self._index_attachment(memory, a)
        hits = memory.search(keys, query, top_k, mode="hybrid") or _opening(memory, keys, top_k)
        return [self._passage(memory, h, "") for h in hits]

    def _memory_index(self) -> DocumentIndex:
        if self._memory is None:
            self._memory = DocumentIndex(None)
        return self._memory

    def _index_attachment(self, memory: DocumentIndex, a: AttachedText) -> None:
        embedder = memory.embedder
        model = embedder.name if embedder is not None else None
        if a.key in self._attached and self._attached[a.key] == model:
            self._attached.move_to_end(a.key)
            return
        memory.remove(a.key)  # new, or indexed for another model than now
        chunks = len(chunk_document(a.document, memory.max_tokens, memory.count_tokens))
        if chunks > MAX_EMBEDDED_CHUNKS:  # the question would wait: this one stays keyword-only
            memory.embedder = None
        try:
            memory.add_document(a.key, a.document, a.document.path)
        finally:
            memory.embedder = embedder
        self._attached[a.key] = model
        while len(self._attached) > MAX_ATTACHMENT_SETS:
            old, _ = self._attached.popitem(last=False)
            memory.remove(old)

    def _close(self) -> None:
        for index in (self._files, self._memory):
            if index is not None:
                index.close()
        self._files = self._memory = None


def _opening(memory: DocumentIndex, keys: list[str], top_k: int) -> list[Hit]:
    """The first chunks of the attached documents, for a question that names nothing in them
    ("summarise this"): the opening beats sending the question without the document."""
    marks = ",".join("?" * len(keys))
    rows = memory.conn.execute(
        "SELECT k.id FROM chunks k JOIN files f ON f.id = k.file_id"
        f" JOIN collections c ON c.id = f.collection_id WHERE c.name IN ({marks})"
        " ORDER BY k.ordinal, c.id LIMIT ?",
        (*keys, top_k),
    ).fetchall()
    return hits_of(memory.conn, [(int(r[0]), 0.0) for r in rows], top_k)


def merge(rankings: Sequence[Sequence[Passage]], top_k: int) -> list[Passage]:
    """Several best-first lists as one, by reciprocal rank (each list's own scores are not
    comparable: bm25 in one, fused ranks in another)."""
    if len(rankings) == 1:
        return list(rankings[0][:top_k])
    scored: list[tuple[float, int, Passage]] = []
    for ranking_ in rankings:
        for rank, passage in enumerate(ranking_, start=1):
            scored.append((1.0 / (ranking.RRF_K + rank), len(scored), passage))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [p for _, _, p in scored[:top_k]]


def relative_path(path: str, roots: Sequence[str]) -> str:
    """``path`` inside the collection's folder that holds it ("guides/setup.md")."""
    for root in roots:
        try:
            inside = Path(path).relative_to(root)
        except ValueError:
            continue
        return str(inside) if str(inside) != "." else Path(path).name
    return Path(path).name


def retrieval_error(exc: BaseException) -> str:
    """A one-line reason a search could not run (for the status bar)."""
    return str(exc) if isinstance(exc, DocumentError) else f"document search failed: {exc}"
