"""Keyboard shortcuts, the sheet that lists them (Ctrl+/) and the text size (Ctrl +/−/0).

Owns the window-wide actions the menus lack (stop, regenerate and copy the last reply, focus
the composer, previous/next alternative, a temporary chat, text size, preferences), a "Help"
menu, the shortcut sheet (every shortcut, also those other widgets own, in one translated
table) and applying the remembered text size to the transcript and the composer. Does not own
what the actions do (the session, the organiser) or the preferences file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.bridge import blocklist_problem
from app.chat.safety_config import SafetyConfig
from app.chat.temporary import start_temporary
from app.system.settings import FONT_SIZES

if TYPE_CHECKING:
    from collections.abc import Callable

    from app.listmodels.messages import MessageItem
    from app.system.settings import Settings
    from app.views.main_window import MainWindow


# Keys of the main window's menu actions: typed once, here, for both the menus and the sheet.
MODELS_KEY = "Ctrl+Shift+M"
PANEL_KEY = "Ctrl+Shift+S"
THEME_KEY = "Ctrl+Shift+L"


def existing_shortcuts() -> list[tuple[str, str]]:
    """Shortcuts other widgets own (menus, the composer, the sidebar), for the sheet."""
    return [
        (
            QKeySequence(QKeySequence.StandardKey.New).toString(),
            QCoreApplication.translate("Shortcuts", "New chat"),
        ),
        (
            QKeySequence(QKeySequence.StandardKey.Find).toString(),
            QCoreApplication.translate("Shortcuts", "Search chats"),
        ),
        ("Enter", QCoreApplication.translate("Shortcuts", "Send the message")),
        ("Shift+Enter", QCoreApplication.translate("Shortcuts", "New line in the message")),
        ("Esc", QCoreApplication.translate("Shortcuts", "Stop the reply (in the message box)")),
        (
            "F2",
            QCoreApplication.translate("Shortcuts", "Rename the chosen chat (in the chat list)"),
        ),
        (
            "Del",
            QCoreApplication.translate(
                "Shortcuts", "Move the chosen chat to the trash (in the chat list)"
            ),
        ),
        (MODELS_KEY, QCoreApplication.translate("Shortcuts", "Models")),
        (PANEL_KEY, QCoreApplication.translate("Shortcuts", "Show or hide the settings panel")),
        (THEME_KEY, QCoreApplication.translate("Shortcuts", "Dark / light")),
    ]


class Shortcuts(QObject):
    def __init__(self, window: MainWindow, settings: Settings) -> None:
        super().__init__(window)
        self.window, self.session, self.settings = window, window.session, settings
        self.actions: list[QAction] = []
        s = self.session
        self._add(
            "Ctrl+.", QCoreApplication.translate("Shortcuts", "Stop the reply"), s.on_stop_requested
        )
        self._add(
            "Ctrl+Shift+R",
            QCoreApplication.translate("Shortcuts", "Regenerate the last reply"),
            self.regenerate_last,
        )
        self._add(
            "Ctrl+Shift+C",
            QCoreApplication.translate("Shortcuts", "Copy the last reply"),
            self.copy_last,
        )
        self._add(
            "Ctrl+L",
            QCoreApplication.translate("Shortcuts", "Focus the message box"),
            self.focus_composer,
        )
        self._add(
            "Alt+Left",
            QCoreApplication.translate("Shortcuts", "Previous alternative of the last reply"),
            self.previous,
        )
        self._add(
            "Alt+Right",
            QCoreApplication.translate("Shortcuts", "Next alternative of the last reply"),
            self.next,
        )
        self._add(
            "Ctrl+Shift+N",
            QCoreApplication.translate("Shortcuts", "New temporary chat"),
            self.temporary_chat,
        )
        self._add(
            "Ctrl++",
            QCoreApplication.translate("Shortcuts", "Larger text"),
            lambda: self.zoom(1),
            also="Ctrl+=",
        )
        self._add(
            "Ctrl+-", QCoreApplication.translate("Shortcuts", "Smaller text"), lambda: self.zoom(-1)
        )
        self._add(
            "Ctrl+0",
            QCoreApplication.translate("Shortcuts", "Default text size"),
            lambda: self.set_font_size(0),
        )
        self._add(
            "Ctrl+,", QCoreApplication.translate("Shortcuts", "Preferences…"), self.open_preferences
        )
        self._add(
            "Ctrl+/", QCoreApplication.translate("Shortcuts", "Keyboard shortcuts"), self.open_sheet
        )
        self._place_preferences()
        menu = window.menuBar().addMenu(QCoreApplication.translate("Shortcuts", "&Help"))
        menu.addAction(self.actions[-1])  # the shortcut sheet
        self.set_font_size(settings.font_size(), remember=False)

    def _place_preferences(self) -> None:
        """Preferences where people look for it: Edit > Preferences (the application menu on
        macOS, through its role) and a gear on the toolbar; it was only under Help."""
        regenerate, copy, preferences = self.actions[1], self.actions[2], self.actions[-2]
        preferences.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.preferences_action = preferences
        edit = self.window.edit_menu
        edit.addActions([copy, regenerate])
        edit.addSeparator()
        edit.addAction(preferences)
        self.gear = QAction(QCoreApplication.translate("Shortcuts", "Preferences"), self.window)
        self.gear.setObjectName("preferencesButton")
        self.gear.setIconText("⚙")  # a toolbar button shows this where no icon is given
        keys = preferences.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        self.gear.setToolTip(
            QCoreApplication.translate("Shortcuts", "Preferences ({0})").format(keys)
        )
        self.gear.triggered.connect(lambda _checked=False: self.open_preferences())
        bar = self.window.findChild(QToolBar, "mainToolbar")
        if bar is not None:
            bar.addAction(self.gear)
            button = bar.widgetForAction(self.gear)
            if button is not None:
                button.setAccessibleName(self.gear.text())

    def _add(self, keys: str, label: str, slot: Callable[[], object], also: str = "") -> None:
        action = QAction(label, self.window)
        action.setShortcuts([QKeySequence(k) for k in (keys, also) if k])
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        self.window.addAction(action)
        self.actions.append(action)

    def table(self) -> list[tuple[str, str]]:
        """(keys, what they do) for the sheet, in the order shown."""
        own = [(a.shortcut().toString(QKeySequence.SequenceFormat.NativeText), a.text())
               for a in self.actions]  # fmt: skip
        return existing_shortcuts() + own

    # -- the last reply ---------------------------------------------------------------------
    def last_reply(self) -> MessageItem | None:
        items = self.session.messages.items()
        return next((i for i in reversed(items) if i.record.role == "assistant"), None)

    def regenerate_last(self) -> None:
        if (reply := self.last_reply()) is not None:
            self.session.spawn(self.session.regenerate(reply.id))

    def copy_last(self) -> None:
        if (reply := self.last_reply()) is not None:
            QGuiApplication.clipboard().setText(reply.record.content)
            self.window.on_session_notice(
                QCoreApplication.translate("Shortcuts", "Last reply copied.")
            )

    def previous(self) -> None:
        if (reply := self.last_reply()) is not None:
            self.session.spawn(self.session.navigate(reply.id, -1))

    def next(self) -> None:
        if (reply := self.last_reply()) is not None:
            self.session.spawn(self.session.navigate(reply.id, 1))

    def focus_composer(self) -> None:
        self.window.composer.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def temporary_chat(self) -> None:
        self.session.spawn(start_temporary(self.session))

    # -- text size --------------------------------------------------------------------------
    def font_size(self) -> int:
        return self.window.chat.font().pointSize()

    def zoom(self, step: int) -> None:
        size = self.font_size() + step
        if size in FONT_SIZES:
            self.set_font_size(size)

    def set_font_size(self, points: int, *, remember: bool = True) -> None:
        """Show the transcript and the composer at ``points`` (0: the style's own size).

        A style sheet on the two widgets, not `setFont`: the application's style sheet sets
        the composer's size and is re-applied on a theme change, which would undo a font."""
        for widget in (self.window.chat, self.window.composer.edit):
            widget.setStyleSheet(f"font-size: {points}pt;" if points else "")
            widget.ensurePolished()
        if remember:
            self.settings.set_font_size(points)

    # -- dialogs ----------------------------------------------------------------------------
    def open_sheet(self) -> QDialog:
        sheet = ShortcutSheet(self.table(), self.window)
        sheet.open()
        return sheet

    def open_preferences(self) -> QDialog:
        from app.views.dialogs.preferences import PreferencesDialog

        dialog = PreferencesDialog(self.settings, self.window, blocklist_problem)
        dialog.accepted.connect(lambda: self.set_font_size(self.settings.font_size()))

        def on_accepted() -> None:  # replies from now on are reviewed as set
            self.session.safety_config = SafetyConfig.from_dict(self.settings.safety())

        dialog.accepted.connect(on_accepted)
        dialog.open()
        return dialog


class ShortcutSheet(QDialog):
    """Every keyboard shortcut, in a read-only two-column table."""

    def __init__(self, rows: list[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("shortcutSheet")
        self.setWindowTitle(self.tr("Keyboard shortcuts"))
        self.resize(520, 520)
        self.table = QTableWidget(len(rows), 2, self)
        self.table.setObjectName("shortcutTable")
        self.table.setAccessibleName(self.tr("Keyboard shortcuts"))
        self.table.setHorizontalHeaderLabels([self.tr("Keys"), self.tr("Action")])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for row, (keys, label) in enumerate(rows):
            self.table.setItem(row, 0, QTableWidgetItem(keys))
            self.table.setItem(row, 1, QTableWidgetItem(label))
        self.table.resizeColumnToContents(0)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
