"""A new user's papercuts of issue 34 (part C) around the window's menus, dialogs and the dark
theme: Preferences where people look (C14), readable check boxes (C14), file dialogs that open
at home or the last folder used (C6), and columns and titles that are not cut (C11). Real
widgets offscreen."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QAction, QColor, QImage
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QFileDialog,
    QInputDialog,
    QStyle,
    QStyleOptionButton,
    QToolBar,
)

from app.chat.session import ChatSession
from app.mcp.approval import ApprovalPolicy
from app.mcp.hub import McpHub
from app.system.settings import Settings
from app.views.dialogs.file_dialogs import FolderMemory
from app.views.dialogs.preferences import PreferencesDialog
from app.views.main_window import MainWindow
from app.views.theme import apply_theme, dark_palette
from app.views.tools.tools_window import ToolsWindow
from app.views.window_extras import WindowExtras
from tests.app.test_mcp_hub import DictSecrets


def _luminance(color: QColor) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return (
        0.2126 * channel(color.red())
        + 0.7152 * channel(color.green())
        + 0.0722 * channel(color.blue())
    )


def _contrast(a: QColor, b: QColor) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _outline_contrast(image: QImage, rect: QRect, background: QColor) -> float:
    """The best contrast any pixel on ``rect``'s edge has against ``background``."""
    xs, ys = range(rect.left(), rect.right() + 1), range(rect.top(), rect.bottom() + 1)
    edge = [(x, y) for x in xs for y in (ys[0], ys[-1])]
    edge += [(x, y) for y in ys for x in (xs[0], xs[-1])]
    return max(_contrast(image.pixelColor(x, y), background) for x, y in edge)


def test_c14_check_boxes_are_readable_in_the_dark_theme(qapp: Any, qtbot: Any) -> None:
    apply_theme(qapp, dark=True)
    try:
        box = QCheckBox("Full-width punctuation")
        qtbot.addWidget(box)
        box.show()
        qtbot.waitExposed(box)
        option = QStyleOptionButton()
        box.initStyleOption(option)
        indicator = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
        image = box.grab().toImage()
        window = dark_palette().color(dark_palette().ColorRole.Window)
        # WCAG's 3:1 for the parts of a control one must see (its outline was ~1.1:1).
        assert _outline_contrast(image, indicator, window) >= 3.0
    finally:
        apply_theme(qapp, dark=False)
        QApplication.processEvents()


def _window(session: ChatSession, tmp_path: Path, qtbot: Any) -> tuple[MainWindow, Settings]:
    window = MainWindow(session)
    qtbot.addWidget(window)
    settings = Settings(str(tmp_path / "s.ini"))
    WindowExtras.install(window, settings)
    window.show()
    qtbot.waitExposed(window)
    return window, settings


def test_c14_preferences_is_in_the_edit_menu_and_on_the_toolbar(
    session: ChatSession, tmp_path: Path, qtbot: Any
) -> None:
    window, _settings = _window(session, tmp_path, qtbot)
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles[:3] == ["&File", "&Edit", "&View"]
    edit = window.edit_menu
    [preferences] = [a for a in edit.actions() if a.text() == "Preferences…"]
    assert preferences.shortcut().toString() == "Ctrl+,"
    assert preferences.menuRole() == QAction.MenuRole.PreferencesRole  # the app menu on macOS
    preferences.trigger()
    dialog = window.findChild(PreferencesDialog)
    qtbot.waitUntil(lambda: dialog is not None and dialog.isVisible())
    dialog.reject()
    bar = window.findChild(QToolBar, "mainToolbar")
    [gear] = [a for a in bar.actions() if a.objectName() == "preferencesButton"]
    button = bar.widgetForAction(gear)
    assert button.isVisible() and button.accessibleName() == "Preferences"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    opened = [d for d in window.findChildren(PreferencesDialog) if d.isVisible()]
    assert len(opened) == 1


