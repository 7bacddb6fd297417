"""The shown branch of one conversation as a Qt list model (one row per message).

Owns `MessageItem` (GUI-thread holder of a message's `MessageRecord` plus its place among
alternatives) and `MessageListModel`. Streaming text is appended in place and announced with a
single-row ``dataChanged``, so the view re-lays out only that row. Does not own persistence or
the tree (the session decides which branch is shown).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt

from app.store.records import RECORD_FIELDS, ImageAttachment, MessageRecord

ItemRole = Qt.ItemDataRole.UserRole + 1
RevisionRole = Qt.ItemDataRole.UserRole + 2
Index = QModelIndex | QPersistentModelIndex


@dataclass
class MessageItem:
    """One row: a message's `MessageRecord` plus where it sits and how it is shown.

    Mutable, GUI thread only; ``revision`` bumps on every content change. The record is frozen
    (the store, import/export and this row share it): a change replaces it (`update`).
    """

    id: str
    record: MessageRecord
    parent_id: str | None = None
    sibling_index: int = 0
    sibling_count: int = 1
    streaming: bool = False
    revision: int = 0
    thinking_open: bool | None = None  # the Thinking section, as the user set it (None: auto)
    # Documents attached to a user turn ({"name", "text", "size", "kind", "tokens", "sha256"}) and
    # the passages a reply was given to cite ({"n", "file", "locator", "text", "before", "after"}).
    attachments: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    sources_open: bool = False  # the reply's Sources section is unfolded
    # A reply's tool calls and their results (`app.mcp.approval.ToolRecord` dicts), folded under it.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tools_open: bool = False  # the reply's Tools section is unfolded
    # A user turn's pictures (schema V8), sent to a model that can see as `engine.types.ImageRef`s.
    images: tuple[ImageAttachment, ...] = ()

    @classmethod
    def of(cls, id: str, role: str, content: str, **fields: Any) -> MessageItem:
        """A row from its id, role, text and any other fields, record's and row's by name."""
        record = {k: fields.pop(k) for k in RECORD_FIELDS if k in fields}
        return cls(id, MessageRecord(role=role, content=content, **record), **fields)

    def update(self, **changes: Any) -> None:
        """Replace record fields (``content=...``); the caller announces the change."""
        self.record = replace(self.record, **changes)


class MessageListModel(QAbstractListModel):
    """Rows are the messages of the shown branch, oldest first."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._items: list[MessageItem] = []

    # -- Qt API -----------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt signature
        return 0 if parent.isValid() else len(self._items)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._items):
            return None
        item = self._items[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return item.record.content
        if role == ItemRole:
            return item
        if role == RevisionRole:
            return item.revision
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled

    # -- edits from the session -------------------------------------------------------------
    def items(self) -> list[MessageItem]:
        return list(self._items)

    def item(self, row: int) -> MessageItem:
        return self._items[row]

    def row_of(self, message_id: str) -> int:
        for row in range(len(self._items) - 1, -1, -1):  # recent rows are the usual target
            if self._items[row].id == message_id:
                return row
        return -1

    def set_items(self, items: list[MessageItem]) -> None:
        self.beginResetModel()
        self._items = list(items)
        self.endResetModel()

    def replace_tail(self, from_row: int, items: list[MessageItem]) -> None:
        """Drop rows ``from_row..`` and append ``items`` (switching to another branch)."""
        from_row = max(0, min(from_row, len(self._items)))
        if from_row < len(self._items):
            self.beginRemoveRows(QModelIndex(), from_row, len(self._items) - 1)
            del self._items[from_row:]
            self.endRemoveRows()
        self.append(items)

    def append(self, items: list[MessageItem]) -> None:
        if not items:
            return
        start = len(self._items)
        self.beginInsertRows(QModelIndex(), start, start + len(items) - 1)
        self._items.extend(items)
        self.endInsertRows()

    def append_text(self, row: int, text: str) -> None:
        item = self._items[row]
        item.update(content=item.record.content + text)
        self.touch(row)

    def touch(self, row: int) -> None:
        """Announce that the item at ``row`` changed (content, stats, flags)."""
        self._items[row].revision += 1
        index = self.index(row)
        self.dataChanged.emit(index, index)
