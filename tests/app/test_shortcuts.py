"""Keyboard shortcuts, the shortcut sheet, the text size and the engine preferences, on the
real Application offscreen with a real preferences file and the real engine (tiny model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QApplication

from app.application import Application
from app.system.settings import Settings
from app.views.dialogs.preferences import PreferencesDialog
from app.views.shortcuts import Shortcuts, ShortcutSheet
from engine.errors import InvalidParamsError
from engine.types import Backend, SamplingParams
from tests.app.conftest import GatedBackend

SHORT = SamplingParams(temperature=1.0, seed=3, max_new_tokens=3)
REQUIRED = {
    "Ctrl+N": "New chat",
    "Ctrl+F": "Search chats",
    "Ctrl+.": "Stop the reply",
    "Ctrl+Shift+R": "Regenerate the last reply",
    "Ctrl+Shift+C": "Copy the last reply",
    "Ctrl+L": "Focus the message box",
    "Alt+Left": "Previous alternative of the last reply",
    "Alt+Right": "Next alternative of the last reply",
    "Ctrl++": "Larger text",
    "Ctrl+-": "Smaller text",
    "Ctrl+/": "Keyboard shortcuts",
}


def _start(qapp: Any, run: Any, tmp_path: Path, backend: Backend) -> Application:
    hearth = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(hearth.start(db_path=tmp_path / "db.sqlite3", model=None))
    run(hearth.load("tiny", lambda _progress: backend))
    hearth.apply_params(SHORT)
    return hearth


@pytest.fixture
def hearth(qapp: Any, run: Any, gated: GatedBackend, tmp_path: Path) -> Any:
    app = _start(qapp, run, tmp_path, gated)
    yield app
    gated.gate.set()
    app.session.bridge.detach()
    run(app.shutdown())


def _action(hearth: Application, keys: str) -> QAction:
    wanted = QKeySequence(keys)
    found = [a for a in hearth.window.findChildren(QAction) if wanted in a.shortcuts()]
    assert len(found) == 1, f"{keys}: {[a.text() for a in found]}"  # bound once, unambiguous
    return found[0]


async def _idle(session: Any) -> None:
    while session.busy or session._tasks:
        await asyncio.sleep(0.01)


def test_the_sheet_lists_every_shortcut_and_ctrl_slash_opens_it(hearth: Application) -> None:
    _action(hearth, "Ctrl+/").trigger()
    sheets = hearth.window.findChildren(ShortcutSheet)
    assert len(sheets) == 1 and sheets[0].isVisible()
    table = sheets[0].table
    rows = {
        QKeySequence(table.item(r, 0).text(), QKeySequence.SequenceFormat.NativeText).toString():
        table.item(r, 1).text() for r in range(table.rowCount())
    }  # fmt: skip
    for keys, label in REQUIRED.items():
        assert rows.get(QKeySequence(keys).toString()) == label, keys
    for keys in REQUIRED:
        if keys not in ("Ctrl+N", "Ctrl+F"):  # menu actions with standard keys
            _action(hearth, keys)


def test_reply_shortcuts_regenerate_navigate_copy_and_focus(hearth: Application, run: Any) -> None:
    session = hearth.session
    run(session.send("hello"))
    first = session.messages.item(1).record.content
    _action(hearth, "Ctrl+Shift+R").trigger()
    run(_idle(session))
    reply = session.messages.item(1)
    assert (reply.sibling_index, reply.sibling_count) == (1, 2)
    _action(hearth, "Alt+Left").trigger()
    run(_idle(session))
    assert session.messages.item(1).sibling_index == 0
    assert session.messages.item(1).record.content == first
    _action(hearth, "Alt+Right").trigger()
    run(_idle(session))
    assert session.messages.item(1).sibling_index == 1
    _action(hearth, "Ctrl+Shift+C").trigger()
    clipboard = QGuiApplication.clipboard()
    assert clipboard is not None and clipboard.text() == session.messages.item(1).record.content
    hearth.window.show()
    hearth.window.sidebar.search.setFocus()
    assert hearth.window.focusWidget() is hearth.window.sidebar.search
    _action(hearth, "Ctrl+L").trigger()
    assert hearth.window.focusWidget() is hearth.window.composer.edit


def test_ctrl_dot_stops_a_streaming_reply(
    hearth: Application, run: Any, gated: GatedBackend
) -> None:
    session = hearth.session
    session.set_params(SHORT.replace(max_new_tokens=64))
    gated.armed = True
    task = session.spawn(session.send("tell me a story"))

    async def until_streaming() -> None:
        while not gated.first_delta.is_set():
            await asyncio.sleep(0.01)

    run(until_streaming())
    _action(hearth, "Ctrl+.").trigger()
    gated.gate.set()
    run(task)
    assert session.messages.item(1).record.finish_reason == "cancelled"


def test_text_size_zooms_is_remembered_and_resets(
    qapp: Any, run: Any, gated: GatedBackend, tmp_path: Path
) -> None:
    hearth = _start(qapp, run, tmp_path, gated)
    shortcuts = hearth.extras.shortcuts
    assert isinstance(shortcuts, Shortcuts)
    base = hearth.window.chat.font().pointSize()
    _action(hearth, "Ctrl++").trigger()
    _action(hearth, "Ctrl++").trigger()
    _action(hearth, "Ctrl+-").trigger()
    assert hearth.window.chat.font().pointSize() == base + 1
    assert hearth.window.composer.edit.font().pointSize() == base + 1
    hearth.session.bridge.detach()
    run(hearth.shutdown())
    again = _start(qapp, run, tmp_path, gated)
    try:
        assert again.window.chat.font().pointSize() == base + 1  # remembered
        _action(again, "Ctrl+0").trigger()
        assert again.window.chat.font().pointSize() == QApplication.font().pointSize()
        assert again.settings.font_size() == 0
    finally:
        again.session.bridge.detach()
        run(again.shutdown())


def test_preferences_set_the_context_length_and_threads_a_model_loads_with(
    hearth: Application, run: Any, tiny_model_dir: Path
) -> None:
    dialog = _action(hearth, "Ctrl+,")
    dialog.trigger()
    prefs = hearth.window.findChildren(PreferencesDialog)[-1]
    prefs.context.setValue(512)
    prefs.threads.setValue(1)
    prefs.font_size.setValue(15)
    prefs.accept()
    saved = hearth.settings.saved_caches_gb() * 2**30  # chats' saved caches: on by default
    assert hearth.engine_options() == {
        "context_window": 512,
        "threads": 1,
        "saved_caches_bytes": saved,
    }
    assert hearth.window.chat.font().pointSize() == 15
    run(hearth.load(str(tiny_model_dir)))  # the real local factory, with those options
    info = hearth.session.model_info
    assert info is not None and info.context_window == 512  # the tiny model's own is 1024


def test_the_engine_takes_a_thread_count(tiny_model_dir: Path) -> None:
    import torch

    from engine.engine import Engine

    before = torch.get_num_threads()
    try:
        engine = Engine(str(tiny_model_dir), dtype="float32", device="cpu", threads=1)
        engine.close()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(InvalidParamsError, match="threads must be"):
        Engine(str(tiny_model_dir), threads=0)


def test_bad_stored_preferences_fall_back(tmp_path: Path) -> None:
    settings = Settings(str(tmp_path / "s.ini"))
    settings._q.setValue("view/font_size", "huge")
    settings._q.setValue("engine/threads", 100000)
    assert (settings.font_size(), settings.threads(), settings.context_length()) == (0, 0, 0)
    with pytest.raises(ValueError, match="thread count"):
        settings.set_threads(-2)
