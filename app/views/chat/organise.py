"""Organising chats from the sidebar: pins, folders (with a filter), the trash and temporary
chats.

Owns `Organiser`, which adds a folder filter, a Trash button and a "Temporary" toggle to the
sidebar, a "Temporary chat — not saved" mark above the transcript, and carries out what the
sidebar's context menu asks (pin, move to a folder). Store work runs on the database worker
(``session.store_db``); the session refreshes the list. Does not own the trash dialog
(`app.views.dialogs.trash`), the store queries (`app.store.organise`) or temporary chats
themselves (`app.chat.temporary`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QBoxLayout, QComboBox, QInputDialog, QLabel, QPushButton

from app.chat.temporary import start_temporary
from app.store import Store
from app.store.organise import folders, set_folder
from app.views.dialogs.trash import TrashDialog

if TYPE_CHECKING:
    from app.system.settings import Settings
    from app.views.main_window import MainWindow

ALL = ""  # the filter's "All chats" entry


class Organiser(QObject):
    def __init__(self, window: MainWindow, settings: Settings) -> None:
        super().__init__(window)
        self.window, self.session, self.settings = window, window.session, settings
        sidebar = window.sidebar
        self.filter = QComboBox(sidebar)
        self.filter.setObjectName("folderFilter")
        self.filter.setAccessibleName(self.tr("Show folder"))
        self.filter.addItem(self.tr("All chats"), ALL)
        self.trash_button = QPushButton(self.tr("Trash"), sidebar)
        self.trash_button.setObjectName("trashButton")
        self.temporary_button = QPushButton(self.tr("Temporary"), sidebar)
        self.temporary_button.setObjectName("temporaryButton")
        self.temporary_button.setCheckable(True)
        self.temporary_button.setToolTip(self.tr("A new chat that is never saved to disk"))
        self.mark = QLabel(self.tr("Temporary chat — not saved"), window)
        self.mark.setObjectName("temporaryMark")
        self.mark.setStyleSheet("background: #8a5a00; color: white; padding: 4px;")
        self.mark.setVisible(False)
        self._place()
        self._connect()

    def _place(self) -> None:
        layout = self.window.sidebar.layout()
        assert isinstance(layout, QBoxLayout)
        at = layout.indexOf(self.window.sidebar.list)
        layout.insertWidget(at, self.filter)
        layout.insertWidget(1, self.temporary_button)  # right under "New chat"
        layout.addWidget(self.trash_button)
        column = self.window.chat.parentWidget()
        column_layout = column.layout() if column is not None else None
        if isinstance(column_layout, QBoxLayout):
            column_layout.insertWidget(0, self.mark)

    def _connect(self) -> None:
        sidebar, session = self.window.sidebar, self.session
        sidebar.sig_pin_requested.connect(self.on_pin_requested)
        sidebar.sig_folder_requested.connect(self.on_folder_requested)
        self.filter.activated.connect(self._on_filter_activated)
        self.trash_button.clicked.connect(self.open_trash)
        self.temporary_button.clicked.connect(self._on_temporary_clicked)
        session.sig_temporary_changed.connect(self._on_temporary_changed)
        session.conversations.modelReset.connect(self._refresh_folders)

    def _spawn(self, coro: Any) -> Any:
        return self.session.spawn(coro)

    # -- pins and folders -------------------------------------------------------------------
    def on_pin_requested(self, conversation_id: str, pinned: bool) -> Any:
        return self._spawn(self.pin(conversation_id, pinned))

    async def pin(self, conversation_id: str, pinned: bool) -> None:
        await self.session.store_db.call(Store.set_pinned, conversation_id, pinned)
        await self.session.refresh_conversations()
        self.window.sidebar.select(self.session.conversation_id or "")

    def on_folder_requested(self, conversation_id: str) -> QInputDialog:
        """Ask for the folder (an existing one or a new name); open(), not exec()."""
        dialog = QInputDialog(self.window)
        dialog.setWindowTitle(self.tr("Move to folder"))
        dialog.setLabelText(self.tr("Folder (leave empty for none):"))
        names = [self.filter.itemData(i) for i in range(1, self.filter.count())]
        dialog.setComboBoxItems(["", *names])
        dialog.setComboBoxEditable(True)
        dialog.textValueSelected.connect(
            lambda name: self._spawn(self.move_to_folder(conversation_id, name))
        )
        dialog.open()
        return dialog

    async def move_to_folder(self, conversation_id: str, folder: str) -> None:
        await self.session.store_db.call(set_folder, conversation_id, folder)
        await self.session.refresh_conversations()

    def _on_filter_activated(self, _index: int) -> None:
        self.session.folder_filter = str(self.filter.currentData() or ALL)
        self._spawn(self.session.refresh_conversations())

    def _refresh_folders(self) -> None:
        self._spawn(self.refresh_folders())

    async def refresh_folders(self) -> None:
        names = await self.session.store_db.call(folders)
        current = self.session.folder_filter
        if current and current not in names:
            names.append(current)  # keep the chosen one even when it emptied
        self.filter.blockSignals(True)
        while self.filter.count() > 1:
            self.filter.removeItem(1)
        for name in sorted(names, key=str.casefold):
            self.filter.addItem(name, name)
        self.filter.setCurrentIndex(max(0, self.filter.findData(current)))
        self.filter.blockSignals(False)

    # -- trash ------------------------------------------------------------------------------
    def open_trash(self) -> TrashDialog:
        dialog = TrashDialog(self.session, self.settings, self.window)
        dialog.open()
        self._spawn(dialog.refresh())
        return dialog

    # -- temporary chats --------------------------------------------------------------------
    def _on_temporary_clicked(self, checked: bool) -> None:
        if checked:
            self._spawn(start_temporary(self.session))
        else:
            self._spawn(self.session.open_conversation(None))

    def _on_temporary_changed(self, on: bool) -> None:
        self.mark.setVisible(on)
        self.temporary_button.setChecked(on)
        title = self.tr("Hearth — temporary chat") if on else self.tr("Hearth")
        self.window.setWindowTitle(title)
