"""Indexing collections off the caller's thread, one job at a time, with progress and cancel.

Owns a single worker thread and the `DocumentIndex` that lives on it (sqlite3 objects stay on
their thread): ``add``/``rescan``/``rescan_all`` queue jobs and return at once; ``on_progress``
and ``on_done`` are called **on the worker thread** with plain values (the app hands them to
the GUI thread with ``loop.call_soon_threadsafe``, as `app.bridge` does for the engine).
``cancel`` stops the running job between two files; what was indexed stays. The embedding
model, when the index needs one, is opened on the worker by ``open_embedder`` (heavy: never on
the GUI thread). Keeping collections fresh is a ``rescan_all`` on start and on demand; the
rescan is cheap when nothing changed (size and mtime first, the hash only for touched files).
The worker runs at the lowest CPU priority (`yield_to_replies`): indexing is background
work, and a reply streaming beside it should get the cores first.
Does not own the schema or search rules (`app.documents.index`) nor any Qt object.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from app.documents.extract import DocumentError
from app.documents.index import DocumentIndex, Embedder, IndexProgress, IndexReport

ProgressCallback = Callable[[str, IndexProgress], None]
DoneCallback = Callable[[str, "IndexReport | DocumentError"], None]

# ``on_done``'s collection name when no single collection failed: the index itself could not
# be read (``rescan_all`` opens it before it knows any collection).
WHOLE_INDEX = ""


def yield_to_replies() -> None:
    """Run the calling thread (and the threads it starts later, which inherit it: the
    embedding session's pool is opened on this thread) only when a core is otherwise idle.

    Why: measured beside a reply on 2 cores, the embedding at normal priority took half the
    CPU and the reply ran at 0.78x llama.cpp's speed; at SCHED_IDLE the reply gets its
    cores and indexing takes the gaps between replies. Linux only (``SCHED_IDLE`` is per
    thread there); elsewhere nothing changes, since ``setpriority`` would lower the whole app.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError:  # a sandbox that forbids it: nice 19 for this thread, else as it was
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class CollectionIndexer:
    """A worker thread that indexes collections of the index file at ``path``."""

    def __init__(
        self,
        path: Path,
        *,
        on_progress: ProgressCallback | None = None,
        on_done: DoneCallback | None = None,
        open_embedder: Callable[[str], Embedder] | None = None,
    ) -> None:
        self.path = path
        self.on_progress = on_progress or (lambda _c, _p: None)
        self.on_done = on_done or (lambda _c, _r: None)
        self.open_embedder = open_embedder
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hearth-docs", initializer=yield_to_replies
        )
        self._cancel = threading.Event()
        self._index: DocumentIndex | None = None  # created and used on the worker only
        self._embedders: dict[str, Embedder] = {}
        self._closed = False

    def add(self, collection: str, path: Path, embed_model: str | None = None) -> Future[None]:
        """Queue indexing ``path`` (folder or file) into ``collection``."""
        return self._executor.submit(self._job, collection, path, embed_model)

    def rescan(self, collection: str) -> Future[None]:
        return self._executor.submit(self._job, collection, None, None)

    def rescan_all(self) -> Future[None]:
        """Queue a rescan of every collection (on start: files changed while Hearth was shut)."""
        return self._executor.submit(self._rescan_all)

    def remove(self, collection: str) -> Future[bool]:
        """Queue forgetting ``collection`` (True when it existed); the files stay on disk."""
        return self._executor.submit(lambda: self._open().remove(collection))

    def cancel(self) -> None:
        """Stop the running job between two files (queued jobs still run)."""
        self._cancel.set()

    def close(self) -> None:
        """Cancel, wait for the worker, close the index on its thread."""
        self._cancel.set()
        if self._closed:
            return
        self._closed = True
        self._executor.submit(self._close)
        self._executor.shutdown(wait=True)

    def _open(self) -> DocumentIndex:
        if self._index is None:
            self._index = DocumentIndex(self.path)
        return self._index

    def _embedder_for(self, model: str | None) -> Embedder | None:
        if model is None or self.open_embedder is None:
            return None
        if model not in self._embedders:
            self._embedders[model] = LazyEmbedder(self.open_embedder, model)
        return self._embedders[model]

    def _job(self, collection: str, path: Path | None, embed_model: str | None) -> None:
        self._cancel.clear()
        progress = lambda p: self.on_progress(collection, p)  # noqa: E731 - binds the name
        try:
            index = self._open()  # an unreadable index file is this job's error, reported below
            model = embed_model or index.embed_model(collection)
            index.embedder = self._embedder_for(model)
            if path is not None:
                report = index.add(collection, path, progress, self._cancel)
                if embed_model is not None:
                    index.set_embed_model(collection, embed_model)
            else:
                report = index.rescan(collection, progress, self._cancel)
        except DocumentError as exc:
            self.on_done(collection, exc)
            return
        except Exception as exc:  # an embedder or disk failure: reported, the worker lives on
            self.on_done(collection, DocumentError(f"indexing {collection!r} failed: {exc}"))
            return
        self.on_done(collection, report)

    def _rescan_all(self) -> None:
        # The start-up rescan's future is not awaited: an index that cannot be read is said
        # through on_done, or the app would stay silent until the user's next document action.
        try:
            names = [info.name for info in self._open().collections()]
        except DocumentError as exc:
            self.on_done(WHOLE_INDEX, exc)
            return
        except Exception as exc:  # any failure is reported, the worker lives on
            self.on_done(WHOLE_INDEX, DocumentError(f"reading the document index failed: {exc}"))
            return
        for name in names:
            self._job(name, None, None)

    def _close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


class LazyEmbedder:
    """An `Embedder` opened on first use: a rescan that finds nothing changed (every start)
    never loads the model."""

    def __init__(self, open_embedder: Callable[[str], Embedder], model: str) -> None:
        self._open = open_embedder
        self._model = model
        self._real: Embedder | None = None

    def _get(self) -> Embedder:
        if self._real is None:
            self._real = self._open(self._model)
        return self._real

    @property
    def name(self) -> str:
        return self._get().name

    @property
    def dim(self) -> int:
        return self._get().dim

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        return self._get().embed(texts, query=query)
