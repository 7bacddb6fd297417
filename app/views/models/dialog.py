"""The Models window: choose, check, download and manage models without leaving Hearth.

Tabs: the curated Catalogue with a verdict per model (`app.views.models.catalogue`), Search
the Hub (`app.views.models.search`), On this computer (`app.views.models.local`) and Hub
(address / mirror and token, `app.views.models.hub_tab`). Above them, unfinished downloads
(from this run or an earlier one, `engine.hub.download.pending_downloads`) are offered for
resuming. A download opens `app.views.models.download_dialog.DownloadDialog`.

Emits ``sig_use_requested(path)`` when the user picks a model to use; the composition root
loads it as "Open GGUF file" does. Does not own HTTP, files or verdicts (`engine.hub` through
`app.hub`), nor settings keys (`app.system.settings`) or the keyring (`app.system.secrets`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from qasync import asyncSlot

from app.hub import hub_calls
from app.hub.downloads import DownloadFn, HubAccess
from app.hub.token_hosts import approved_hosts
from app.system.secrets import KeyStore
from app.system.settings import Settings
from app.views.models.catalogue import CatalogueTab
from app.views.models.download_dialog import DownloadDialog
from app.views.models.format import format_bytes
from app.views.models.hub_tab import HubTab
from app.views.models.local import LocalModelsTab
from app.views.models.search import SearchTab

MAX_PENDING_SHOWN = 3


class ModelsDialog(QDialog):
    """Catalogue, search, local models and Hub settings, in one window."""

    sig_use_requested = Signal(str)  # a .gguf path to load

    def __init__(
        self,
        settings: Settings,
        keys: KeyStore,
        parent: QWidget | None = None,
        *,
        dest_dir: Path | None = None,
        download_fn: DownloadFn | None = None,
        in_use: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("modelsDialog")
        self.setWindowTitle(self.tr("Models"))
        self.resize(1180, 720)
        self._settings = settings
        self._keys = keys
        self._dest_dir = dest_dir
        self._download_fn = download_fn
        self.download_dialog: DownloadDialog | None = None
        self.pending: list[Any] = []
        self.refresh_task: asyncio.Future[Any] | None = None  # the latest refresh (tests await)
        self.load_task: asyncio.Future[Any] | None = None
        self._build()
        if in_use is not None:
            self.local.in_use = in_use

    def access(self) -> HubAccess:
        """The Hub address and token as they are now (both may change while the window is open)."""
        return HubAccess(
            endpoint=self._settings.hub_endpoint(),
            token=self._keys.hub_token(),
            token_hosts=approved_hosts(self._settings.token_host_answers()),
        )

    def _build(self) -> None:
        self.pending_box = QWidget(self)
        self.pending_box.setObjectName("pendingDownloads")
        self.pending_layout = QVBoxLayout(self.pending_box)
        self.pending_layout.setContentsMargins(0, 0, 0, 0)
        self.pending_box.setVisible(False)
        self.catalogue = CatalogueTab(self)
        self.search = SearchTab(self.access, self)
        self.local = LocalModelsTab(self)
        self.hub = HubTab(self._settings, self._keys, self)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.catalogue, self.tr("Catalogue"))
        self.tabs.addTab(self.search, self.tr("Search the Hub"))
        self.tabs.addTab(self.local, self.tr("On this computer"))
        self.tabs.addTab(self.hub, self.tr("Hub"))
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.pending_box)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(close)
        for tab in (self.catalogue, self.search):  # (model, its projector or None)
            tab.sig_download_requested.connect(self.on_download_requested)
        self.catalogue.guards.sig_download_requested.connect(self.on_guard_requested)
        self.search.sig_token_requested.connect(self.show_token_field)
        self.local.sig_use_requested.connect(self._use)
        self.hub.sig_changed.connect(self.on_hub_changed)

    def show_family(self, family: str) -> None:
        """Open on the catalogue with ``family``'s pick selected."""
        self.tabs.setCurrentWidget(self.catalogue)
        self.catalogue.select_family(family)

    # ---- loading --------------------------------------------------------------------------

    def start(self) -> asyncio.Future[Any]:
        """Fill the tabs in the background (once at a time); the task is kept for tests."""
        if self.load_task is None or self.load_task.done():
            self.load_task = asyncio.ensure_future(self.load())
        return self.load_task

    async def load(self, ram_available: int | None = None) -> None:
        """Fill every tab: local models and unfinished downloads first (quick), then the
        catalogue's verdicts (one Hub call per entry; kept when the window opens again,
        unless they were offline estimates)."""
        await asyncio.gather(self.local.refresh(), self.refresh_pending(), self._examples())
        if not self.catalogue.verdicts or self.catalogue.offline:
            await self.catalogue.load(self.access(), ram_available)

    async def _examples(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # no catalogue: the plain hint stays
            self.search.show_examples(await hub_calls.catalogue())

    @asyncSlot()
    async def on_hub_changed(self) -> None:
        if self.catalogue.entries:  # verdicts shown came from the other Hub: check again
            await self.catalogue.load(self.access())

    async def refresh_pending(self) -> list[Any]:
        try:
            self.pending = await hub_calls.pending()
        except OSError:
            self.pending = []
        self._show_pending()
        return self.pending

    def _show_pending(self) -> None:
        while self.pending_layout.count():
            item = self.pending_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for p in self.pending[:MAX_PENDING_SHOWN]:
            self.pending_layout.addWidget(self._pending_row(p))
        self.pending_box.setVisible(bool(self.pending))

    def _pending_row(self, p: Any) -> QWidget:
        row = QWidget(self.pending_box)
        label = QLabel(
            self.tr("Unfinished download: {0} ({1} of {2})").format(
                p.file.filename, format_bytes(p.downloaded), format_bytes(p.total)
            ),
            row,
        )
        resume = QPushButton(self.tr("Resume"), row)
        discard = QPushButton(self.tr("Discard"), row)
        resume.clicked.connect(lambda _=False, f=p.file, d=p.downloaded: self.resume_download(f, d))
        discard.clicked.connect(lambda _=False, pending=p: self.discard_pending(pending))
        line = QHBoxLayout(row)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(label, 1)
        line.addWidget(resume)
        line.addWidget(discard)
        return row

    def resume_download(self, file: Any, already: int) -> DownloadDialog:
        """Resume ``file``; a catalogue model that can see fetches its projector after it (a
        download stopped in the model had not reached it)."""
        verdict = self.catalogue.verdicts.get(file.repo_id)
        projector = verdict.projector if verdict is not None and verdict.file == file else None
        return self.open_download(file, already, projector=projector)

    def discard_pending(self, pending: Any) -> None:
        from engine.hub.download import discard_download

        discard_download(pending)
        self.pending = [p for p in self.pending if p.part_path != pending.part_path]
        self._show_pending()

    # ---- downloads ------------------------------------------------------------------------

    def on_download_requested(self, file: Any, projector: Any) -> None:
        self.open_download(file, projector=projector)

    def on_guard_requested(self, file: Any) -> None:
        """A guard model goes to the guards folder, where Preferences offers it."""
        base = self._dest_dir
        folder = base / "guards" if base else hub_calls.guards_dir()
        self.open_download(file, dest_dir=folder, chat_model=False)

    def open_download(
        self,
        file: Any,
        already: int = 0,
        *,
        start: bool = True,
        projector: Any = None,
        dest_dir: Path | None = None,
        chat_model: bool = True,
    ) -> DownloadDialog:
        """Open the download dialog for ``file`` (and the vision projector to fetch after
        it, if any) and start (or resume) it at once."""
        if self.download_dialog is not None and self.download_dialog.phase.value in (
            "running",
            "verifying",
        ):
            self.download_dialog.raise_()
            return self.download_dialog
        dialog = DownloadDialog(
            file,
            self.access(),
            self,
            dest_dir=dest_dir or self._dest_dir,
            download_fn=self._download_fn,
            already=already,
            projector=projector,
            chat_model=chat_model,
        )
        dialog.sig_use_requested.connect(self._use)
        dialog.sig_downloaded.connect(self.on_download_finished)
        dialog.sig_token_requested.connect(self.show_token_field)
        dialog.finished.connect(lambda _r: self.start_pending_refresh())
        self.download_dialog = dialog
        dialog.open()
        if start:
            dialog.start()
        return dialog

    def on_download_finished(self, path: str) -> None:
        self.refresh_task = asyncio.ensure_future(self._refresh_after_download(path))

    async def _refresh_after_download(self, path: str) -> None:
        await asyncio.gather(self.local.refresh(), self.refresh_pending())
        self.local.select_path(path)
        self.catalogue.guards.show_guards()  # a guard that arrived says "Downloaded"

    def start_pending_refresh(self) -> None:
        self.refresh_task = asyncio.ensure_future(self.refresh_pending())

    def show_token_field(self) -> None:
        self.tabs.setCurrentWidget(self.hub)
        self.hub.focus_token()

    def _use(self, path: str) -> None:
        with contextlib.suppress(OSError):  # "last used" is a nicety, never a reason to fail
            hub_calls.touch_last_used(path)
        self.sig_use_requested.emit(path)
        self.accept()

    def reject(self) -> None:
        # Closing the window pauses a running download; it is offered again next time.
        if self.download_dialog is not None:
            self.download_dialog.reject()
        super().reject()
