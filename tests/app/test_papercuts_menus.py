"""A new user's papercuts of issue 34 (part C) around the window's menus, dialogs and the dark
theme: Preferences where people look (C14), readable check boxes (C14), file dialogs that open
at home or the last folder used (C6), and columns and titles that are not cut (C11). Real
widgets offscreen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QAction, QColor, QImage
from PySide6.QtWidgets import QApplication, QCheckBox, QStyle, QStyleOptionButton, QToolBar

from app.chat.session import ChatSession
from app.system.settings import Settings
from app.views.dialogs.preferences import PreferencesDialog
from app.views.main_window import MainWindow
from app.views.theme import apply_theme, dark_palette
from app.views.window_extras import WindowExtras


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
