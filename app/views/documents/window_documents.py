"""Wiring documents into the main window: the composer's chips and signals, drops on the window.

Owns connecting the composer (paperclip, pasted files, long pastes) to the session's
`ChatDocuments`, and accepting files dropped anywhere on the window (an event filter, so the
window class needs no drop handlers of its own). Does not own reading or counting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDragEnterEvent, QDropEvent

from app.views.chat.composer import local_files

if TYPE_CHECKING:
    from app.views.main_window import MainWindow


class WindowDrops(QObject):
    """Files dropped on the window are attached to the draft."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.documents = window.session.documents  # not the window: no Python-side cycle
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            assert isinstance(event, QDragEnterEvent)
            if local_files(event.mimeData()):
                event.acceptProposedAction()
                return True
        elif event.type() == QEvent.Type.Drop:
            assert isinstance(event, QDropEvent)
            if files := local_files(event.mimeData()):
                event.acceptProposedAction()
                self.documents.add_files(files)
                return True
        return super().eventFilter(watched, event)


def install_documents(window: MainWindow) -> WindowDrops:
    documents = window.session.documents
    composer = window.composer
    composer.attachments.bind(documents.tray)
    composer.sig_files_chosen.connect(documents.add_files)
    composer.sig_long_paste.connect(documents.add_paste)
    return WindowDrops(window)
