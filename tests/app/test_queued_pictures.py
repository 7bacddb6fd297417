"""A message sent with pictures while the model opens (issue 31 item 5's loose end): it waits
with its pictures and goes when the model is ready; if the model that opens cannot see, the
refusal says why and the text and the pictures stay in the composer, editable again.

The real application, offscreen, and real engines opened through the real factory: a tiny
random-weight Gemma 4 with its mmproj beside it (it can see) and the tiny text-only llama. "While
it opens" is made certain by a gate the engine thread waits on (as in test_loading).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from app.application import Application
from app.bridge import BackendFactory, local_engine_factory
from app.chat.session import State
from app.system.settings import Settings
from engine.types import Backend, LoadProgress, SamplingParams
from tests.engine.support import image_chat

GATE_TIMEOUT_S = 120  # a safety net only: every test opens its gate
SHORT = SamplingParams(temperature=0.0, seed=1, max_new_tokens=3, repetition_penalty=1.0)


@pytest.fixture(scope="module")
def seeing_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, _mmproj, _picture = image_chat.make_case("gemma4", tmp_path_factory.mktemp("gemma4"))
    return model


@pytest.fixture(scope="module")
def text_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bench.synth.core import write_tiny_model

    path = tmp_path_factory.mktemp("models") / "tiny-llama-Q8_0.gguf"
    write_tiny_model(path, "llama", "Q8_0")
    return path


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def hearth(
    qapp: Any, run: Any, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Application]:
    monkeypatch.setenv("HEARTH_CACHE_DIR", str(cache_dir))
    gc.collect()  # the last test's window freed on the GUI thread (see test_loading)
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    app.window.resize(1100, 720)
    app.window.show()
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    app.apply_params(SHORT)
    app.window.composer.images.images_folder = tmp_path / "images"
    yield app
    run(_until(lambda: not app.session._tasks))
    run(app.shutdown())


class Gate:
    """A factory that holds the engine thread until ``open()``, then builds the real engine."""

    def __init__(self, inner: BackendFactory) -> None:
        self.inner = inner
        self.event = threading.Event()
        self.entered = threading.Event()

    def __call__(self, progress: Callable[[LoadProgress], None]) -> Backend:
        self.entered.set()
        self.event.wait(GATE_TIMEOUT_S)
        return self.inner(progress)

    def open(self) -> None:
        self.event.set()


async def _until(done: Callable[[], bool]) -> None:
    while not done():
        await asyncio.sleep(0.01)  # waiting for another thread, not asserting on time


def _queue_with_a_picture(
    hearth: Application, run: Any, model: Path, tmp_path: Path
) -> tuple[Gate, asyncio.Task[Any]]:
    """Start opening ``model``, attach a picture, type and send: the turn waits."""
    session, composer = hearth.session, hearth.window.composer
    gate = Gate(local_engine_factory(str(model)))
    task = hearth.load(str(model), gate)
    run(_until(lambda: gate.entered.is_set() and session.state == State.LOADING))
    picture = tmp_path / "menu.png"
    Image.new("RGB", (96, 64), (240, 180, 20)).save(picture)
    assert composer.picture.isEnabled()  # no model known yet: pictures may be attached
    composer.add_images([str(picture)])
    run(composer.images.wait_ready())
    composer.edit.setPlainText("What is on this menu?")
    assert composer.button.isEnabled()
    notices: list[str] = []
    session.sig_notice.connect(notices.append)
    composer.button.click()
    run(_until(lambda: session.queue.queued is not None or bool(notices)))
    assert session.queue.queued is not None, notices  # held, not refused
    return gate, task


def test_pictures_sent_while_a_seeing_model_opens_go_with_the_text(
    hearth: Application, run: Any, seeing_gguf: Path, tmp_path: Path
) -> None:
    session, window, composer = hearth.session, hearth.window, hearth.window.composer
    finished: list[Any] = []
    session.sig_generation_finished.connect(finished.append)
    gate, task = _queue_with_a_picture(hearth, run, seeing_gguf, tmp_path)
    (attached,) = composer.image_attachments()
    queued = session.queue.queued
    assert queued is not None and queued.images == (attached,) and queued.text
    assert window.queued_bar.isVisible() and session.messages.rowCount() == 0
    # The waiting message is kept as it is: text read-only, pictures locked, none added.
    chip = composer.images.chips[0]
    assert composer.edit.isReadOnly() and not chip.remove.isEnabled()
    assert not composer.picture.isEnabled()

    gate.open()
    assert run(task) is not None
    run(_until(lambda: bool(finished)))
    assert session.model_info is not None and session.model_info.vision_refusal == ""
    user = session.messages.item(0)
    assert user.record.content == "What is on this menu?"
    assert [i.sha256 for i in user.images] == [attached.sha256]
    (turn,) = [m for m in session.history(1) if m.role == "user"]
    assert [r.sha256 for r in turn.images] == [attached.sha256]  # the engine was given it
    assert session.messages.item(1).record.error is None
    assert composer.text() == "" and not composer.images.chips and not composer.edit.isReadOnly()


def test_a_text_only_model_that_opens_refuses_in_words_and_keeps_text_and_pictures(
    hearth: Application, run: Any, text_gguf: Path, tmp_path: Path
) -> None:
    session, window, composer = hearth.session, hearth.window, hearth.window.composer
    notices: list[str] = []
    session.sig_notice.connect(notices.append)
    gate, task = _queue_with_a_picture(hearth, run, text_gguf, tmp_path)
    (attached,) = composer.image_attachments()

    gate.open()
    assert run(task) is not None
    run(_until(lambda: not session._tasks))
    reason = session.model_info.vision_refusal
    assert reason and "vision projector" in reason
    assert [n for n in notices if "cannot read pictures" in n] == [
        f"This model cannot read pictures: {reason}."
    ]
    assert session.messages.rowCount() == 0  # nothing sent, nothing stored
    assert not window.queued_bar.isVisible()
    # Text and pictures stay, editable again; the chips' line says why.
    assert composer.text() == "What is on this menu?" and not composer.edit.isReadOnly()
    assert composer.image_attachments() == (attached,)
    assert composer.images.chips[0].remove.isEnabled()
    assert reason in composer.images.error_label.text()
    assert not composer.picture.isEnabled() and reason in composer.picture.toolTip()
