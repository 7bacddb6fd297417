"""What clicks on messages do: the action row (copy, edit, regenerate, continue, details,
switching alternatives), the context menu, copying a code block, and opening a link.

Owns turning those clicks into session calls and dialogs. Links in model output open only
after a click, and only for web and mail schemes. Does not own painting (the delegate) or
state (the `ChatSession`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPoint, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QMenu

from app.chat.session import ChatSession
from app.views.chat.message_text import code_blocks, details_text
from app.views.dialogs.common import EditDialog, TextDialog

if TYPE_CHECKING:
    from app.views.main_window import MainWindow

SAFE_SCHEMES = ("http", "https", "mailto")


class MessageActions(QObject):
    def __init__(self, window: MainWindow, session: ChatSession) -> None:
        super().__init__(window)
        self.window = window
        self.session = session

    def on_message_action(self, action: str, message_id: str) -> None:
        row = self.session.messages.row_of(message_id)
        if row < 0:
            return
        item = self.session.messages.item(row)
        s = self.session
        if action == "copy":
            QGuiApplication.clipboard().setText(item.record.content)
            self.window.on_session_notice(self.tr("Message copied."))
        elif action.startswith("code:"):
            self._copy_code(item.record.content, int(action.partition(":")[2]))
        elif action == "edit":
            self.open_edit(message_id, item.record.content)
        elif action == "regenerate":
            s.on_regenerate_requested(message_id)
        elif action == "continue":
            s.on_continue_requested(message_id)
        elif action in ("prev", "next"):
            s.on_navigate_requested(message_id, -1 if action == "prev" else 1)
        elif action == "details":
            TextDialog(self.tr("Message details"), details_text(item), self.window).open()

    def open_edit(self, message_id: str, text: str) -> None:
        # open(), not exec(): a nested event loop would re-enter asyncio mid-stream.
        dialog = EditDialog(text, self.window)
        dialog.setObjectName("editDialog")
        s = self.session
        dialog.accepted.connect(lambda: s.on_edit_submitted(message_id, dialog.text()))
        dialog.open()

    def on_queue_edit_returned(self, message_id: str, text: str) -> None:
        """An edit that waited for the model was cancelled: its text goes back to the dialog."""
        if self.session.messages.row_of(message_id) >= 0:
            self.open_edit(message_id, text)

    def on_chat_context_menu(self, pos: QPoint) -> None:
        index = self.window.chat.indexAt(pos)
        if not index.isValid():
            return
        item = self.session.messages.item(index.row())
        menu = QMenu(self.window)
        actions = {
            menu.addAction(self.tr("Copy")): "copy",
            menu.addAction(self.tr("Select text…")): "select",
        }
        for i in range(
            len(code_blocks(item.record.content)) if item.record.role == "assistant" else 0
        ):
            actions[menu.addAction(self.tr("Copy code block {0}").format(i + 1))] = f"code:{i}"
        if item.record.role == "user":
            actions[menu.addAction(self.tr("Edit…"))] = "edit"
        elif not item.streaming:
            actions[menu.addAction(self.tr("Regenerate"))] = "regenerate"
            actions[menu.addAction(self.tr("Details"))] = "details"
        chosen = menu.exec(self.window.chat.viewport().mapToGlobal(pos))
        if chosen is None:
            return
        if actions[chosen] == "select":
            TextDialog(self.tr("Message"), item.record.content, self.window).open()
        else:
            self.on_message_action(actions[chosen], item.id)

    def _copy_code(self, text: str, index: int) -> None:
        blocks = code_blocks(text)
        if 0 <= index < len(blocks):
            QGuiApplication.clipboard().setText(blocks[index])
            self.window.on_session_notice(self.tr("Code copied."))

    def on_link_clicked(self, url: QUrl) -> None:
        # Links in model output open only after a click, and only for web and mail schemes.
        if url.scheme() in SAFE_SCHEMES:
            QDesktopServices.openUrl(url)
