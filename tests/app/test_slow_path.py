"""The slower-path notice and the loaded model's declared name, through the real load path.

Each model is loaded the way the app loads one: `Application.load` -> session -> bridge (engine
thread) -> ``sig_model_loaded`` -> the window. The backend is the real tiny engine reporting the
`ModelInfo` a GGUF engine would report (declared name, and a slow-path reason or none).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.application import Application
from app.system.settings import Settings
from engine.types import Backend, LoadProgress, ModelInfo
from tests.app.conftest import GatedBackend

REASON = "the fast path cannot run this file: blk.0.attn_q.weight uses IQ1_S"
SLOW = ModelInfo(
    name="Qwen2.5 0.5B Instruct (IQ1_S)",
    source="/models/qwen2.5-0.5b-instruct-iq2_xxs.gguf",
    backend="torch",
    device="cpu",
    dtype="float32",
    context_window=32768,
    slow_path_reason=REASON,
)
FAST = dataclasses.replace(
    SLOW,
    name="Qwen2.5 0.5B Instruct (Q4_K_M)",
    source="/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
    backend="onnx",
    dtype="q4_k_m",
    slow_path_reason="",
)
ONCE = "Converting qwen2.5-0.5b-instruct-q4_k_m.gguf (once; later loads are fast)"


class Declared(GatedBackend):
    """The real engine, reporting ``declared`` as its `ModelInfo` (never closed here)."""

    def __init__(self, inner: Backend, declared: ModelInfo) -> None:
        super().__init__(inner)
        self.declared = declared

    @property
    def info(self) -> ModelInfo:
        return self.declared


@pytest.fixture
def hearth(qapp: Any, run: Any, tmp_path: Path) -> Iterator[Application]:
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    app.window.resize(1000, 700)
    app.window.show()
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    yield app
    app.session.bridge.detach()
    run(app.shutdown())


def _load(
    hearth: Application,
    run: Any,
    engine: Backend,
    info: ModelInfo,
    steps: Callable[[Callable[[LoadProgress], None]], None] | None = None,
) -> None:
    def factory(progress: Callable[[LoadProgress], None]) -> Backend:
        if steps is not None:
            steps(progress)
        return Declared(engine, info)

    assert run(hearth.load(info.source, factory)) == info


def _visible_menu_texts(hearth: Application) -> list[str]:
    return [a.text() for a in hearth.window.model_menu.actions() if a.isVisible()]


def test_a_model_on_the_slower_path_shows_a_lasting_notice_with_its_reason(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    button = hearth.window.slow_path.button
    _load(hearth, run, tiny_engine, SLOW)
    assert button.isVisible() and "Slower path" in button.text()
    assert REASON in button.toolTip() and SLOW.name in button.toolTip()
    hearth.window.on_session_notice("Message copied.")  # a passing notice does not hide it
    assert button.isVisible()

    _load(hearth, run, tiny_engine, FAST)
    assert not button.isVisible() and button.toolTip() == ""


def test_the_notice_and_the_menu_line_open_the_reason_and_the_way_out(
    hearth: Application, run: Any, tiny_engine: Backend, qtbot: Any
) -> None:
    window = hearth.window
    _load(hearth, run, tiny_engine, SLOW)
    top = [a for a in window.model_menu.actions() if a.isVisible()][:2]
    assert "slower float32 path" in top[0].text() and not top[0].isEnabled()
    assert top[1].isEnabled()
    top[1].trigger()
    qtbot.mouseClick(window.slow_path.button, Qt.MouseButton.LeftButton)
    boxes = window.findChildren(QMessageBox, "slowPathDialog")
    assert len(boxes) == 2
    for box in boxes:
        assert SLOW.name in box.text()
        assert REASON in box.informativeText() and "Q4_K_M" in box.informativeText()
        box.close()

    _load(hearth, run, tiny_engine, FAST)
    assert not any("slower" in text for text in _visible_menu_texts(hearth))


def test_the_loaded_model_is_named_by_its_declared_name(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    window = hearth.window
    _load(hearth, run, tiny_engine, FAST)
    assert window.model_label.text().startswith(FAST.name + " · cpu")
    assert FAST.name in window.model_button.text()
    texts = _visible_menu_texts(hearth)
    assert FAST.name in texts and FAST.source not in texts  # the recent entry of the loaded one

    _load(hearth, run, tiny_engine, SLOW)
    texts = _visible_menu_texts(hearth)
    # Recent keeps the earlier model's declared name (papercut C9), never its raw path.
    assert SLOW.name in texts and FAST.name in texts and FAST.source not in texts
    assert window.model_label.text().startswith(SLOW.name)


def test_a_once_only_step_is_shown_in_full_and_the_bar_moves(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    _load(hearth, run, tiny_engine, SLOW)  # a long model label is on screen before loading
    steps = [
        LoadProgress("convert", 0.0, ONCE),
        LoadProgress("convert", 0.3, "Dequantizing weights"),
        LoadProgress("convert", 0.8, "Writing the safetensors cache"),
        LoadProgress("warmup", None, "Warming up"),
    ]
    gates = [threading.Event() for _ in steps]

    def report(progress: Callable[[LoadProgress], None]) -> None:
        for step, gate in zip(steps, gates, strict=True):
            progress(step)
            gate.wait(60)  # a safety net only: the test opens each gate

    label, bar = hearth.window.state_label, hearth.window.progress
    task = hearth.load(FAST.source, lambda p: (report(p), Declared(tiny_engine, FAST))[1])
    seen = []
    for step, gate in zip(steps, gates, strict=True):
        run(_until(lambda s=step: label.text().endswith(s.message)))  # after the stage's name
        run(asyncio.sleep(0.05))  # let the status bar lay itself out
        assert label.width() >= label.sizeHint().width(), (label.width(), step.message)
        assert label.toolTip() == step.message and bar.isVisible() and bar.width() > 40
        seen.append((bar.maximum(), bar.value()))
        gate.set()
    assert run(task) == FAST
    # A first step at 0% is busy (range 0..0), never a frozen 0%; after that one bar covers
    # the whole open and never goes back, even through a step without a measure (C5).
    values = [v for _, v in seen[1:]]
    assert [m for m, _ in seen] == [0, 100, 100, 100] and values == sorted(values)
    assert not bar.isVisible() and label.toolTip() == ""


async def _until(done: Callable[[], bool]) -> None:
    while not done():
        await asyncio.sleep(0.01)  # waiting for the engine thread, not asserting on time


def test_the_status_bar_names_the_files_own_quant_and_details_the_mix(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    """Issue 22 B: "q4_k+q5_0+q6_k+q8_0" meant nothing to people; "Q4_K_M" does."""
    mixed = dataclasses.replace(FAST, dtype="q4_k+q5_0+q6_k+q8_0", quant="Q4_K_M")
    _load(hearth, run, tiny_engine, mixed)
    label = hearth.window.model_label
    assert label.text() == f"{mixed.name} · cpu · Q4_K_M"
    assert "q4_k+q5_0+q6_k+q8_0" in label.toolTip()
