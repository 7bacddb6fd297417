"""The Trash window: chats moved to the trash, to restore or erase for good.

Owns the list and its three actions. Restore brings a chat back to the sidebar; "Delete
forever" and "Empty trash" ask once, then erase through `app.store.organise.erase` (rows,
search index, VACUUM) and remove the erased chats' composer drafts from the preferences, so
nothing of them stays on disk. Does not own the store queries.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.store import Store
from app.store.organise import erase

if TYPE_CHECKING:
    from app.chat.session import ChatSession
    from app.system.settings import Settings


class TrashDialog(QDialog):
    def __init__(
        self, session: ChatSession, settings: Settings, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("trashDialog")
        self.setWindowTitle(self.tr("Trash"))
        self.resize(460, 420)
        self.session, self.settings = session, settings
        self.list = QListWidget(self)
        self.list.setObjectName("trashList")
        self.list.setAccessibleName(self.tr("Chats in the trash"))
        self.list.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        self.empty_label = QLabel(self.tr("The trash is empty."), self)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.restore_button = QPushButton(self.tr("Restore"), self)
        self.erase_button = QPushButton(self.tr("Delete forever"), self)
        self.empty_button = QPushButton(self.tr("Empty trash"), self)
        for button in (self.restore_button, self.erase_button, self.empty_button):
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty_label)
        layout.addWidget(buttons)
        buttons.rejected.connect(self.reject)
        self.restore_button.clicked.connect(lambda: session.spawn(self.restore_selected()))
        self.erase_button.clicked.connect(self._on_erase_clicked)
        self.empty_button.clicked.connect(self._on_empty_clicked)
        self._show_count()

    async def refresh(self) -> None:
        convs = await self.session.store_db.call(Store.list_conversations, deleted=True)
        self.list.clear()
        for conv in convs:
            title = conv.title or self.tr("Untitled")
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(conv.deleted_at or 0))
            item = QListWidgetItem(self.tr("{0}  (deleted {1})").format(title, when))
            item.setData(Qt.ItemDataRole.UserRole, conv.id)
            self.list.addItem(item)
        self._show_count()

    def _show_count(self) -> None:
        empty = self.list.count() == 0
        self.empty_label.setVisible(empty)
        for button in (self.restore_button, self.erase_button, self.empty_button):
            button.setEnabled(not empty)

    def selected_ids(self) -> list[str]:
        return [str(i.data(Qt.ItemDataRole.UserRole)) for i in self.list.selectedItems()]

    async def restore_selected(self) -> None:
        for conversation_id in self.selected_ids():
            await self.session.store_db.call(Store.restore_conversation, conversation_id)
        await self.session.refresh_conversations()
        await self.refresh()

    async def erase(self, conversation_ids: list[str] | None) -> list[str]:
        """Erase the given chats (None: the whole trash) and their drafts, for good."""
        erased = await self.session.store_db.call(erase, conversation_ids)
        for conversation_id in erased:
            self.settings.set_draft(conversation_id, "")
        self.settings.sync()
        await self.refresh()
        return erased

    def _confirm(self, text: str, then: Callable[[], object]) -> QMessageBox:
        """Ask before erasing; ``then`` runs on Yes. open(), not exec(): a nested event loop
        would re-enter asyncio while a reply streams."""
        box = QMessageBox(
            QMessageBox.Icon.Warning, self.tr("Erase for good?"), text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self,
        )  # fmt: skip
        box.setDefaultButton(QMessageBox.StandardButton.No)

        def on_clicked(button: QAbstractButton) -> None:
            if box.standardButton(button) == QMessageBox.StandardButton.Yes:
                then()

        box.buttonClicked.connect(on_clicked)
        box.open()
        return box

    def _on_erase_clicked(self) -> None:
        ids = self.selected_ids()
        if ids:
            text = self.tr("Erase {0} chat(s)? This cannot be undone.").format(len(ids))
            self._confirm(text, lambda: self.session.spawn(self.erase(ids)))

    def _on_empty_clicked(self) -> None:
        text = self.tr("Erase every chat in the trash? This cannot be undone.")
        self._confirm(text, lambda: self.session.spawn(self.erase(None)))
