"""Documents in the real window, offscreen: files through the composer become chips with the exact
fit count; a long paste becomes a chip, not text; a bad file shows its message and the draft stays;
a chip removes its document; files dropped on the window attach; the send goes through the real
engine and the user turn shows its attachment; a reply's Sources fold opens, its [n] marks link to
the passages, and a source opens in context, highlighted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QWidget

from app.chat.attachments import PASTE_THRESHOLD_CHARS
from app.chat.session import ChatSession
from app.listmodels.messages import MessageItem
from app.views.chat.message_text import message_html
from app.views.documents import sources_fold
from app.views.main_window import MainWindow
from engine.types import SamplingParams

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=4, repetition_penalty=1.0)


def _settle(run: Any, session: ChatSession) -> None:
    async def idle() -> None:
        import asyncio

        while session._tasks:  # the tray's reads and counts run as session tasks
            await asyncio.sleep(0.01)

    run(idle())


def test_attach_paste_drop_remove_and_send_in_the_window(
    session: ChatSession, run: Any, qtbot: Any, tmp_path: Path
) -> None:
    session.set_params(GREEDY)
    window = MainWindow(session)
    qtbot.addWidget(window)
    composer, bar = window.composer, window.composer.attachments
    composer.set_text("Summarise this, please")
    good = tmp_path / "plan.md"
    good.write_text("# Plan\n\nBuild the shed on Saturday.\n", encoding="utf-8")
    bad = tmp_path / "photo.txt"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" * 200)

    composer.sig_files_chosen.emit([str(good), str(bad)])  # as the paperclip's dialog does
    _settle(run, session)
    assert [c.text().split(" · ")[0] for c in bar.chips] == ["plan.md"]
    assert "tokens" in bar.chips[0].text()
    assert bar.error_label.text().startswith("photo.txt: ") and "binary" in bar.error_label.text()
    assert bar.fit_label.text().startswith("fits: ") and not bar.isHidden()
    assert composer.text() == "Summarise this, please"  # the draft survives the bad file

    long_text = "lorem ipsum " * (PASTE_THRESHOLD_CHARS // 10)
    mime = QMimeData()
    mime.setText(long_text)
    composer.edit.insertFromMimeData(mime)
    _settle(run, session)
    assert composer.text() == "Summarise this, please"  # not flooded
    assert bar.chips[1].text().startswith("Pasted text 1")
    bar.chips[1].click()  # removed before sending
    assert len(session.documents.tray.items) == 1

    drop = QMimeData()
    drop.setUrls([QUrl.fromLocalFile(str(good))])
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, drop,
        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
    )  # fmt: skip
    # Offscreen Qt delivers no synthetic drop without a drag in progress: the window's filter
    # is handed the event as QApplication would hand it.
    assert window.document_drops.eventFilter(window, event) and event.isAccepted()
    _settle(run, session)
    assert [a.name for a in session.documents.tray.items] == ["plan.md", "plan.md"]
    session.documents.tray.remove(1)
    _settle(run, session)

    run(session.send(composer.text()))
    assert not bar.chips and composer.text() == ""
    user = session.messages.item(0)
    assert user.attachments[0]["name"] == "plan.md"
    assert "Attached: plan.md · 36 B" in message_html(user, dark=False)

    # A document alone, no words: Send is enabled and the turn goes.
    run(session.open_conversation(None))
    assert not composer.button.isEnabled()
    composer.sig_files_chosen.emit([str(good)])
    _settle(run, session)
    assert composer.text() == "" and composer.button.isEnabled()
    run(session.send(""))
    assert session.messages.item(0).attachments[0]["name"] == "plan.md"
    assert session.conversations.rows()[0].title == "plan.md"


def test_sources_fold_links_and_context_dialog(qapp: Any) -> None:
    source = {"n": 1, "file": "guide.pdf", "locator": "page 3", "text": "Water the basil daily.",
              "before": "Herbs need light. ", "after": " Harvest often."}  # fmt: skip
    item = MessageItem.of("r1", "assistant", "Basil wants daily water [1].", sources=[source])
    folded = message_html(item, dark=False)
    assert "▸ Sources (1)" in folded and "Water the basil" not in folded
    assert f"href='{sources_fold.SOURCE_PREFIX}1'" in folded  # the [1] mark links to it
    assert sources_fold.handle_click(sources_fold.TOGGLE_HREF, item, None)
    item.revision += 1
    opened = message_html(item, dark=False)
    assert "▾ Sources (1)" in opened and "guide.pdf · page 3" in opened
    assert "“Water the basil daily.”" in opened

    shown: list[Any] = []
    parent = QWidget()  # the chat view, in the app
    assert sources_fold.handle_click(f"{sources_fold.SOURCE_PREFIX}1", item, parent)
    for widget in QApplication.topLevelWidgets():
        if widget.objectName() == "sourceDialog" and widget.isVisible():
            shown.append(widget)
    assert len(shown) == 1
    dialog = shown[0]
    assert dialog.highlighted == "Water the basil daily."
    assert dialog.text.toPlainText() == "…Herbs need light. Water the basil daily. Harvest often.…"
    dialog.close()
    parent.deleteLater()
