"""A new user's papercuts of issue 34 (part C) in the chat window, each on real widgets
offscreen, a real SQLite store and the real engine (tiny random model) where one is involved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QLocale
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QApplication

from app.chat.session import ChatSession
from app.listmodels.messages import MessageItem, MessageListModel
from app.portability.export import export_conversations, file_stem
from app.views.chat.chat_view import ChatView
from app.views.chat.status_bar import count_text
from app.views.documents.sources_fold import sources_html
from app.views.main_window import MainWindow
from engine.types import Backend, SamplingParams
from tests.app.conftest import GatedBackend, close_session, make_session

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=12, repetition_penalty=1.0)

STATS = {"completion_tokens": 512, "ttft_s": 0.42, "decode_tokens_per_s": 31.5}


def _chat(qtbot: Any, width: int) -> ChatView:
    view = ChatView(MessageListModel())
    qtbot.addWidget(view)
    view.resize(width, 400)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_c2_a_reply_header_too_long_for_the_row_ends_in_an_ellipsis(qtbot: Any) -> None:
    reply = MessageItem.of(
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


def test_c10_both_context_figures_are_grouped_the_users_way(
    session: ChatSession, qtbot: Any
) -> None:
    window = MainWindow(session)
    qtbot.addWidget(window)
    try:
        for locale, expected in (
            (QLocale(QLocale.Language.English, QLocale.Country.UnitedStates), "1,949 / 8,192"),
            (QLocale(QLocale.Language.German, QLocale.Country.Germany), "1.949 / 8.192"),
            (QLocale.c(), "1,949 / 8,192"),  # no LANG: grouped as English, not bare digits
        ):
            QLocale.setDefault(locale)
            window.on_session_context_changed(1949, 8192, 1024)
            assert f"Context {expected} tokens" in window.context_label.text()
    finally:
        QLocale.setDefault(QLocale.system())


def test_c10_a_reopened_chat_shows_the_count_stored_with_its_last_reply(
    run: Any, tiny_engine: Backend, tmp_path: Path, qtbot: Any
) -> None:
    db = tmp_path / "hearth.sqlite3"
    first = make_session(run, GatedBackend(tiny_engine), db)
    seen: list[int] = []
    first.sig_context_changed.connect(lambda used, _total, _cached: seen.append(used))
    try:
        first.set_params(GREEDY)
        run(first.send("Name three colours, please."))
        chat, before = first.conversation_id, seen[-1]
        history = first.history(first.messages.rowCount())
        estimate = run(first.bridge.count_tokens(history))
    finally:
        close_session(first)
    assert estimate != before  # what the meter showed after a relaunch, before this fix

    again = make_session(run, GatedBackend(tiny_engine), db)  # Hearth started again
    window = MainWindow(again)
    qtbot.addWidget(window)
    try:
        run(again.open_conversation(chat))
        assert window.context_label.text().startswith(f"Context {count_text(before)} / ")
    finally:
        close_session(again)


def test_c7_an_exported_chat_has_whole_words_in_its_title_and_no_local_path(
    session: ChatSession, run: Any, tmp_path: Path
) -> None:
    secret = "/home/alice/private/models/tiny-q4.gguf"
    session.set_model_spec(secret)  # as a model opened from a file
    session.set_params(GREEDY)
    first = "Plan a three-day trip to Kyoto in the autumn with temples, food markets and gardens"
    run(session.send(first))
    cid = session.conversation_id
    [path] = run(session.db.call(export_conversations, [cid], "markdown", tmp_path / "out"))
    text = path.read_text(encoding="utf-8")
    title = "Plan a three-day trip to Kyoto in the autumn with temples…"  # was "…temples, f"
    assert f"title: {json.dumps(title, ensure_ascii=False)}" in text and f"# {title}\n" in text
    assert path.name.startswith(title) and path.suffix == ".md"
    assert secret not in text and "/home/alice" not in text
    assert f"model: {json.dumps(session.model_info.name)}" in text  # the replies' model name
    [again] = run(session.db.call(export_conversations, [cid], "json", tmp_path / "out"))
    assert "/home/alice" not in again.read_text(encoding="utf-8")
    long = " ".join(["autumn"] * 60)  # an imported chat's title, longer than a file name may be
    stem = file_stem(long, None)
    assert stem.endswith("autumn…") and len(stem.encode()) <= 180


def test_c12_a_whole_attached_file_is_the_replys_source_1(
    session: ChatSession, run: Any, tmp_path: Path
) -> None:
    session.set_params(GREEDY)
    note = tmp_path / "notes.md"
    note.write_text("# Notes\n\nThe lighthouse keeper's cat is called Biscuit.\n", encoding="utf-8")
    assert run(session.documents.add_file(note)) is not None
    run(session.send("What is the cat called?"))
    reply = session.messages.item(1)
    header = sources_html(reply, dark=False)
    assert "Sources (1)" in header  # a fold, as answers from collections have
    reply.sources_open = True
    assert "[1] notes.md" in sources_html(reply, dark=False) and "Biscuit" in sources_html(
        reply, dark=False
    )
    chat = session.conversation_id
    run(session.open_conversation(None))
    run(session.open_conversation(chat))  # read back from the store
    assert session.messages.item(1).sources == reply.sources
    # Continuing the reply sends the file whole, as before: no <sources> block of it.
    history = session.history(1)
    again = run(session.documents.prompt(history, session.messages.item(1), continue_last=True))
    assert all("<sources>" not in m.content for m in again)
    assert any("Biscuit" in m.content for m in again)
