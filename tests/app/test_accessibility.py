"""Every control of the main window and of its dialogs has a name a screen reader can say (the
accessible name Qt exposes: its own, its text, or its label), on the real Application
offscreen; and text in messages can be selected and copied ("Select text…")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keyring
import pytest
from PySide6.QtWidgets import QDialog, QLineEdit, QTextBrowser, QWidget

from app.application import Application
from app.system.endpoints import EndpointList
from app.system.secrets import KeyStore
from app.system.settings import Settings
from app.views.accessibility import accessible_name, controls, unnamed_controls
from app.views.dialogs.common import EditDialog, TextDialog
from tests.app.test_secrets import MemoryKeyring


@pytest.fixture
def hearth(qapp: Any, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("HEARTH_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other apps' models found here
    (tmp_path / "models").mkdir()
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    app.window.show()
    yield app
    keyring.set_keyring(previous)
    run(app.shutdown())


def _describe(widgets: list[QWidget]) -> list[str]:
    return [f"{type(w).__name__}#{w.objectName()} in {type(w.parent()).__name__}" for w in widgets]


def _check(root: QWidget) -> None:
    assert controls(root), f"{type(root).__name__} has no controls: the walk is broken"
    assert _describe(unnamed_controls(root)) == []


def test_the_check_finds_an_unnamed_control(qtbot: Any) -> None:
    bare = QWidget()
    qtbot.addWidget(bare)
    edit = QLineEdit(bare)
    assert unnamed_controls(bare) == [edit]
    edit.setAccessibleName("Name")
    assert unnamed_controls(bare) == [] and accessible_name(edit) == "Name"


def test_every_control_of_the_main_window_is_named(hearth: Application) -> None:
    _check(hearth.window)


def _dialogs(hearth: Application, run: Any) -> list[QDialog]:
    from app.views.dialogs.endpoints import EndpointsDialog
    from app.views.models.dialog import ModelsDialog

    window = hearth.window
    shown = [
        hearth.extras.organiser.open_trash(),
        hearth.extras.shortcuts.open_sheet(),
        hearth.extras.shortcuts.open_preferences(),
        TextDialog("Message", "some text", window),
        EditDialog("some text", window),
        ModelsDialog(hearth.settings, KeyStore(), window),
        EndpointsDialog(EndpointList(Path(hearth.settings._q.fileName()).parent / "e.json"),
                        KeyStore(), _no_models, window),
    ]  # fmt: skip
    for dialog in shown:
        dialog.show()  # the window names a dialog's controls as it is shown
    return shown


async def _no_models(_url: str, _key: str | None) -> list[str]:
    return []


def test_every_control_of_each_dialog_is_named(hearth: Application, run: Any) -> None:
    for dialog in _dialogs(hearth, run):
        _check(dialog)
        dialog.close()


def test_message_text_is_selectable_through_select_text(hearth: Application) -> None:
    dialog = TextDialog("Message", "第一行\nsecond line", hearth.window)
    dialog.show()
    view = dialog.findChild(QTextBrowser)
    assert view is not None and view.toPlainText() == "第一行\nsecond line"
    view.selectAll()
    view.copy()
    from PySide6.QtGui import QGuiApplication

    clipboard = QGuiApplication.clipboard()
    assert clipboard is not None and clipboard.text() == "第一行\nsecond line"
