"""What a new user tripped over (issue 11, item 9), each checked on real widgets offscreen, a
real SQLite file and the real engine (tiny random model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QFileDialog

from app.application import Application
from app.chat.session import ChatSession
from app.store import Store
from app.system.settings import Settings
from app.views.chat.composer import Composer
from app.views.chat.message_text import message_summary
from app.views.theme import apply_theme
from engine.types import Backend, SamplingParams
from tests.app.conftest import GatedBackend

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=6, repetition_penalty=1.0)


def _app(qapp: Any, run: Any, tmp_path: Path, engine: Backend | None = None) -> Application:
    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    if engine is not None:
        run(hearth.load("tiny", lambda _progress: GatedBackend(engine)))
    return hearth


def _close(hearth: Application, run: Any) -> None:
    hearth.session.bridge.detach()
    run(hearth.shutdown())


def test_the_context_meter_follows_the_shown_alternative(session: ChatSession, run: Any) -> None:
    seen: list[tuple[int, int, int]] = []
    session.sig_context_changed.connect(lambda *a: seen.append(a))
    session.set_params(GREEDY)
    run(session.send("Hi"))
    reply = session.messages.item(1)
    session.set_params(GREEDY.replace(max_new_tokens=2))
    run(session.regenerate(reply.id))  # a shorter alternative beside it
    second = session.messages.item(1)
    seen.clear()
    run(session.navigate(second.id, -1))
    assert session.messages.item(1).id == reply.id
    # Each alternative shows what the engine counted when it was written (issue 34, C10).
    count = reply.record.stats["prompt_tokens"] + reply.record.stats["completion_tokens"]
    assert seen == [(count, session.model_info.context_window, 0)]
    run(session.navigate(reply.id, +1))
    other = second.record.stats["prompt_tokens"] + second.record.stats["completion_tokens"]
    assert seen[-1][0] == other and other != count


def test_a_reply_cut_off_by_a_crash_is_marked_continuable_and_its_chat_reopens(
    qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    with Store(tmp_path / "db.sqlite3") as store:  # the app crashed mid-reply
        store.create_conversation("older")
        conv = store.create_conversation("Crashed")
        user = store.add_message(conv.id, None, "user", "Tell me a story")
        store.add_message(conv.id, user.id, "assistant", "Once upon", status="streaming")
    hearth = _app(qapp, run, tmp_path, tiny_engine)  # last conversation never saved
    try:
        session, window = hearth.session, hearth.window
        assert session.conversation_id == conv.id  # the newest chat is selected
        assert window.sidebar.list.currentIndex().row() == 0
        reply = session.messages.item(1)
        assert reply.record.finish_reason == "partial" and "cut off" in message_summary(reply)
        delegate = window.chat.message_delegate
        layout = delegate.row_layout(window.chat.visualRect(session.messages.index(1)), reply)
        assert "continue" in [b.action for b in layout.buttons]
        session.set_params(GREEDY)
        run(session.continue_reply(reply.id))
        assert session.messages.item(1).record.content.startswith("Once upon")
    finally:
        _close(hearth, run)


def test_export_picker_starts_in_the_home_folder(
    qapp: Any, run: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    hearth = _app(qapp, run, tmp_path)
    asked: list[str] = []

    def pick(_parent: Any, _title: str, folder: str = "", *_a: Any) -> str:
        asked.append(folder)  # the native dialog cannot run headless: record where it opens
        return ""

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", pick)
    try:
        hearth.window._on_export("markdown", True)
        assert asked == [str(Path.home())]
    finally:
        run(hearth.shutdown())


def test_tab_leaves_the_system_prompt_box(qapp: Any, run: Any, tmp_path: Path, qtbot: Any) -> None:
    hearth = _app(qapp, run, tmp_path)
    window = hearth.window
    try:
        window.show()
        qtbot.waitExposed(window)
        box = window.panel.system_prompt
        box.setFocus()
        QApplication.processEvents()
        qtbot.keyClick(box, Qt.Key.Key_Tab)
        assert "\t" not in box.toPlainText() and not box.hasFocus()
    finally:
        run(hearth.shutdown())


def test_a_small_window_folds_the_panel_and_keeps_the_chat_wide(
    qapp: Any, run: Any, tmp_path: Path, qtbot: Any
) -> None:
    hearth = _app(qapp, run, tmp_path)
    window = hearth.window
    try:
        window.show()
        window.resize(800, 600)
        qtbot.waitExposed(window)
        QApplication.processEvents()
        assert not window.panel_scroll.isVisible() and not window.panel_action.isChecked()
        assert window.chat.width() >= 560
        window.panel_action.trigger()  # the toolbar toggle still shows it on demand
        assert window.panel_scroll.isVisible()
        window.resize(1400, 820)
        QApplication.processEvents()
        assert window.panel_scroll.isVisible()
    finally:
        run(hearth.shutdown())


def test_long_chat_titles_are_elided_without_a_scrollbar(
    qapp: Any, run: Any, tmp_path: Path, qtbot: Any
) -> None:
    with Store(tmp_path / "db.sqlite3") as store:
        store.create_conversation("A very long chat title " * 12)
    hearth = _app(qapp, run, tmp_path)
    window = hearth.window
    try:
        window.show()
        window.resize(800, 600)
        qtbot.waitExposed(window)
        QApplication.processEvents()
        listing = window.sidebar.list
        assert listing.model().rowCount() == 1
        assert not listing.horizontalScrollBar().isVisible()
        assert listing.textElideMode() == Qt.TextElideMode.ElideRight
    finally:
        run(hearth.shutdown())


def _fill(composer: Composer) -> QColor:
    """The colour inside the Send button, above its label, as painted on the composer."""
    rect = composer.button.geometry()
    image = composer.grab().toImage()
    return image.pixelColor(rect.center().x(), rect.top() + rect.height() // 5)


def test_disabled_send_looks_disabled_in_the_dark_theme(qapp: Any, qtbot: Any) -> None:
    apply_theme(qapp, dark=True)
    try:
        composer = Composer()
        qtbot.addWidget(composer)
        composer.show()
        qtbot.waitExposed(composer)
        composer.set_text("hello")
        enabled = _fill(composer)
        composer.set_text("")
        assert not composer.button.isEnabled()
        disabled = _fill(composer)
        page = qapp.palette().color(qapp.palette().ColorRole.Base)
        # Enabled: the accent fill. Disabled: no fill at all, the page shows through.
        assert abs(enabled.blue() - disabled.blue()) > 60
        assert abs(disabled.lightness() - page.lightness()) < 25
    finally:
        apply_theme(qapp, dark=False)
