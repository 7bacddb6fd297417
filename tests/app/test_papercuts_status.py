"""A new user's papercuts of issue 34 (part C) in the status bar: the idle-unload notice (C3),
the first reply after a reload (C4) and the loading display (C5). Real widgets offscreen, a
real SQLite store and the real engine (tiny random model) unloaded and reloaded for real."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QLabel, QProgressBar

from app.application import Application
from app.chat.session import State
from app.system.settings import Settings
from app.views.chat.load_progress import LoadProgressView
from engine.types import Backend, LoadProgress, SamplingParams
from tests.app.conftest import GatedBackend

GREEDY = SamplingParams(temperature=0.0, seed=7, max_new_tokens=6, repetition_penalty=1.0)


class Unloadable(GatedBackend):
    """A gated engine of the test's own that can be unloaded while idle, as the app's is."""

    def unload_if_idle(self, idle_s: float) -> bool:
        return bool(self.inner.unload_if_idle(idle_s))  # type: ignore[attr-defined]

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def hearth(qapp: Any, run: Any, tmp_path: Path) -> Iterator[Application]:
    settings = Settings(str(tmp_path / "s.ini"))
    settings.set_idle_unload_minutes(1)
    app = Application(qapp, settings)
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    yield app
    run(app.shutdown())


def _engine(folder: Path) -> Callable[[Callable[[LoadProgress], None]], Backend]:
    def build(progress: Callable[[LoadProgress], None]) -> Backend:
        from engine.engine import Engine

        engine = Engine(str(folder), dtype="float32", device="cpu", backend="torch",
                        progress=progress)  # fmt: skip
        return Unloadable(engine)

    return build


async def _until(done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def _right_of(label: QLabel, other: QLabel) -> bool:
    return label.geometry().right() < other.geometry().left()


def test_c3_c4_the_idle_unload_notice_fits_and_a_reload_says_writing(
    hearth: Application, run: Any, tiny_model_dir: Path, qtbot: Any
) -> None:
    window = hearth.window
    window.resize(1000, 700)
    window.show()
    qtbot.waitExposed(window)
    backend = run(hearth.load("tiny", _engine(tiny_model_dir)))
    assert backend is not None
    gated = hearth.session.bridge._backend
    assert isinstance(gated, Unloadable)
    window.set_server_url("http://127.0.0.1:8765/v1")
    window.on_session_context_changed(1949, 8192, 0)
    gated.inner._last_used = time.monotonic() - 61  # a minute and more without a message
    hearth.models.on_idle_timer_timeout()  # as the one-minute timer does
    label = window.state_label
    qtbot.waitUntil(lambda: "unloaded" in label.text(), timeout=10_000)
    QApplication.processEvents()
    assert label.text() == "Model unloaded after 1 min idle"  # not "1 minutes"
    assert window.statusBar().currentMessage() == ""  # not a passing message the labels cut
    assert label.isVisible() and label.width() >= label.sizeHint().width()
    assert _right_of(label, window.server_label)  # nothing covers it

    hearth.session.set_params(GREEDY)
    gated.armed = True  # pause the reply at its first text, after the reload
    sending = hearth.session.spawn(hearth.session.send("Hello again"))
    run(_until(lambda: gated.first_delta.is_set() or sending.done()))
    QApplication.processEvents()
    try:
        assert hearth.session.state == State.GENERATING
        bar = window.statusBar()
        assert bar.currentMessage() == "", bar.currentMessage()  # not "tiny ready on cpu"
        assert label.isVisible() and label.text() == "Writing…"
    finally:
        gated.gate.set()
        run(sending)


def test_c5_the_find_step_names_the_file_once(qapp: Any) -> None:
    view = LoadProgressView(QLabel(), QProgressBar(), QLabel())
    report = LoadProgress(
        "resolve", None, "Finding model '/home/me/Models/Qwen3.5-0.8B-Q4_K_M.gguf'"
    )
    view.on_progress(report)
    assert view.label.text() == "Finding model Qwen3.5-0.8B-Q4_K_M.gguf"
    assert view.label.toolTip() == report.message  # the whole path, on demand
    view.on_progress(LoadProgress("load", None, "Loading Qwen3.5 (q4 on C:\\Users\\me\\m.gguf)"))
    assert view.label.text() == "Opening: Loading Qwen3.5 (q4 on m.gguf)"
    view.stop()
