"""Attaching a picture off the GUI thread (issue 31 item 5's loose end), in the real window,
offscreen, against a real tiny Gemma 4 that can see (`tests.engine.support.image_chat`).

A real 8000 × 6000 photo-sized JPEG (Pillow noise: it decodes slowly) shows its chip at once,
"reading…", while the event loop goes on turning (a zero-interval QTimer ticks during the read:
counted, not timed; a read on the GUI thread would give no tick at all), and the chip ends
with its thumbnail and the engine's own token count. Send pressed meanwhile waits and then
sends the picture; a picture that fails while Send waits sends nothing, says one line and
keeps the text; a chip removed while its file is still being read (a FIFO the test feeds,
so "while" is certain) gives the work up and keeps no file.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from PySide6.QtCore import QTimer

from app.views.main_window import MainWindow
from engine.engine import Engine
from engine.types import ImageRef, Message, SamplingParams
from tests.app.conftest import close_session, make_session
from tests.engine.support import image_chat

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=3, repetition_penalty=1.0)
WAIT_S = 120  # a safety net for a thread the test feeds, not a timing


@pytest.fixture(scope="module")
def seeing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    model, _mmproj, _picture = image_chat.make_case("gemma4", tmp_path_factory.mktemp("gemma4"))
    engine = Engine(str(model), context_window=512)
    assert engine.info.vision_refusal == ""
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def big_photo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8000 × 6000 (48 MP) of noise as a JPEG: every block decodes, as a real photo's."""
    path = tmp_path_factory.mktemp("photos") / "big-photo.jpg"
    size = (8000, 6000)
    noise = Image.effect_noise(size, 60)  # one band, turned for the others (quicker to make)
    flips = (Image.Transpose.FLIP_LEFT_RIGHT, Image.Transpose.FLIP_TOP_BOTTOM)
    Image.merge("RGB", [noise, *(noise.transpose(f) for f in flips)]).save(path, quality=90)
    return path


@pytest.fixture
def window(run: Any, seeing: Engine, tmp_path: Path, qtbot: Any) -> Iterator[MainWindow]:
    session = make_session(run, seeing, tmp_path / "hearth.sqlite3")
    win = MainWindow(session)
    qtbot.addWidget(win)
    win.composer.images.images_folder = tmp_path / "images"
    win.on_session_model_loaded(seeing.info)
    yield win
    close_session(session)


async def _until(done: Callable[[], bool]) -> None:
    while not done():
        await asyncio.sleep(0.01)  # waiting for another thread, not asserting on time


def _settle(run: Any, window: MainWindow) -> None:
    chips = window.composer.images
    run(_until(lambda: not (chips._tasks or window.session._tasks)))


def _image_tokens(engine: Engine, path: str, budget: int | None) -> int:
    alone = engine.count_tokens((Message("user", "", images=(ImageRef(path, budget=budget),)),))
    return alone - engine.count_tokens((Message("user", ""),))


def test_a_large_photo_attaches_while_the_window_keeps_running(
    window: MainWindow, run: Any, seeing: Engine, big_photo: Path, tmp_path: Path
) -> None:
    composer, chips = window.composer, window.composer.images
    composer.set_text("What is in this photo?")
    ticks = [0]
    timer = QTimer()
    timer.setInterval(0)
    timer.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    timer.start()
    try:
        composer.add_images([str(big_photo)])
        (chip,) = chips.chips
        # At once: the chip with its name and "reading…", nothing to send yet.
        assert chip.pending and chip.tokens.text() == "reading…" and not chips.isHidden()
        assert chip.name.text() == "big-photo.jpg" and composer.image_attachments() == ()
        assert ticks[0] == 0
        run(_until(lambda: not chip.pending))
        during = ticks[0]
        _settle(run, window)
    finally:
        timer.stop()
    # The loop turned while the 48 MP picture was read, decoded, hashed and copied.
    print(f"event-loop ticks during the attach: {during}")
    assert during >= 3, f"the event loop turned {during} times during the attach"
    (image,) = composer.image_attachments()
    assert (image.width, image.height) == (8000, 6000)
    assert Path(image.path).parent == tmp_path / "images" and Path(image.path).is_file()
    assert not chip.thumb.pixmap().isNull() and chip.thumb.pixmap().width() == 48
    expected = _image_tokens(seeing, image.path, None)
    assert expected > 0 and chip.tokens.text() == f"≈ {expected:,} tokens"
    assert composer.text() == "What is in this photo?"


