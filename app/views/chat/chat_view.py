"""The virtualised chat transcript: a QListView over `MessageListModel` painted by the delegate.

Owns scrolling behaviour (stick to the bottom while a reply streams, unless the user scrolled
up to read) and re-layout of only the row whose height changed. Does not own messages or
rendering details (see `app.views.chat.message_delegate`).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QModelIndex, Qt, QTimer
from PySide6.QtWidgets import QAbstractItemView, QFrame, QListView, QWidget

from app.listmodels.messages import ItemRole, MessageListModel
from app.views.chat.message_delegate import MessageDelegate

PRERENDER_ROWS = 12


class ChatView(QListView):
    def __init__(self, model: MessageListModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setModel(model)
        self.message_delegate = MessageDelegate(self)
        self.message_delegate.set_items(model)
        self.setItemDelegate(self.message_delegate)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setUniformItemSizes(False)
        # One pass (every row's cached or estimated height: ~10 ms for 500 rows). Batched
        # layout freezes less when a long chat opens, but leaves rows below the current batch
        # unplaced for a few frames on every relayout, and the streaming row is the last one.
        self.setLayoutMode(QListView.LayoutMode.SinglePass)
        self.setMouseTracking(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self._stick = True
        self._adjusting = False
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self.verticalScrollBar().rangeChanged.connect(self._on_range_changed)
        model.rowsInserted.connect(self._on_rows_inserted)
        model.modelReset.connect(self._on_model_reset)

    def message_model(self) -> MessageListModel:
        model = self.model()
        assert isinstance(model, MessageListModel)
        return model

    def at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 8

    def _on_scrolled(self, _value: int) -> None:
        if not self._adjusting:
            self._stick = self.at_bottom()

    def _on_range_changed(self, _low: int, high: int) -> None:
        if self._stick:
            self._adjusting = True  # our own scroll must not clear the stickiness
            self.verticalScrollBar().setValue(high)
            self._adjusting = False

    def dataChanged(  # type: ignore[override]
        self, top: QModelIndex, bottom: QModelIndex, roles: Sequence[int] = ()
    ) -> None:
        # QListView re-lays out every row (a sizeHint call each) on any dataChanged: 50 ms
        # with 500 messages. A streaming row whose height did not change only needs a repaint
        # of its own rectangle; only a real height change goes through the full relayout.
        delegate = self.message_delegate
        resized = False
        for row in range(top.row(), bottom.row() + 1):
            item = self.model().index(row, 0).data(ItemRole)
            before = delegate.known_height(item.id)
            resized |= before is None or delegate.height_for(item) != before
        if resized:
            super().dataChanged(top, bottom, list(roles))
            self.scheduleDelayedItemsLayout()  # positions too, not only sizes (batched mode)
        else:
            rect = self.visualRect(top).united(self.visualRect(bottom))
            self.viewport().update(rect)
        if self._stick:
            self._scroll_to_end_soon()

    def _on_rows_inserted(self, _parent: QModelIndex, _first: int, _last: int) -> None:
        self._stick = True  # a new turn: follow it
        self._scroll_to_end_soon()

    def _on_model_reset(self) -> None:
        # A chat opens at its end: render the last rows now so their heights are exact and
        # the first frame is right; rows above keep estimates until they are scrolled to.
        model = self.message_model()
        for row in range(max(0, model.rowCount() - PRERENDER_ROWS), model.rowCount()):
            self.message_delegate.document(model.item(row))
        self._stick = True
        self._scroll_to_end_soon()

    def _scroll_to_end_soon(self) -> None:
        # After the delayed relayout Qt schedules, so the maximum is up to date.
        QTimer.singleShot(0, self.scrollToBottom)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange):
            self.message_delegate.forget()  # rendered HTML carries light or dark colours
            self.scheduleDelayedItemsLayout()
        super().changeEvent(event)

    def viewportEvent(self, event: QEvent) -> bool:
        # The viewport also narrows when the scroll bar appears: track its own size.
        if event.type() == QEvent.Type.Resize:
            self.message_delegate.set_width(self.viewport().width())
        return super().viewportEvent(event)

    def resizeEvent(self, event: object) -> None:  # type: ignore[override]
        stick = self.at_bottom()
        super().resizeEvent(event)  # type: ignore[arg-type]
        if stick:
            self._scroll_to_end_soon()
