"""Paints one chat message (header, rendered Markdown, action row) and handles clicks on it.

Owns the per-row layout, a cache of laid-out QTextDocuments keyed by message id and revision
(so a streaming row is re-rendered alone and an untouched row never twice), hit-testing of the
action "buttons" and of links. Model output is inert: the document never loads resources, and
a link only emits ``sig_link_clicked`` after the user clicked it. Does not own the messages.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
    QUrl,
    Signal,
)
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontMetrics,
    QHelpEvent,
    QMouseEvent,
    QPainter,
    QPalette,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import QAbstractItemView, QStyledItemDelegate, QStyleOptionViewItem, QToolTip

from app.chat.images import ImageAttachment
from app.listmodels.messages import ItemRole, MessageItem, MessageListModel
from app.markdown.math import MATH_SCHEME
from app.markdown.render import document_css
from app.views.chat import thinking
from app.views.chat.math_images import math_image
from app.views.chat.message_images import THUMB_SIDE, handle_click, image_resource, images_of
from app.views.chat.message_text import message_html, message_summary
from app.views.documents import sources_fold
from app.views.tools import tools_fold

MAX_TEXT_WIDTH = 860
PAD = 14
GAP = 6
CACHE_SIZE = 600
STREAM_STEP = 120  # px: a streaming row's height grows in these steps
# Replies that can be continued: cut at the token limit, stopped, or cut off by a crash.
CONTINUABLE = ("length", "cancelled", "partial")
Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True, slots=True)
class Button:
    action: str  # "copy", "edit", "regenerate", "continue", "details", "prev", "next", "code:N"
    label: str
    rect: QRect


@dataclass(frozen=True, slots=True)
class RowLayout:
    card: QRect
    header: QRect
    body: QRect
    buttons: tuple[Button, ...]


class InertDocument(QTextDocument):
    """A document that never fetches anything: remote images and files stay unloaded. Its
    resources are a formula the renderer typeset itself (``hearth-math:``) and the thumbnails
    of the message's own pictures (``hearth-image:N``, `app.views.chat.message_images`)."""

    def __init__(
        self, device_pixel_ratio: float = 1.0, images: tuple[ImageAttachment, ...] = ()
    ) -> None:
        super().__init__()
        self._dpr = device_pixel_ratio
        self._images = images

    def loadResource(self, type: int, name: QUrl | str) -> object:
        url = QUrl(name) if isinstance(name, str) else name
        if type != QTextDocument.ResourceType.ImageResource:
            return None
        if url.scheme() == MATH_SCHEME:
            return math_image(url.toString(), self._dpr)
        return image_resource(url, self._images, self._dpr)


