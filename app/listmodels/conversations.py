"""The sidebar's list of conversations (or of search hits) as a Qt list model.

Owns `ConversationRow` and `ConversationListModel`; editing a title through the view emits
``sig_rename_requested`` and leaves the actual rename (and the store) to the session. Does not
own the store.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QCoreApplication,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)

IdRole = Qt.ItemDataRole.UserRole + 1
SnippetRole = Qt.ItemDataRole.UserRole + 2
PinnedRole = Qt.ItemDataRole.UserRole + 3
Index = QModelIndex | QPersistentModelIndex
PIN_MARK = "📌"


@dataclass(frozen=True, slots=True)
class ConversationRow:
    id: str
    title: str
    updated_at: float
    snippet: str = ""  # search hit context; empty in the plain list
    message_id: str | None = None  # the matching message, for search hits
    pinned: bool = False  # listed first, with a pin mark
    folder: str = ""  # the folder it lies in ('' = none)


class ConversationListModel(QAbstractListModel):
    sig_rename_requested = Signal(str, str)  # conversation id, new title

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[ConversationRow] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt signature
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        title = row.title or QCoreApplication.translate("ConversationList", "Untitled")
        if role == Qt.ItemDataRole.DisplayRole and row.pinned:
            title = f"{PIN_MARK} {title}"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            pinned = QCoreApplication.translate("ConversationList", "Pinned: {0}")
            return pinned.format(title) if row.pinned else title
        if role == Qt.ItemDataRole.DisplayRole and row.snippet:
            # A search hit shows where it matched, on a second line.
            return f"{title}\n{_one_line(row.snippet)}"
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return title
        if role == Qt.ItemDataRole.ToolTipRole:
            return row.snippet or _when(row.updated_at)
        if role == IdRole:
            return row.id
        if role == SnippetRole:
            return row.snippet
        if role == PinnedRole:
            return row.pinned
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or not index.isValid():
            return False
        title = str(value).strip()
        row = self._rows[index.row()]
        if not title or title == row.title:
            return False
        self._rows[index.row()] = dataclasses.replace(row, title=title)
        self.dataChanged.emit(index, index)
        self.sig_rename_requested.emit(row.id, title)
        return True

    # -- edits from the session -------------------------------------------------------------
    def set_rows(self, rows: list[ConversationRow]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def rows(self) -> list[ConversationRow]:
        return list(self._rows)

    def row_of(self, conversation_id: str) -> int:
        return next((i for i, r in enumerate(self._rows) if r.id == conversation_id), -1)

    def upsert_top(self, row: ConversationRow) -> None:
        """Move (or add) ``row`` to the top (below the pinned ones, unless pinned itself): the
        most recently used conversation."""
        self.remove(row.id)
        top = 0 if row.pinned else sum(1 for r in self._rows if r.pinned)
        self.beginInsertRows(QModelIndex(), top, top)
        self._rows.insert(top, row)
        self.endInsertRows()

    def remove(self, conversation_id: str) -> None:
        i = self.row_of(conversation_id)
        if i >= 0:
            self.beginRemoveRows(QModelIndex(), i, i)
            del self._rows[i]
            self.endRemoveRows()


def _one_line(text: str, limit: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))
