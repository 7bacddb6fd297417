"""Light and dark appearance: Fusion palettes plus the app's style sheet.

Owns deciding whether "system" means dark (from the platform's colour scheme, falling back to
the default palette's window colour) and applying the palette and `assets/styles/hearth.qss`.
Does not own the saved choice (`app.system.settings`).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

STYLES = Path(__file__).resolve().parents[2] / "assets" / "styles"


def system_prefers_dark() -> bool:
    hints = QGuiApplication.styleHints()
    scheme = hints.colorScheme() if hints is not None else Qt.ColorScheme.Unknown
    if scheme != Qt.ColorScheme.Unknown:
        return scheme == Qt.ColorScheme.Dark
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def resolve_dark(theme: str) -> bool:
    return system_prefers_dark() if theme == "system" else theme == "dark"


# Fusion draws a check box's (and radio button's) outline from its palette's window colour,
# darkened: on the dark window that is near-black on near-black, and the Chinese-reply check
# boxes were nearly invisible. Their own palette's window colour is light enough for an
# outline of ~3.8:1 against the panel; nothing else of theirs uses it (their text is
# WindowText, and they paint no background).
INDICATOR_WINDOW = "#9a9ca4"
INDICATOR_CLASSES = ("QCheckBox", "QRadioButton")


def apply_theme(app: QApplication, dark: bool) -> None:
    app.setStyle("Fusion")
    palette = dark_palette() if dark else light_palette()
    app.setPalette(palette)
    indicator = QPalette(palette)
    if dark:
        indicator.setColor(QPalette.ColorRole.Window, QColor(INDICATOR_WINDOW))
    for name in INDICATOR_CLASSES:
        app.setPalette(indicator, name)  # type: ignore[arg-type]  # stubs say bytes; str works, bytes does not
    qss = STYLES / "hearth.qss"
    sheet = qss.read_text(encoding="utf-8") if qss.is_file() else ""
    app.setStyleSheet(sheet.replace("@ACCENT", "#5b8def" if dark else "#2f6fdf"))


def light_palette() -> QPalette:
    return _palette(
        window="#f6f6f7",
        base="#ffffff",
        alt="#f0f0f2",
        text="#1d1d1f",
        button="#ececef",
        highlight="#2f6fdf",
        placeholder="#7a7a80",
    )


def dark_palette() -> QPalette:
    return _palette(
        window="#1f2023",
        base="#26272b",
        alt="#2c2d31",
        text="#e6e6e8",
        button="#303136",
        highlight="#5b8def",
        placeholder="#9a9aa2",
    )


def _palette(**c: str) -> QPalette:
    p = QPalette()
    role = QPalette.ColorRole
    for r, key in [
        (role.Window, "window"),
        (role.Base, "base"),
        (role.AlternateBase, "alt"),
        (role.Button, "button"),
        (role.Highlight, "highlight"),
    ]:
        p.setColor(r, QColor(c[key]))
    for r in (role.WindowText, role.Text, role.ButtonText, role.ToolTipText):
        p.setColor(r, QColor(c["text"]))
    p.setColor(role.ToolTipBase, QColor(c["base"]))
    p.setColor(role.PlaceholderText, QColor(c["placeholder"]))
    p.setColor(role.HighlightedText, QColor("#ffffff"))
    p.setColor(role.Link, QColor(c["highlight"]))
    disabled = QColor(c["placeholder"])
    for r in (role.WindowText, role.Text, role.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, r, disabled)
    return p