def test_send_waits_for_a_picture_being_read_then_sends_it(
    window: MainWindow, run: Any, tmp_path: Path
) -> None:
    window.session.set_params(GREEDY)
    composer = window.composer
    picture = tmp_path / "chart.png"
    Image.new("RGB", (300, 200), (200, 60, 10)).save(picture)
    composer.set_text("Describe the chart.")
    composer.add_images([str(picture)])
    assert composer.images.pending() and composer.button.isEnabled()
    composer.button.click()  # while the picture is still being read
    assert composer.button.text() == "Reading images…" and not composer.button.isEnabled()
    assert window.session.messages.rowCount() == 0
    _settle(run, window)
    item = window.session.messages.item(0)
    assert item.record.content == "Describe the chart."
    assert [(i.width, i.height) for i in item.images] == [(300, 200)]
    assert window.session.messages.rowCount() == 2
    assert composer.text() == "" and not composer.images.chips
    assert composer.button.text() == "Send"


def test_a_picture_failing_while_send_waits_sends_nothing_and_keeps_the_text(
    window: MainWindow, run: Any, tmp_path: Path
) -> None:
    composer, chips = window.composer, window.composer.images
    whole = tmp_path / "whole.png"
    Image.new("RGB", (64, 64), (0, 90, 0)).save(whole)
    broken = tmp_path / "menu.png"
    broken.write_bytes(whole.read_bytes()[:60])  # truncated
    composer.set_text("Read the menu for me")
    composer.add_images([str(broken)])
    composer.button.click()
    _settle(run, window)
    message = chips.error_label.text()
    assert "menu.png" in message and "\n" not in message and "Traceback" not in message
    assert not chips.chips and window.session.messages.rowCount() == 0  # nothing sent
    assert composer.text() == "Read the menu for me"
    assert composer.button.text() == "Send" and composer.button.isEnabled()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_removing_a_chip_while_its_picture_is_read_gives_it_up(
    window: MainWindow, run: Any, tmp_path: Path
) -> None:
    composer, chips = window.composer, window.composer.images
    whole = tmp_path / "whole.png"
    Image.new("RGB", (80, 60), (10, 10, 200)).save(whole)
    fifo = tmp_path / "slow.png"
    os.mkfifo(fifo)
    opened, feed = threading.Event(), threading.Event()

    def writer() -> None:  # the "disk": it answers once the test says so
        with open(fifo, "wb") as out:  # returns once the attach's thread opened it to read
            opened.set()
            feed.wait(WAIT_S)
            out.write(whole.read_bytes())

    feeder = threading.Thread(target=writer, daemon=True)
    feeder.start()
    failed: list[str] = []
    chips.sig_failed.connect(failed.append)
    composer.set_text("keep me")
    (chip,) = chips.add([str(fifo)])
    reading = chips.readings[chip]
    run(_until(opened.is_set))  # the worker thread is inside the read now
    chip.remove.click()  # ✕ while it is being read
    assert not chips.chips and not chips.pending() and chips.isHidden()
    feed.set()
    assert reading.done.wait(WAIT_S)  # the thread finished its read and gave up
    feeder.join(WAIT_S)
    _settle(run, window)
    assert reading.cancel.is_set() and not failed and chips.error_label.text() == ""
    assert not (tmp_path / "images").exists() or not any((tmp_path / "images").iterdir())
    assert composer.text() == "keep me" and composer.image_attachments() == ()
