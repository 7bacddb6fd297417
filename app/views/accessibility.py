"""Accessible names for every control, so a screen reader says what each one is.

Owns `unnamed_controls` (the check: interactive widgets whose accessible name, as Qt exposes
it, is empty) and `name_controls`, which names them from what the window already shows: the
form label next to the control (or next to the slider row it belongs to), a placeholder, a
tool tip, or a few well-known object names. `AccessibleNames` runs it on the main window and on
every dialog it owns as that is shown, so controls built by any module are covered. A control that a
module names itself keeps its name. Does not own the widgets.
"""

from __future__ import annotations

from PySide6.QtCore import QChildEvent, QCoreApplication, QEvent, QObject
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QDialog,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLayout,
    QLineEdit,
    QPlainTextEdit,
    QScrollBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)

INTERACTIVE = (
    QAbstractButton, QLineEdit, QPlainTextEdit, QTextEdit, QComboBox, QAbstractSpinBox,
    QAbstractSlider, QAbstractItemView,
)  # fmt: skip


def _known() -> dict[str, str]:
    return {
        "chatView": QCoreApplication.translate("Accessibility", "Conversation"),
        "composerEdit": QCoreApplication.translate("Accessibility", "Message"),
        "systemPrompt": QCoreApplication.translate("Accessibility", "System prompt"),
        "conversationList": QCoreApplication.translate("Accessibility", "Chats"),
    }


def _is_part_of_another(widget: QWidget) -> bool:
    """Pieces of a compound control (a combo box's popup, a spin box's editor, scroll bars)."""
    if isinstance(widget, (QScrollBar, QHeaderView)) or widget.objectName().startswith("qt_"):
        return True  # a header's sections are named by their own text
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, (QComboBox, QAbstractSpinBox)):
            return True
        parent = parent.parentWidget()
    return False


def controls(root: QWidget) -> list[QWidget]:
    """The interactive widgets under ``root`` (itself included) that a user reaches."""
    found = [root, *root.findChildren(QWidget)]
    return [w for w in found if isinstance(w, INTERACTIVE) and not _is_part_of_another(w)]


def accessible_name(widget: QWidget) -> str:
    interface = QAccessible.queryAccessibleInterface(widget)
    return interface.text(QAccessible.Text.Name).strip() if interface is not None else ""


def unnamed_controls(root: QWidget) -> list[QWidget]:
    return [w for w in controls(root) if not accessible_name(w)]


def _form_label(widget: QWidget) -> str:
    """The text of the form label beside ``widget``, beside the row widget holding it, or
    beside the row layout holding it (forms may sit in nested layouts: all are asked)."""
    child: QWidget | None = widget
    while child is not None and child.parentWidget() is not None:
        parent = child.parentWidget()
        for form in parent.findChildren(QFormLayout) if parent is not None else ():
            label = _label_in(form, child)
            if label:
                return label
        child = parent
    return ""


def _label_in(form: QFormLayout, widget: QWidget) -> str:
    for row in range(form.rowCount()):
        field = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
        label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        if field is None or label is None or not isinstance(label.widget(), QLabel):
            continue
        if field.widget() is widget or _layout_holds(field.layout(), widget):
            text = label.widget().text()  # type: ignore[union-attr]
            return text.replace("&", "").rstrip(":： ").strip()
    return ""


def _layout_holds(layout: QLayout | None, widget: QWidget) -> bool:
    if layout is None:
        return False
    for i in range(layout.count()):
        item = layout.itemAt(i)
        if item is not None and (item.widget() is widget or _layout_holds(item.layout(), widget)):
            return True
    return False


def _tab_title(widget: QWidget) -> str:
    if not isinstance(widget, QAbstractItemView):
        return ""
    page: QWidget | None = widget
    while page is not None:
        stack = page.parentWidget()
        tabs = stack.parentWidget() if stack is not None else None
        if isinstance(tabs, QTabWidget) and (at := tabs.indexOf(page)) >= 0:
            return tabs.tabText(at).replace("&", "")
        page = stack
    return ""


def _guess(widget: QWidget) -> str:
    if widget.objectName() in _known():
        return _known()[widget.objectName()]
    if label := _form_label(widget):
        return label
    if isinstance(widget, (QLineEdit, QPlainTextEdit, QTextEdit)) and widget.placeholderText():
        return widget.placeholderText()
    if widget.toolTip().strip():
        return widget.toolTip().strip()
    if isinstance(widget, QAbstractButton) and isinstance(widget.parentWidget(), QLineEdit):
        return QCoreApplication.translate("Accessibility", "Clear")  # a line edit's clear button
    if tab := _tab_title(widget):
        return tab  # the one list or table on a tab page: named as the tab
    viewer = (QTextEdit, QPlainTextEdit, QAbstractItemView)
    if isinstance(widget, viewer) and widget.window() is not widget:
        return widget.window().windowTitle()  # a dialog's text: named as the dialog is
    return ""


def name_controls(root: QWidget) -> None:
    """Name every control under ``root`` that has no accessible name yet."""
    for widget in unnamed_controls(root):
        if name := _guess(widget):
            widget.setAccessibleName(name)


class AccessibleNames(QObject):
    """Names the controls of ``root`` now and of each dialog it owns when that is shown.

    Watches only ``root`` (for dialogs being added to it) and the dialogs: an application-wide
    filter would run Python for every event of the app."""

    def __init__(self, root: QWidget) -> None:
        super().__init__(root)
        name_controls(root)
        root.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        # ChildPolished, not ChildAdded: a child being added is still under construction
        # (not yet a QDialog to Python), while one being polished is built and about to show.
        if kind == QEvent.Type.ChildPolished and isinstance(event, QChildEvent):
            child = event.child()
            if isinstance(child, QDialog):
                name_controls(child)
                child.installEventFilter(self)  # and again at each show: rows added since
        elif kind == QEvent.Type.Show and isinstance(watched, QDialog):
            name_controls(watched)
        return super().eventFilter(watched, event)
