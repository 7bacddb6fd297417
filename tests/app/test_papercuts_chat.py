"""A new user's papercuts of issue 34 (part C) in the chat window, each on real widgets
offscreen, a real SQLite store and the real engine (tiny random model) where one is involved."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from app.listmodels.messages import MessageItem, MessageListModel
from app.views.chat.chat_view import ChatView

STATS = {"completion_tokens": 512, "ttft_s": 0.42, "decode_tokens_per_s": 31.5}


def _chat(qtbot: Any, width: int) -> ChatView:
    view = ChatView(MessageListModel())
    qtbot.addWidget(view)
    view.resize(width, 400)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_c2_a_reply_header_too_long_for_the_row_ends_in_an_ellipsis(qtbot: Any) -> None:
    reply = MessageItem(
        "r1", "assistant", "Hello", finish_reason="length", stats=STATS,
        param_changes=[{"token_index": 3, "params": {"temperature": 0.2}}],
    )  # fmt: skip
    for width, cut in ((380, True), (1200, False)):
        chat = _chat(qtbot, width)
        chat.message_model().set_items([reply])
        QApplication.processEvents()
        delegate = chat.message_delegate
        layout = delegate.row_layout(chat.visualRect(chat.model().index(0, 0)), reply)
        rect, shown = delegate.header_meta(layout, reply)
        assert shown.endswith("…") is cut, shown
        assert QFontMetrics(chat.font()).horizontalAdvance(shown) <= rect.width()
        if not cut:
            assert shown.endswith("settings changed while writing")
