"""Hostile model output (issue 12, row 4) renders to bounded HTML, and the chat paints only
what is visible. Each input here froze the GUI for seconds to minutes before the caps; the
assertions are on structure (sizes, counts), never on time."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QRect
from PySide6.QtGui import QImage, QPainter, QStandardItemModel
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem

from app.listmodels.messages import MessageItem, MessageListModel
from app.markdown import limits
from app.markdown.linkify import _trim
from app.markdown.render import (
    RenderLabels,
    StreamingRenderer,
    extract_code_blocks,
    render_markdown,
)
from app.views.chat.chat_view import ChatView
from app.views.chat.message_text import message_summary
from tests.app.test_markdown_render import assert_inert

LABELS = RenderLabels(
    line_shortened="LINE-CUT",
    text_shortened="TEXT-CUT",
    rows_hidden="ROWS-HIDDEN {0}",
    lines_hidden="LINES-HIDDEN {0}",
)
# Far more than any cap, so HTML size is bounded by the caps alone.
BOUND = 2 * limits.MAX_TEXT_CHARS * 12


def one_mb_code_line() -> str:
    return "```python\n" + "x = 1; " * (1_000_000 // 7) + "\n```\n"


def test_a_1mb_single_line_code_block_shows_a_shortened_line_but_copies_whole() -> None:
    text = one_mb_code_line()
    html = render_markdown(text, labels=LABELS, wrap_code=True)
    assert len(html) < limits.MAX_LINE_CHARS * 12  # was 10 MB of spans
    assert html.count("LINE-CUT") == 1
    assert_inert(html)
    assert extract_code_blocks(text) == ["x = 1; " * (1_000_000 // 7)]  # Copy: all of it


def test_a_long_prose_line_is_shortened_with_a_visible_note() -> None:
    html = render_markdown("word " * 100_000, labels=LABELS)
    assert "LINE-CUT" in html and "TEXT-CUT" in html
    assert html.count("word") <= limits.MAX_LINE_CHARS // 5 + 1


def test_a_10k_row_table_shows_its_first_rows_and_how_many_are_hidden() -> None:
    rows = 10_000
    text = "| n | v |\n|---|---|\n" + "".join(f"| {i} | v{i} |\n" for i in range(rows))
    html = render_markdown(text, labels=LABELS)
    assert html.count("<tr>") == limits.MAX_TABLE_ROWS + 1  # + the header row
    shown = limits.MAX_TEXT_CHARS // len("| 9999 | v9999 |\n")  # about what fits the text cap
    hidden = int(html.split("ROWS-HIDDEN ")[1].split("<")[0])
    assert hidden >= shown - limits.MAX_TABLE_ROWS  # the count of rows within the shown text
    assert "TEXT-CUT" in html  # and the rest of the message is announced too
    assert len(html) < BOUND


def test_a_short_table_is_untouched() -> None:
    text = "| a | b |\n|---|---|\n| 1 | 2 |\n\nafter"
    html = render_markdown(text, labels=LABELS)
    assert html.count("<tr>") == 2 and "ROWS-HIDDEN" not in html and "after" in html


def test_a_code_block_with_many_lines_shows_the_cap_and_a_count() -> None:
    lines = limits.MAX_CODE_LINES + 500
    code = "\n".join(f"print({i})" for i in range(lines))
    html = render_markdown(f"```python\n{code}\n```", labels=LABELS)
    assert "LINES-HIDDEN 500" in html
    assert f"print({limits.MAX_CODE_LINES - 1})" in html
    assert f"print({limits.MAX_CODE_LINES})" not in html
    assert extract_code_blocks(f"```python\n{code}\n```") == [code]


def test_highlighting_is_skipped_past_its_cap() -> None:
    big = "\n".join(f"def f{i}(): return {i}" for i in range(2000))
    assert len(big) > limits.MAX_HIGHLIGHT_CHARS
    html = render_markdown(f"```python\n{big}\n```")
    assert "<span" not in html  # plain, escaped text
    assert "<span" in render_markdown("```python\ndef f(): return 1\n```")


def test_model_output_cannot_forge_a_shortening_note() -> None:
    html = render_markdown(f"hello {limits.LINE_MARK} world", labels=LABELS)
    assert "LINE-CUT" not in html and limits.LINE_MARK not in html


def test_a_url_followed_by_100k_parens_trims_in_linear_time() -> None:
    # The old trim recounted the whole URL per dropped ")": a million would take hours.
    url = "https://example.com/a" + ")" * 1_000_000
    assert _trim(url) == "https://example.com/a"
    assert _trim("https://e.com/a_(b))") == "https://e.com/a_(b)"
    assert _trim("https://e.com/x).") == "https://e.com/x"
    html = render_markdown("see https://example.com/a" + ")" * 100_000, labels=LABELS)
    assert 'href="https://example.com/a"' in html
    assert len(html) < BOUND


def test_streaming_a_runaway_reply_keeps_the_same_shown_part() -> None:
    renderer = StreamingRenderer(labels=LABELS)
    text = "".join(f"line {i}\n\n" for i in range(20_000))  # ~200k characters
    frames = [renderer.render(text[:end]) for end in range(90_000, len(text), 30_000)]
    final = renderer.render(text)
    assert all("TEXT-CUT" in frame for frame in frames[1:])
    assert final == render_markdown(text, labels=LABELS)
    assert len(final) < BOUND


# --- the chat view: painting touches only what is visible ------------------------------------


@pytest.fixture
def chat(qtbot: Any) -> ChatView:
    model = MessageListModel()
    view = ChatView(model)
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    qtbot.waitExposed(view)
    return view


def _table_reply(rows: int) -> MessageItem:
    text = "| n | v |\n|---|---|\n" + "".join(f"| {i} | v{i} |\n" for i in range(rows))
    return MessageItem.of("big", "assistant", text, finish_reason="stop")


def test_painting_a_tall_message_draws_only_the_visible_rows(chat: ChatView) -> None:
    item = _table_reply(limits.MAX_TABLE_ROWS)
    chat.message_model().set_items([item])
    QApplication.processEvents()
    delegate = chat.message_delegate
    doc = delegate.document(item)
    assert doc.size().height() > 4 * chat.viewport().height()  # far taller than the screen
    # Paint the row into an image as the view does, then read which table rows got ink:
    # rows below the viewport must stay blank.
    option = QStyleOptionViewItem()
    option.rect = QRect(0, 0, chat.viewport().width(), delegate.height_for(item))
    option.palette = chat.palette()
    image = QImage(option.rect.size(), QImage.Format.Format_ARGB32)
    image.fill(0xFFFFFFFF)
    painter = QPainter(image)
    delegate.paint(painter, option, chat.model().index(0, 0))
    assert painter.isActive()  # save/restore balanced: the painter is still usable
    painter.end()
    height = chat.viewport().height()
    assert _has_ink(image, 0, height)
    assert not _has_ink(image, height + 40, image.height() - 200)


def _has_ink(image: QImage, top: int, bottom: int) -> bool:
    """Whether any pixel in rows [top, bottom) is not white."""
    bits, per_line = bytes(image.constBits()), image.bytesPerLine()
    rows = bits[max(0, top) * per_line : min(bottom, image.height()) * per_line]
    return rows.count(b"\xff") != len(rows)


def test_a_failing_paint_restores_the_painter(chat: ChatView) -> None:
    # An index of another model has no MessageItem: laying the row out raises inside paint.
    foreign = QStandardItemModel(1, 1)
    image = QImage(400, 300, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    option = QStyleOptionViewItem()
    option.rect = QRect(0, 0, 400, 300)
    option.palette = chat.palette()
    transform = painter.transform()
    with pytest.raises(AttributeError):
        chat.message_delegate.paint(painter, option, foreign.index(0, 0))
    assert painter.transform() == transform
    painter.save()  # the save stack is balanced: one save, one restore, then end() is clean
    painter.restore()
    assert painter.end()


def test_a_message_with_bad_stored_values_paints(chat: ChatView, qtbot: Any) -> None:
    item = MessageItem.of(
        "odd",
        "assistant",
        "text",
        finish_reason="stop",
        stats={"ttft_s": "x", "completion_tokens": "many", "decode_tokens_per_s": None},
    )
    chat.message_model().set_items([item])
    chat.viewport().repaint()
    QApplication.processEvents()
    assert chat.message_delegate.document(item).toPlainText().strip() == "text"
    assert "first token" not in message_summary(item)  # nothing made up from bad values
