"""Images in the real window, offscreen (issue 31 item 5), against real engines: a tiny
random-weight Gemma 4 with its mmproj beside it (`tests.engine.support.image_chat`, it can see
and offers budgets) and the tiny text-only model (``tiny_engine``: no projector).

Through the API the picture button uses, a drop of an image file on the window (beside a
document, which stays a document), a drop on the text box and a paste of pixels from the
clipboard: each becomes a chip with its thumbnail and the engine's token count. The budget
chosen on a chip reaches the attachment sent; ✕ removes a chip. A bad image says one line and
the typed text stays; a text-only model greys the picture button with its reason and refuses a
drop in words. The sent turn shows its thumbnail, and a click on it opens the picture large.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication, QImage
from PySide6.QtWidgets import QApplication

from app.views.chat.image_viewer import ImageViewer
from app.views.main_window import MainWindow
from engine.engine import Engine
from engine.types import Backend, SamplingParams
from tests.app.conftest import close_session, make_session
from tests.engine.support import image_chat

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=3, repetition_penalty=1.0)


@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """A tiny Gemma 4 that can see: budgets 70 … 1,120, its default first."""
    model, _mmproj, _picture = image_chat.make_case("gemma4", tmp_path_factory.mktemp("gemma4"))
    engine = Engine(str(model), context_window=512)
    assert engine.info.vision_refusal == "" and engine.info.image_budgets
    yield engine
    engine.close()


def _window(run: Any, backend: Backend, tmp_path: Path, qtbot: Any) -> MainWindow:
    session = make_session(run, backend, tmp_path / "hearth.sqlite3")
    window = MainWindow(session)
    qtbot.addWidget(window)
    window.composer.images.images_folder = tmp_path / "images"
    window.on_session_model_loaded(backend.info)
    return window


@pytest.fixture
def window(run: Any, seeing: Engine, tmp_path: Path, qtbot: Any) -> Iterator[MainWindow]:
    win = _window(run, seeing, tmp_path, qtbot)
    yield win
    close_session(win.session)


def _settle(run: Any, window: MainWindow) -> None:
    """Let the chips' counts (engine thread) and the session's tasks finish."""

    async def idle() -> None:
        for _ in range(500):
            tasks = window.composer.images._tasks | window.session._tasks
            if not tasks:
                return
            await asyncio.sleep(0.01)

    run(idle())


def _picture(path: Path, size: tuple[int, int] = (120, 90)) -> Path:
    Image.new("RGB", size, (30, 120, 200)).save(path)
    return path


def _drop(urls: list[Path]) -> tuple[QDropEvent, QMimeData]:
    """A drop of ``urls`` and its data (kept by the caller: the event does not own it)."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(u)) for u in urls])
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, mime,
        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
    )  # fmt: skip
    return event, mime


def test_attach_shows_a_chip_with_the_engines_count_and_the_budget_reaches_the_attachment(
    window: MainWindow, run: Any, seeing: Engine, tmp_path: Path
) -> None:
    composer, chips = window.composer, window.composer.images
    assert composer.picture.isEnabled()
    composer.set_text("What is in this picture?")
    composer.add_images([str(_picture(tmp_path / "blue.png"))])  # what the dialog's pick calls
    _settle(run, window)
    assert len(chips.chips) == 1 and not chips.isHidden()
    chip = chips.chips[0]
    assert not chip.thumb.pixmap().isNull() and chip.thumb.pixmap().width() == 48
    # The engine's own count of this 120 x 90 picture at the default budget, markers included.
    ref = composer.image_attachments()[0]
    assert ref.budget is None and (ref.width, ref.height) == (120, 90)
    assert Path(ref.path).parent == tmp_path / "images"  # copied by its hash
    expected = _image_tokens(seeing, ref.path, None)
    assert chip.tokens.text() == f"≈ {expected} tokens"
    assert f"+ ≈ {expected} for images" in window.context_label.text()
    assert composer.button.isEnabled()

    budgets = seeing.info.image_budgets
    assert chip.budget.isVisibleTo(chip) and chip.budget.count() == len(budgets)
    assert chip.budget.itemText(0).endswith("(default)")
    chip.budget.setCurrentIndex(budgets.index(max(budgets)))
    _settle(run, window)
    assert composer.image_attachments()[0].budget == max(budgets)
    assert chip.tokens.text() == f"≈ {_image_tokens(seeing, ref.path, max(budgets))} tokens"
    chip.budget.setCurrentIndex(0)  # back to the model's default
    assert composer.image_attachments()[0].budget is None


def _image_tokens(engine: Engine, path: str, budget: int | None) -> int:
    from engine.types import ImageRef, Message

    alone = engine.count_tokens((Message("user", "", images=(ImageRef(path, budget=budget),)),))
    return alone - engine.count_tokens((Message("user", ""),))


