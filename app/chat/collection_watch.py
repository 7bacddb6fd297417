"""Keeping collections up to date when their files change, in the background.

Owns a `QFileSystemWatcher` over each collection's folders (every folder a rescan walks) and
its indexed files, up to `MAX_WATCHED` paths (the operating system's watch budget is shared),
and a periodic rescan as the backstop for what a watcher cannot see (more files than the
budget, network drives, changes while Hearth was shut: `CollectionLibrary.rescan_all` on
start). A change marks the collection whose folder holds it; after `DEBOUNCE_MS` without
further changes (an editor saving, a copy of many files) the marked collections are rescanned:
new and changed files are indexed, deleted ones dropped (size and mtime first, the content
hash only for touched files, so a rescan of an unchanged folder is cheap). The watch list is
rebuilt after each rescan, since an editor's atomic save replaces the watched file. Does not
own indexing (`app.documents`) or any widget.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer

from app.documents.scan import list_files, list_folders

if TYPE_CHECKING:
    from app.chat.collections import CollectionLibrary

DEBOUNCE_MS = 1500
PERIOD_MS = 15 * 60 * 1000
MAX_WATCHED = 4000


def watch_paths(roots: dict[str, list[str]], limit: int = MAX_WATCHED) -> list[str]:
    """The folders, then the files, of every collection's roots: at most ``limit`` paths."""
    folders: list[str] = []
    files: list[str] = []
    for paths in roots.values():
        for root in paths:
            folders += [str(p) for p in list_folders(Path(root), limit)]
    for paths in roots.values():
        for root in paths:
            if len(folders) + len(files) >= limit:
                break
            files += [str(p) for p in list_files(Path(root))[: limit - len(folders) - len(files)]]
    return list(dict.fromkeys(folders + files))[:limit]


class CollectionWatcher(QObject):
    """Rescans a collection shortly after a file in its folders changes."""

    def __init__(self, library: CollectionLibrary) -> None:
        super().__init__(library)
        self.library = library
        self.roots: dict[str, list[str]] = {}
        self.dirty: set[str] = set()
        self.fs = QFileSystemWatcher(self)
        self.fs.directoryChanged.connect(self.on_path_changed)
        self.fs.fileChanged.connect(self.on_path_changed)
        self.debounce = QTimer(self)
        self.debounce.setSingleShot(True)
        self.debounce.setInterval(DEBOUNCE_MS)
        self.debounce.timeout.connect(self.flush)
        self.periodic = QTimer(self)
        self.periodic.setInterval(PERIOD_MS)
        self.periodic.timeout.connect(library.rescan_all)
        self.periodic.start()
        self._task: asyncio.Task[Any] | None = None
        library.sig_changed.connect(self.refresh)

    def refresh(self) -> None:
        """Watch what the collections hold now (after a rescan, an add or a remove)."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._refresh())

    async def _refresh(self) -> None:
        roots = await self.library.roots()
        # get_event_loop: qasync may resume this task from a Qt event outside run_forever
        paths = await asyncio.get_event_loop().run_in_executor(None, watch_paths, roots)
        self.roots = roots
        old = self.fs.directories() + self.fs.files()
        if old:
            self.fs.removePaths(old)
        if paths:
            self.fs.addPaths(paths)

    def on_path_changed(self, path: str) -> None:
        changed = Path(path)
        if changed == self.library.path.parent:  # the index's own folder (its WAL files)
            return
        for name, roots in self.roots.items():
            if any(changed == Path(r) or Path(r) in changed.parents for r in roots):
                self.dirty.add(name)
        if self.dirty:
            self.debounce.start()  # restarted by each change: one rescan after a burst

    def flush(self) -> None:
        dirty, self.dirty = self.dirty, set()
        for name in sorted(dirty):
            self.library.rescan(name)

    def stop(self) -> None:
        self.debounce.stop()
        self.periodic.stop()
        paths = self.fs.directories() + self.fs.files()
        if paths:
            self.fs.removePaths(paths)