class Pickers:
    """Qt's pickers as the user answers them: the native dialog cannot run headless, so each
    records the folder it was asked to open in and answers the next prepared choice."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened_in: list[str] = []
        self.answers: list[str] = []
        monkeypatch.setattr(QFileDialog, "getOpenFileName", self._file)
        monkeypatch.setattr(QFileDialog, "getOpenFileNames", self._files)
        monkeypatch.setattr(QFileDialog, "getExistingDirectory", self._folder)
        monkeypatch.setattr(QInputDialog, "exec", lambda _self: 0)  # the name: cancelled

    def _file(self, _parent: Any, _title: str, folder: str = "", *_a: Any) -> tuple[str, str]:
        self.opened_in.append(folder)
        return self.answers.pop(0), ""

    def _files(self, _parent: Any, _title: str, folder: str = "", *_a: Any) -> tuple[list, str]:
        self.opened_in.append(folder)
        return [self.answers.pop(0)], ""

    def _folder(self, _parent: Any, _title: str, folder: str = "", *_a: Any) -> str:
        self.opened_in.append(folder)
        return self.answers.pop(0)


def test_c6_pickers_open_at_home_then_where_the_last_choice_was(
    session: ChatSession, tmp_path: Path, qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("models/q.gguf", "papers/notes.txt", "library/recipes/a.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    window, settings = _window(session, tmp_path, qtbot)
    window.folders.use(settings)  # as the application does
    pickers = Pickers(monkeypatch)
    home = str(Path.home())
    [open_gguf] = [a for a in window.model_menu.actions() if a.text() == "Open GGUF file…"]
    requested: list[str] = []
    window.sig_model_requested.connect(requested.append)

    pickers.answers = [str(tmp_path / "models/q.gguf"), str(tmp_path / "models/q.gguf")]
    open_gguf.trigger()
    open_gguf.trigger()
    assert pickers.opened_in == [home, str(tmp_path / "models")]
    assert requested == [str(tmp_path / "models/q.gguf")] * 2

    pickers.opened_in.clear()
    pickers.answers = [str(tmp_path / "papers/notes.txt"), str(tmp_path / "papers/notes.txt")]
    window.composer.on_attach_clicked()
    window.composer.on_attach_clicked()
    assert pickers.opened_in == [home, str(tmp_path / "papers")]  # each kind has its own

    pickers.opened_in.clear()
    pickers.answers = [str(tmp_path / "library/recipes"), ""]
    collections = window.document_drops.collections.open()
    collections.on_add_clicked()
    collections.on_add_clicked()  # beside the last folder added, its siblings in view
    assert pickers.opened_in == [home, str(tmp_path / "library")]
    collections.close()

    again = FolderMemory()  # Hearth started again
    again.use(Settings(str(tmp_path / "s.ini")))
    assert again.start("models") == str(tmp_path / "models")
    shutil.rmtree(tmp_path / "models")
    assert again.start("models") == home  # a folder since removed: home, not an error


WEATHER_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")

@server.tool()
def get_weather_forecast_for_city(city: str) -> str:
    """Tomorrow's weather in a city."""
    return f"Sunny in {city}"

server.run()
'''


def test_c11_the_tools_window_shows_tool_names_whole(run: Any, tmp_path: Path, qtbot: Any) -> None:
    script = tmp_path / "weather_server.py"
    script.write_text(WEATHER_SERVER, encoding="utf-8")
    spec = {"command": sys.executable, "args": [str(script)]}
    hub = McpHub()
    window = ToolsWindow(hub, ApprovalPolicy(), DictSecrets(), lambda: "chat-1", lambda: None)
    qtbot.addWidget(window)
    try:
        window.editor.setPlainText(json.dumps({"mcpServers": {"weather-service": spec}}))
        assert window.save_servers()
        run(window.list_tools())
        window.show()
        qtbot.waitExposed(window)
        tree = window.tree
        top = tree.topLevelItem(0)
        tool = top.child(0)
        assert tool.text(0) == "get_weather_forecast_for_city"
        fm = tree.fontMetrics()
        needed = fm.horizontalAdvance(tool.text(0)) + 2 * tree.indentation()
        assert tree.header().sectionSize(0) >= needed  # was 100 px: "get_w…"
        assert top.isFirstColumnSpanned()  # "weather-service (running)" across the row
    finally:
        window.deleteLater()
        hub.close()


def test_c11_the_new_collection_dialog_is_wide_enough_for_its_title(
    session: ChatSession, tmp_path: Path, qtbot: Any
) -> None:
    window, _settings = _window(session, tmp_path, qtbot)
    collections = window.document_drops.collections.open()
    dialog = collections.name_dialog(tmp_path / "recipes")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.windowTitle() == "New collection" and dialog.textValue() == "recipes"
    title = dialog.fontMetrics().horizontalAdvance("New collection")
    assert dialog.width() >= title + 120  # room for a title bar's icon and buttons too
    dialog.reject()
    collections.close()
