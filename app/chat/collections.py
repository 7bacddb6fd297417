"""`CollectionLibrary`: the document collections, indexed and searched off the GUI thread.

Owns, on the GUI side, the two workers of `app.documents` over ``documents.sqlite3``: the
`CollectionIndexer` (add a folder, rescan, remove; one job at a time, with progress) and the
`Retriever` (per-question search of collections and attachments, and the listings the
Collections window shows, so they never wait behind an indexing job), and the
`CollectionWatcher` that keeps collections up to date when files change. Worker callbacks come
back to the GUI thread with ``loop.call_soon_threadsafe`` and leave as signals. Which embedding
model is "configured" (`configured_embed_model`: the catalogue's default embedding model, once
downloaded) is decided here: new collections are indexed with it and attachments are searched
with it, so retrieval turns hybrid by itself when one is installed. Does not own any widget,
the schema or the ranking.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QObject, Signal

from app.chat.collection_watch import CollectionWatcher
from app.documents import CollectionIndexer, DocumentError, IndexProgress, IndexReport
from app.documents.retrieval import AttachedText, Passage, Retriever

T = TypeVar("T")


def configured_embed_model() -> str | None:
    """The embedding model retrieval uses: the catalogue's default, when it is on disk."""
    try:
        from engine.hub.embedding import installed_path, load_embedding_models

        models = load_embedding_models()
        path = installed_path(models[0]) if models else None
    except Exception:  # an unreadable catalogue: keyword search still works
        return None
    return str(path) if path is not None else None


def _open_embedder(model: str) -> Any:
    from app.bridge import open_embedder  # the engine runtime stays behind the bridge

    return open_embedder(model)


class CollectionLibrary(QObject):
    """Collections in the index file at ``path``; see the module docstring."""

    sig_progress = Signal(str, int, int, str)  # collection, files done, files in all, file
    sig_done = Signal(str, object)  # collection, IndexReport or DocumentError
    sig_changed = Signal()  # collections were added, removed or re-indexed

    def __init__(
        self,
        path: Path,
        parent: QObject | None = None,
        *,
        embed_model: Callable[[], str | None] = configured_embed_model,
        open_embedder: Callable[[str], Any] = _open_embedder,
    ) -> None:
        super().__init__(parent)
        self.path = path
        self.embed_model = embed_model
        self.busy: dict[str, tuple[int, int, str]] = {}  # collection -> progress while indexing
        self._waiting: dict[str, Future[None]] = {}  # rescans queued, not started yet
        self._loop: asyncio.AbstractEventLoop | None = None
        self.indexer = CollectionIndexer(
            path,
            on_progress=self._from_worker(self._on_progress),
            on_done=self._from_worker(self._on_done),
            open_embedder=open_embedder,
        )
        self.retriever = Retriever(path, open_embedder=open_embedder, attachment_model=embed_model)
        self.watcher: Any = None  # a CollectionWatcher once `watch` is called

    # -- indexing ------------------------------------------------------------------------------
    def add(self, name: str, folder: Path) -> Future[None]:
        """Index ``folder`` (or a file) into ``name`` in the background; progress as signals."""
        self._capture_loop()
        self.busy[name] = (0, 0, "")
        return self.indexer.add(name, folder, self.embed_model())

    def rescan(self, name: str) -> Future[None]:
        """Queue a rescan of ``name``; one already queued and not started yet is enough (a
        burst of changes during a long job queues one rescan, not one per change)."""
        self._capture_loop()
        if (waiting := self._waiting.get(name)) is not None:
            return waiting
        self.busy.setdefault(name, (0, 0, ""))
        future = self._waiting[name] = self.indexer.rescan(name)
        return future

    def rescan_all(self) -> Future[None]:
        """On start: files changed while Hearth was shut are indexed again."""
        self._capture_loop()
        return self.indexer.rescan_all()

    async def remove(self, name: str) -> bool:
        """Forget ``name`` (the files stay on disk); waits for a job on it to stop first."""
        if name in self.busy:
            self.indexer.cancel()
        removed = await self._await(self.indexer.remove(name))
        self.busy.pop(name, None)
        self.sig_changed.emit()
        return bool(removed)

    # -- reading -------------------------------------------------------------------------------
    async def collections(self) -> list[Any]:
        return await self._await(self.retriever.collections())

    async def roots(self) -> dict[str, list[str]]:
        """Each collection's folders (and single files)."""
        return await self._await(self.retriever.roots())

    async def files(self, name: str) -> list[Any]:
        return await self._await(self.retriever.files(name))

    async def search(
        self, query: str, names: list[str], attachments: list[AttachedText], top_k: int
    ) -> list[Passage]:
        return await self._await(self.retriever.search(query, names, attachments, top_k))

    def watch(self) -> None:
        """Keep collections up to date from now on (`app.chat.collection_watch`)."""

        if self.watcher is None:
            self.watcher = CollectionWatcher(self)
            self.watcher.refresh()

    def stop_watching(self) -> None:
        """GUI thread: no more rescans from file changes or the timer."""
        if self.watcher is not None:
            self.watcher.stop()

    def close_workers(self) -> None:
        """Any thread: stop indexing between two files, wait for both workers to finish."""
        self.indexer.close()
        self.retriever.close()

    def close(self) -> None:
        self.stop_watching()
        self.close_workers()

    # -- from the workers ------------------------------------------------------------------------
    async def _await(self, future: Future[T]) -> T:
        self._capture_loop()
        return await asyncio.wrap_future(future)

    def _capture_loop(self) -> None:
        if self._loop is None:
            with contextlib.suppress(RuntimeError):
                self._loop = asyncio.get_event_loop()

    def _from_worker(self, fn: Callable[..., None]) -> Callable[..., None]:
        """``fn`` called on the GUI thread with what a worker passed (dropped once closed)."""

        def call(*args: Any) -> None:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: shutdown
                    loop.call_soon_threadsafe(fn, *args)

        return call

    def _on_progress(self, name: str, p: IndexProgress) -> None:
        self._waiting.pop(name, None)  # started: a change from now on needs another rescan
        self.busy[name] = (p.done, p.total, p.file)
        self.sig_progress.emit(name, p.done, p.total, p.file)

    def _on_done(self, name: str, result: IndexReport | DocumentError) -> None:
        self._waiting.pop(name, None)
        self.busy.pop(name, None)
        self.sig_done.emit(name, result)
        self.sig_changed.emit()
