"""Wiring documents into the main window: the composer's chips and signals, drops on the window.

Owns connecting the composer (paperclip, pasted files, long pastes, the Collections button) to
the session's `ChatDocuments`, accepting files dropped anywhere on the window (an event filter,
so the window class needs no drop handlers of its own), and opening the one Collections window
(``window.document_drops.collections.open()``). Does not own reading or counting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QMenu

from app.documents import WHOLE_INDEX, DocumentError, IndexReport
from app.views.chat.composer import local_files, png_bytes
from app.views.chat.image_chips import is_image_file
from app.views.documents.collections_window import CollectionsWindow, describe

if TYPE_CHECKING:
    from app.views.documents.collections_window import CollectionsWindow
    from app.views.main_window import MainWindow


class WindowDrops(QObject):
    """Files dropped on the window are attached to the draft: pictures to its images (the
    composer's chips), the rest to its documents."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.documents = window.session.documents  # not the window: no Python-side cycle
        self.composer = window.composer
        self.collections = CollectionsOpener(window)  # the Collections window, opened once
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            assert isinstance(event, QDragEnterEvent)
            if local_files(event.mimeData()) or event.mimeData().hasImage():
                event.acceptProposedAction()
                return True
        elif event.type() == QEvent.Type.Drop:
            assert isinstance(event, QDropEvent)
            mime = event.mimeData()
            if files := local_files(mime):
                event.acceptProposedAction()
                if images := [f for f in files if is_image_file(f)]:
                    self.composer.add_images(images)
                if others := [f for f in files if not is_image_file(f)]:
                    self.documents.add_files(others)
                return True
            if mime.hasImage() and (png := png_bytes(mime.imageData())):  # from a browser
                event.acceptProposedAction()
                self.composer.add_image_data(png)
                return True
        return super().eventFilter(watched, event)


class CollectionsOpener(QObject):
    """Opens the one Collections window of the main window (raised if already open)."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.main = window
        self.window: CollectionsWindow | None = None

    def open(self) -> CollectionsWindow:

        if self.window is None:
            self.window = CollectionsWindow(self.main.session.documents, self.main)
        self.window.show()
        self.window.raise_()
        self.window.activateWindow()
        return self.window


def install_documents(window: MainWindow) -> WindowDrops:
    documents = window.session.documents
    composer = window.composer
    composer.attachments.bind(documents.tray)
    composer.sig_files_chosen.connect(documents.add_files)
    composer.sig_long_paste.connect(documents.add_paste)
    drops = WindowDrops(window)
    composer.collections.bind(documents, drops.collections.open)
    documents.library.sig_done.connect(lambda name, result: _notice_indexed(window, name, result))
    if (tools := _tools_menu(window)) is not None:
        label = QCoreApplication.translate("WindowDocuments", "Document collections…")
        tools.addAction(label, drops.collections.open)
    return drops


def _notice_indexed(window: MainWindow, name: str, result: IndexReport | DocumentError) -> None:
    """A background add or rescan that changed something says so in the status bar (a rescan
    that found nothing new, every start, stays quiet)."""

    if isinstance(result, IndexReport) and not (
        result.added or result.updated or result.removed or result.skipped or result.failed
    ):
        return
    if name == WHOLE_INDEX:  # the index itself: no collection to name
        window.on_session_notice(describe(result))
        return
    window.on_session_notice(
        QCoreApplication.translate("WindowDocuments", "Collection {0}: {1}").format(
            name, describe(result)
        )
    )


def _tools_menu(window: MainWindow) -> QMenu | None:
    """The window's Tools menu (found by its title, translated as the window translates it)."""
    title = QCoreApplication.translate("MainWindow", "&Tools")
    for action in window.menuBar().actions():
        if action.text() == title and (menu := action.menu()) is not None:
            return menu  # type: ignore[return-value]
    return None
