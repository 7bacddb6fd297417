"""The status bar's "Why is this slow?" link, through a real reply of the real tiny engine.

The window is the app's (`Application`), the reply is streamed by the tiny engine on the
engine thread, and the facts are measured on this machine by `SlowWatch` (the governor's
reading is left out: another test's simulated governor may be the process's latest). A model
on the slower path shows the link after its reply and the popup names the reason and the way
out; on the usual path the link shows exactly when the measured facts hold a cause, and the
popup then lists them or says nothing slows Hearth down, with the figures.
``HEARTH_SHOT_DIR`` set: the window with the popup is saved there as ``why-slow.png``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QPainter

from app.application import Application
from app.chat.slowness import diagnose
from app.chat.slowness_watch import SlowWatch
from app.system.settings import Settings
from engine.params import SamplingParams
from engine.types import Backend
from tests.app.test_slow_path import FAST, REASON, SLOW, _load


@pytest.fixture
def hearth(qapp: Any, run: Any, tmp_path: Path) -> Iterator[Application]:
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    app.window.resize(1100, 700)
    app.window.show()
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    app.window.why_slow.watch = SlowWatch(tmp_path, lambda: None)
    yield app
    app.session.bridge.detach()
    run(app.shutdown())


def _reply(hearth: Application, run: Any) -> None:
    hearth.session.set_params(SamplingParams(temperature=0.0, max_new_tokens=12))
    run(hearth.session.send("Hello there"))


def test_a_reply_on_the_slower_path_offers_why_with_the_reason_and_the_way_out(
    hearth: Application, run: Any, tiny_engine: Backend, qtbot: Any
) -> None:
    why = hearth.window.why_slow
    assert not why.button.isVisible()  # nothing measured yet
    _load(hearth, run, tiny_engine, SLOW)
    _reply(hearth, run)
    assert why.button.isVisible() and why.button.text() == "Why is this slow?"
    assert why.facts.decode_tok_s > 0 and why.facts.available_bytes > 0  # measured
    qtbot.mouseClick(why.button, Qt.MouseButton.LeftButton)
    assert why.box is not None and why.box.isVisible()
    text = why.box.text()
    assert REASON in text and "Q4_K_M" in text and "Nothing slows" not in text
    _shoot(hearth)
    why.box.close()


def test_on_the_usual_path_the_link_follows_the_measured_causes(
    hearth: Application, run: Any, tiny_engine: Backend
) -> None:
    why = hearth.window.why_slow
    _load(hearth, run, tiny_engine, FAST)
    _reply(hearth, run)
    found = diagnose(why.facts)
    assert why.button.isVisible() == bool(found)
    assert all(not d.cause.startswith("The model runs on the slower") for d in found)
    why.on_button_clicked()
    assert why.box is not None
    if found:  # this machine is under pressure now (swap, memory, disk): named, with figures
        assert found[0].cause in why.box.text()
    else:
        assert why.box.text().startswith("Nothing slows Hearth down right now.")
        assert f"{why.facts.decode_tok_s:.1f} tokens/s" in why.box.text()
    why.box.close()


def _shoot(hearth: Application) -> None:
    folder = os.environ.get("HEARTH_SHOT_DIR")
    box = hearth.window.why_slow.box
    if not folder or box is None:
        return
    picture = hearth.window.grab()
    popup = box.grab()
    with QPainter(picture) as painter:
        middle = picture.rect().center() - popup.rect().center()
        painter.drawPixmap(QPoint(middle.x(), middle.y()), popup)
    Path(folder).mkdir(parents=True, exist_ok=True)
    picture.save(str(Path(folder) / "why-slow.png"))