def test_drop_and_paste_attach_images_and_a_chip_removes_its_image(
    window: MainWindow, run: Any, tmp_path: Path
) -> None:
    composer, chips = window.composer, window.composer.images
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nA shed.\n", encoding="utf-8")
    event, _data = _drop([_picture(tmp_path / "photo.jpg"), notes])
    # Offscreen Qt delivers no synthetic drop without a drag: the window's filter is handed
    # the event as QApplication would hand it.
    assert window.document_drops.eventFilter(window, event) and event.isAccepted()
    _settle(run, window)
    assert [c.image.name for c in chips.chips] == ["photo.jpg"]
    assert [a.name for a in window.session.documents.tray.items] == ["notes.md"]  # a document

    drop = QMimeData()  # dropped on the text box itself
    drop.setUrls([QUrl.fromLocalFile(str(_picture(tmp_path / "b.webp", (64, 64))))])
    assert composer.edit.canInsertFromMimeData(drop)
    composer.edit.insertFromMimeData(drop)
    pixels = QImage(40, 30, QImage.Format.Format_RGB32)
    pixels.fill(Qt.GlobalColor.darkGreen)
    QGuiApplication.clipboard().setImage(pixels)  # a screenshot tool's copy
    composer.edit.setFocus()
    composer.edit.paste()
    _settle(run, window)
    assert [c.image.name for c in chips.chips][1:2] == ["b.webp"]
    pasted = chips.chips[2].image
    assert (pasted.width, pasted.height) == (40, 30) and Path(pasted.path).is_file()
    assert composer.text() == ""  # the pixels did not land in the text

    chips.chips[1].remove.click()  # ✕
    assert [c.image.name for c in chips.chips] == ["photo.jpg", pasted.name]
    chips.chips[0].remove.click()
    chips.chips[0].remove.click()
    assert not chips.chips and chips.isHidden()
    window.session.documents.tray.remove(0)
    assert not composer.button.isEnabled()  # nothing left to send


def test_a_bad_image_says_one_line_and_the_typed_text_stays(
    window: MainWindow, run: Any, tmp_path: Path
) -> None:
    composer, chips = window.composer, window.composer.images
    composer.set_text("Read the menu for me")
    broken = tmp_path / "menu.png"
    broken.write_bytes(_picture(tmp_path / "whole.png").read_bytes()[:60])  # truncated
    composer.add_images([str(broken), str(_picture(tmp_path / "fine.png"))])
    _settle(run, window)
    message = chips.error_label.text()
    assert message and "\n" not in message and "Traceback" not in message
    assert chips.error_label.isVisibleTo(chips)
    assert [c.image.name for c in chips.chips] == ["fine.png"]  # the good one still came
    assert composer.text() == "Read the menu for me"
    chips.chips[0].remove.click()
    assert chips.error_label.text() == ""


def test_a_text_only_model_greys_the_picture_button_with_its_reason(
    run: Any, tiny_engine: Backend, tmp_path: Path, qtbot: Any
) -> None:
    window = _window(run, tiny_engine, tmp_path, qtbot)
    try:
        composer, chips = window.composer, window.composer.images
        reason = tiny_engine.info.vision_refusal
        assert reason and "vision projector" in reason
        assert not composer.picture.isEnabled()
        assert reason in composer.picture.toolTip()
        composer.set_text("and this?")
        event, _data = _drop([_picture(tmp_path / "cat.png")])
        window.document_drops.eventFilter(window, event)
        assert not chips.chips and not window.session.documents.tray.items
        assert reason in chips.error_label.text() and chips.isVisibleTo(window)
        assert composer.text() == "and this?"
    finally:
        close_session(window.session)


def test_a_sent_image_shows_as_a_thumbnail_and_a_click_opens_it_large(
    window: MainWindow, run: Any, qtbot: Any, tmp_path: Path
) -> None:
    window.resize(1100, 760)
    window.show()
    window.session.set_params(GREEDY)
    composer = window.composer
    composer.add_images([str(_picture(tmp_path / "chart.png", (400, 300)))])
    composer.set_text("Describe the chart.")
    _settle(run, window)
    budget = max(window.session.model_info.image_budgets)
    composer.images.chips[0].budget.setCurrentIndex(
        window.session.model_info.image_budgets.index(budget)
    )
    sent = composer.image_attachments()[0]
    composer.button.click()  # Send: the text and the chip's picture with its budget
    _settle(run, window)
    chat = window.chat
    item = window.session.messages.item(0)
    assert item.record.content == "Describe the chart."
    assert [(i.sha256, i.budget) for i in item.images] == [(sent.sha256, budget)]
    # The engine was asked with the picture, and the reply came back.
    (turn,) = [m for m in window.session.history(1) if m.role == "user"]
    assert [(r.sha256, r.budget) for r in turn.images] == [(sent.sha256, budget)]
    assert window.session.messages.rowCount() == 2
    assert composer.text() == "" and not composer.images.chips  # cleared once accepted
    assert "for images" not in window.context_label.text()
    index = window.session.messages.index(0, 0)
    qtbot.waitUntil(lambda: chat.visualRect(index).height() > 160)
    layout = chat.message_delegate.row_layout(chat.visualRect(index), item)
    # The thumbnail is the body's first thing: 160 x 120 for a 400 x 300 picture.
    spot = layout.body.topLeft() + QPoint(40, 40)
    assert chat.message_delegate._anchor_at(item, layout, spot) == "hearth-image:0"
    before = {w for w in QApplication.topLevelWidgets() if isinstance(w, ImageViewer)}
    qtbot.mouseClick(chat.viewport(), Qt.MouseButton.LeftButton, pos=spot)
    viewers = [
        w for w in QApplication.topLevelWidgets() if isinstance(w, ImageViewer) and w not in before
    ]
    assert len(viewers) == 1 and viewers[0].isVisible()
    assert viewers[0].label.pixmap().size().width() == 400  # whole: it fits the screen
    assert viewers[0].windowTitle() == "chart.png · 400 × 300"
    qtbot.keyClick(viewers[0], Qt.Key.Key_Escape)
    assert not viewers[0].isVisible()
