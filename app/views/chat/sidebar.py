"""The conversation sidebar: search field, New button and the list of conversations.

Owns the widgets and their intents (`sig_*_requested`); renaming is in-place editing of the
list (double-click or F2), deleting asks nothing and offers Undo in the status bar instead.
Does not own the conversations (the session's `ConversationListModel`).
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.listmodels.conversations import ConversationListModel, IdRole, PinnedRole

SEARCH_DELAY_MS = 250


class Sidebar(QWidget):
    sig_new_requested = Signal()
    sig_open_requested = Signal(str)
    sig_delete_requested = Signal(str)
    sig_search_requested = Signal(str)
    sig_pin_requested = Signal(str, bool)  # conversation id, pin (True) or unpin
    sig_folder_requested = Signal(str)  # conversation id: choose its folder

    def __init__(self, model: ConversationListModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebar")
        self.new_button = QPushButton(self.tr("+  New chat"), self)
        self.new_button.setObjectName("newChatButton")
        self.search = QLineEdit(self)
        self.search.setObjectName("searchField")
        self.search.setPlaceholderText(self.tr("Search all chats…"))
        self.search.setClearButtonEnabled(True)
        self.list = QListView(self)
        self.list.setObjectName("conversationList")
        self.list.setModel(model)
        self.list.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.setUniformItemSizes(False)  # search hits take two lines
        # Long titles end in "…" instead of widening the list behind a horizontal scrollbar.
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setWordWrap(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.new_button)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._connect()

    def _connect(self) -> None:
        self.new_button.clicked.connect(self.sig_new_requested)
        self.list.clicked.connect(self._on_list_clicked)
        self.list.activated.connect(self._on_list_clicked)
        self.list.customContextMenuRequested.connect(self._on_list_context_menu)
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self._search_timer.timeout.connect(self._on_search_timer_timeout)
        delete = QAction(self.tr("Delete"), self.list)
        delete.setShortcut(QKeySequence.StandardKey.Delete)
        delete.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        delete.triggered.connect(self._on_delete_triggered)
        self.list.addAction(delete)

    def select(self, conversation_id: str) -> None:
        model = self.list.model()
        assert isinstance(model, ConversationListModel)
        row = model.row_of(conversation_id) if conversation_id else -1
        if row < 0:
            self.list.clearSelection()
            return
        self.list.setCurrentIndex(model.index(row))

    def _on_list_clicked(self, index: QModelIndex) -> None:
        if index.isValid():
            self.sig_open_requested.emit(str(index.data(IdRole)))

    def _on_search_timer_timeout(self) -> None:
        self.sig_search_requested.emit(self.search.text())

    def _on_delete_triggered(self) -> None:
        index = self.list.currentIndex()
        if index.isValid():
            self.sig_delete_requested.emit(str(index.data(IdRole)))

    def _on_list_context_menu(self, pos: QPoint) -> None:
        index = self.list.indexAt(pos)
        if not index.isValid():
            return
        menu = QMenu(self)
        pinned = bool(index.data(PinnedRole))
        pin = menu.addAction(self.tr("Unpin") if pinned else self.tr("Pin"))
        rename = menu.addAction(self.tr("Rename"))
        folder = menu.addAction(self.tr("Move to folder…"))
        delete = menu.addAction(self.tr("Move to trash"))
        chosen = menu.exec(self.list.viewport().mapToGlobal(pos))
        conversation_id = str(index.data(IdRole))
        if chosen is rename:
            self.list.edit(index)
        elif chosen is pin:
            self.sig_pin_requested.emit(conversation_id, not pinned)
        elif chosen is folder:
            self.sig_folder_requested.emit(conversation_id)
        elif chosen is delete:
            self.sig_delete_requested.emit(conversation_id)