class MessageDelegate(QStyledItemDelegate):
    sig_action = Signal(str, str)  # action, message id
    sig_link_clicked = Signal(QUrl)

    def __init__(self, view: QAbstractItemView) -> None:
        super().__init__(view)
        self._view = view
        self._docs: OrderedDict[str, tuple[tuple[int, bool, int], QTextDocument]] = OrderedDict()
        self._dark = False
        self._width = view.viewport().width()
        self._items: MessageListModel | None = None
        self.refresh_palette()
        self._heights: dict[str, tuple[tuple[int, int, bool, int], int]] = {}

    # -- geometry ---------------------------------------------------------------------------
    def set_width(self, width: int) -> None:
        """The viewport width rows are laid out for (the view calls this on resize)."""
        self._width = width

    def set_items(self, model: MessageListModel) -> None:
        """Read rows straight from ``model`` in `sizeHint` instead of through ``data()``."""
        self._items = model

    def text_width(self) -> int:
        return max(120, min(MAX_TEXT_WIDTH, self._width - 4 * PAD))

    def dark(self) -> bool:
        return self._dark

    def refresh_palette(self) -> None:
        """Re-read light/dark and font metrics from the view (after a theme or font change)."""
        self._dark = self._view.palette().color(QPalette.ColorRole.Base).lightness() < 128
        fm = QFontMetrics(self._view.font())
        self._metrics = (max(1, fm.averageCharWidth()), fm.lineSpacing(), fm.height())

    def document(self, item: MessageItem) -> QTextDocument:
        width = self.text_width()
        key = (item.revision, self.dark(), width)
        cached = self._docs.get(item.id)
        if cached is not None and cached[0] == key:
            self._docs.move_to_end(item.id)
            return cached[1]
        doc = cached[1] if cached is not None and cached[0][:2] == key[:2] else None
        if doc is None:
            doc = InertDocument(self._view.devicePixelRatioF(), images_of(item))
            doc.setDefaultFont(self._view.font())
            doc.setDocumentMargin(0)
            doc.setDefaultStyleSheet(document_css(self.dark()))
            doc.setHtml(message_html(item, dark=self.dark()))
            _trim_outer_margins(doc)
        doc.setTextWidth(width)
        self._docs[item.id] = (key, doc)
        self._docs.move_to_end(item.id)
        while len(self._docs) > CACHE_SIZE:
            self._docs.popitem(last=False)
        return doc

    def row_layout(self, rect: QRect, item: MessageItem) -> RowLayout:
        fm = QFontMetrics(self._view.font())
        width = self.text_width()
        left = rect.left() + max(PAD, (rect.width() - width) // 2)
        line = fm.height()
        header = QRect(left, rect.top() + PAD, width, line)
        doc = self.document(item)
        body = QRect(left, header.bottom() + GAP, width, int(doc.size().height()) + 1)
        buttons = self._buttons(item, QPoint(left, body.bottom() + GAP), fm)
        bottom = body.bottom() + GAP + line + 6
        card = QRect(left - PAD // 2 - 4, rect.top() + 4, width + PAD + 8, bottom - rect.top())
        return RowLayout(card, header, body, buttons)

    def _buttons(self, item: MessageItem, origin: QPoint, fm: QFontMetrics) -> tuple[Button, ...]:
        specs: list[tuple[str, str]] = []
        if item.sibling_count > 1:
            specs.append(("prev", "‹"))
            specs.append(("count", f"{item.sibling_index + 1}/{item.sibling_count}"))
            specs.append(("next", "›"))
        if not item.streaming:
            specs.append(("copy", self.tr("Copy")))
            if item.record.role == "user":
                specs.append(("edit", self.tr("Edit")))
            elif item.record.role == "assistant":
                specs.append(("regenerate", self.tr("Regenerate")))
                if item.record.finish_reason in CONTINUABLE:
                    specs.append(("continue", self.tr("Continue")))
                specs.append(("details", self.tr("Details")))
        x, buttons = origin.x(), []
        for action, label in specs:
            w = fm.horizontalAdvance(label) + 12
            buttons.append(Button(action, label, QRect(x, origin.y(), w, fm.height() + 4)))
            x += w + 4
        return tuple(buttons)

    def known_height(self, message_id: str) -> int | None:
        """The height last reported to the view for this message."""
        cached = self._heights.get(message_id)
        return cached[1] if cached is not None else None

    def height_for(self, item: MessageItem) -> int:
        # A relayout of the list asks every row for its size: answer from the cache unless
        # this row changed, so 500 rows cost 500 dict lookups, not 500 layouts.
        width = self._width
        key = (item.revision, width, self._dark, item.sibling_count)
        cached = self._heights.get(item.id)
        if cached is not None and cached[0] == key:
            return cached[1]
        if item.streaming:
            # Grow in steps: each height change re-lays out the whole list (every row's
            # sizeHint), so a streaming row reserves room for a few more lines at a time.
            exact = self.row_layout(QRect(0, 0, width, 0), item).card.bottom() + 4
            height = -(-exact // STREAM_STEP) * STREAM_STEP
        elif self._has_document(item):
            height = self.row_layout(QRect(0, 0, width, 0), item).card.bottom() + 4
        else:
            # Never rendered: estimate, so opening a 500-message chat renders only the rows
            # on screen. `paint` corrects the estimate the first time the row is shown.
            height = self._estimate_height(item)
        self._heights[item.id] = (key, height)
        return height

    def _has_document(self, item: MessageItem) -> bool:
        cached = self._docs.get(item.id)
        return cached is not None and cached[0] == (item.revision, self.dark(), self.text_width())

    def _estimate_height(self, item: MessageItem) -> int:
        char_w, line_h, text_h = self._metrics
        per_line = max(1, self.text_width() // char_w)
        # Measuring text with a CJK fallback font is slow: count cells instead. CJK is two
        # cells and three UTF-8 bytes, ASCII one and one: cells ~ (bytes + chars) / 2.
        rows = sum(
            max(1, -(-(len(line.encode()) + len(line)) // (2 * per_line)))
            for line in item.record.content.splitlines()
        )
        body = int(max(1, rows) * line_h * 1.25)
        if images_of(item):  # a row of thumbnails above the words
            body += THUMB_SIDE + line_h
        return PAD + text_h + GAP + body + GAP + text_h + 6 + 8

    def _correct_height(self, index: Index, item: MessageItem, height: int) -> None:
        cached = self._heights.get(item.id)
        if cached is None or cached[1] == height:
            return
        self._heights[item.id] = (cached[0], height)
        # A delayed relayout (safe from inside paint). `sizeHintChanged` re-measured the rows
        # but, in batched mode, left their positions stale.
        self._view.scheduleDelayedItemsLayout()

    # -- Qt overrides -----------------------------------------------------------------------
    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        # Hot path (every row on every relayout): no Qt round trips beyond the index's row.
        item = self._items.item(index.row()) if self._items else index.data(ItemRole)
        return QSize(self._width, self.height_for(item))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        item: MessageItem = index.data(ItemRole)
        painter.save()
        try:  # an exception must not leave the painter saved: Qt aborts on unbalanced state
            layout = self.row_layout(option.rect, item)
            self._paint_row(painter, layout, item, option)
        finally:
            painter.restore()
        if not item.streaming:
            self._correct_height(index, item, layout.card.bottom() - option.rect.top() + 4)

    def _paint_row(
        self, painter: QPainter, layout: RowLayout, item: MessageItem, option: QStyleOptionViewItem
    ) -> None:
        palette = option.palette
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        self._paint_card(painter, layout, item, palette)
        self._paint_header(painter, layout, item, palette)
        visible = self._visible_body(painter, option.rect, layout.body)
        if not visible.isEmpty():
            painter.translate(QPointF(layout.body.topLeft()))
            ctx = QAbstractTextDocumentLayout.PaintContext()
            ctx.palette.setColor(QPalette.ColorRole.Text, palette.color(QPalette.ColorRole.Text))
            # Only the blocks (and table rows) inside the clip are drawn: a row taller than
            # the screen costs what the screen shows, not what the message holds.
            ctx.clip = QRectF(visible.translated(-layout.body.topLeft()))
            self.document(item).documentLayout().draw(painter, ctx)
            painter.translate(-QPointF(layout.body.topLeft()))
        self._paint_buttons(painter, layout, palette)

    def _visible_body(self, painter: QPainter, row: QRect, body: QRect) -> QRect:
        """The part of ``body`` that can reach the screen: inside the viewport and inside
        the painter's clip (the exposed region) when it has one."""
        visible = body.intersected(row).intersected(self._view.viewport().rect())
        if painter.hasClipping():
            visible = visible.intersected(painter.clipBoundingRect().toAlignedRect())
        return visible

    def _paint_card(
        self, painter: QPainter, layout: RowLayout, item: MessageItem, palette: QPalette
    ) -> None:
        if item.record.role == "assistant":
            return  # replies sit on the page; the user's turns get a tinted card
        # One opaque fill (the highlight blended into the page) instead of two layers: an
        # antialiased rounded rectangle is the costliest thing this delegate paints.
        base = palette.color(QPalette.ColorRole.Base)
        tint = palette.color(QPalette.ColorRole.Highlight)
        a = 0.11 if self.dark() else 0.085
        fill = QColor(
            round(base.red() * (1 - a) + tint.red() * a),
            round(base.green() * (1 - a) + tint.green() * a),
            round(base.blue() * (1 - a) + tint.blue() * a),
        )
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(fill)
        painter.drawRoundedRect(QRectF(layout.card), 10, 10)

    def _paint_header(
        self, painter: QPainter, layout: RowLayout, item: MessageItem, palette: QPalette
    ) -> None:
        font = QFont(self._view.font())
        font.setBold(True)
        painter.setFont(font)
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        who = self._who(item)
        painter.drawText(layout.header, Qt.AlignmentFlag.AlignLeft, who)
        meta_rect, meta = self.header_meta(layout, item)
        if meta:
            painter.setFont(self._view.font())
            color = (
                QColor("#d9534f")
                if item.record.error
                else palette.color(QPalette.ColorRole.PlaceholderText)
            )
            painter.setPen(color)
            painter.drawText(meta_rect, Qt.AlignmentFlag.AlignLeft, meta)

    def _who(self, item: MessageItem) -> str:
        return {"user": self.tr("You"), "assistant": self.tr("Assistant")}.get(
            item.record.role, self.tr("System")
        )

    def header_meta(self, layout: RowLayout, item: MessageItem) -> tuple[QRect, str]:
        """Where the stats line goes beside the role, and its text elided to fit there: a
        narrow window showed "settings changed whi" with nothing saying more was cut."""
        bold = QFont(self._view.font())
        bold.setBold(True)
        offset = QFontMetrics(bold).horizontalAdvance(self._who(item)) + 12
        rect = layout.header.adjusted(offset, 0, 0, 0)
        meta = message_summary(item)
        fm = QFontMetrics(self._view.font())
        return rect, fm.elidedText(meta, Qt.TextElideMode.ElideRight, max(0, rect.width()))

    def _paint_buttons(self, painter: QPainter, layout: RowLayout, palette: QPalette) -> None:
        painter.setFont(self._view.font())
        painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        for button in layout.buttons:
            painter.drawText(button.rect, Qt.AlignmentFlag.AlignCenter, button.label)

    def editorEvent(
        self, event: QEvent, model: object, option: QStyleOptionViewItem, index: Index
    ) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.MouseButtonRelease, QEvent.Type.MouseMove):
            return False
        assert isinstance(event, QMouseEvent)
        item: MessageItem = index.data(ItemRole)
        layout = self.row_layout(option.rect, item)
        pos = event.position().toPoint()
        button = next((b for b in layout.buttons if b.rect.contains(pos)), None)
        href = self._anchor_at(item, layout, pos)
        if kind == QEvent.Type.MouseMove:
            clickable = (button is not None and button.action != "count") or bool(href)
            shape = Qt.CursorShape.PointingHandCursor if clickable else Qt.CursorShape.ArrowCursor
            self._view.viewport().setCursor(shape)
            return False
        if event.button() != Qt.MouseButton.LeftButton:
            return False
        if button is not None and button.action != "count":
            self.sig_action.emit(button.action, item.id)
            return True
        if href:
            self._on_anchor_clicked(href, item)
            return True
        return False

    def helpEvent(
        self, event: QHelpEvent, view: QAbstractItemView, option: QStyleOptionViewItem, index: Index
    ) -> bool:
        item: MessageItem | None = index.data(ItemRole) if index.isValid() else None
        if item is None or item.record.role != "assistant":
            return super().helpEvent(event, view, option, index)
        layout = self.row_layout(option.rect, item)
        if layout.header.contains(event.pos()):
            from app.views.chat.message_text import settings_tooltip

            tip = settings_tooltip(item)
            summary = message_summary(item)
            if self.header_meta(layout, item)[1] != summary:  # cut: the whole line comes first
                tip = f"{summary}\n{tip}"
            QToolTip.showText(event.globalPos(), tip, view)
            return True
        return super().helpEvent(event, view, option, index)

    def _anchor_at(self, item: MessageItem, layout: RowLayout, pos: QPoint) -> str:
        if not layout.body.contains(pos):
            return ""
        doc = self.document(item)
        return doc.documentLayout().anchorAt(QPointF(pos - layout.body.topLeft()))

    def _on_anchor_clicked(self, href: str, item: MessageItem) -> None:
        if href == thinking.TOGGLE_HREF:
            thinking.toggle(item)
            items = self._items
            if items is not None and (row := items.row_of(item.id)) >= 0:
                items.touch(row)  # re-render and re-measure this row alone
            return
        if handle_click(href, item, self._view):  # a picture: shown large
            return
        if tools_fold.handle_click(href, item) or sources_fold.handle_click(
            href, item, self._view
        ):  # the Tools fold; Sources: fold, show one
            items = self._items
            if items is not None and (row := items.row_of(item.id)) >= 0:
                items.touch(row)
            return
        if href.startswith("copy-code:"):
            self.sig_action.emit("code:" + href.partition(":")[2], item.id)
            return
        self.sig_link_clicked.emit(QUrl(href))

    def forget(self) -> None:
        """Drop cached documents (theme or font changed)."""
        self.refresh_palette()
        self._docs.clear()
        self._heights.clear()


def _trim_outer_margins(doc: QTextDocument) -> None:
    """Drop the first block's top and the last block's bottom margin (<p> has 12 px each):
    the row layout provides the spacing around a message."""
    for block, top in ((doc.firstBlock(), True), (doc.lastBlock(), False)):
        cursor = QTextCursor(block)
        fmt = cursor.blockFormat()
        fmt.setTopMargin(0) if top else fmt.setBottomMargin(0)
        cursor.setBlockFormat(fmt)
