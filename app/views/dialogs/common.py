"""Dialogs: the one `show_error`, message details, editing a user turn, reading a message.

Owns the mapping from exceptions (EngineError subclasses, store errors, OS errors) to friendly,
translated text. Cancellation is not an error and is never shown. Does not own what caused
the error or any retry logic.
"""

from __future__ import annotations

import asyncio
import concurrent.futures

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMessageBox,
    QPlainTextEdit,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.portability.portable import ImportFormatError
from app.store import StoreError
from engine.errors import (
    BackendUnavailableError,
    ContextOverflowError,
    CorruptModelError,
    EngineClosedError,
    EngineError,
    InsufficientMemoryError,
    InvalidParamsError,
    ModelLoadError,
    ModelNotFoundError,
    RemoteError,
    UnsupportedModelError,
)


def friendly_error(exc: BaseException) -> tuple[str, str] | None:
    """(headline, detail) for ``exc``, or None when it is a cancellation (never shown)."""
    if isinstance(exc, asyncio.CancelledError | concurrent.futures.CancelledError):
        return None
    headlines: list[tuple[type[BaseException], str]] = [
        (ModelNotFoundError, QCoreApplication.translate("Errors", "The model could not be found.")),
        (
            UnsupportedModelError,
            QCoreApplication.translate(
                "Errors", "This model format or architecture is not supported."
            ),
        ),
        (
            CorruptModelError,
            QCoreApplication.translate("Errors", "The model file is damaged or incomplete."),
        ),
        (
            InsufficientMemoryError,
            QCoreApplication.translate("Errors", "There is not enough memory for this model."),
        ),
        (ModelLoadError, QCoreApplication.translate("Errors", "The model could not be loaded.")),
        (
            ContextOverflowError,
            QCoreApplication.translate(
                "Errors", "The conversation is too long for this model's context."
            ),
        ),
        (InvalidParamsError, QCoreApplication.translate("Errors", "A setting is out of range.")),
        (
            BackendUnavailableError,
            QCoreApplication.translate("Errors", "The server could not be reached."),
        ),
        (RemoteError, QCoreApplication.translate("Errors", "The server refused the request.")),
        (EngineClosedError, QCoreApplication.translate("Errors", "The engine has shut down.")),
        (EngineError, QCoreApplication.translate("Errors", "The model reported a problem.")),
        (
            StoreError,
            QCoreApplication.translate("Errors", "Your conversations could not be saved or read."),
        ),
        (ImportFormatError, QCoreApplication.translate("Errors", "This file cannot be imported.")),
        (OSError, QCoreApplication.translate("Errors", "A file could not be read or written.")),
    ]
    headline = next((h for kind, h in headlines if isinstance(exc, kind)), None)
    detail = str(exc) or type(exc).__name__
    return (headline or QCoreApplication.translate("Errors", "Something went wrong."), detail)


def show_error(parent: QWidget | None, exc: BaseException) -> QMessageBox | None:
    """Show ``exc`` in a non-blocking dialog; returns it (None for cancellation)."""
    text = friendly_error(exc)
    if text is None:
        return None
    box = QMessageBox(
        QMessageBox.Icon.Warning,
        QCoreApplication.translate("Errors", "Hearth"),
        text[0],
        parent=parent,
    )
    box.setObjectName("errorDialog")
    box.setInformativeText(text[1])
    box.setStandardButtons(QMessageBox.StandardButton.Ok)
    box.open()  # window-modal but not blocking the event loop: streaming keeps painting
    return box


class TextDialog(QDialog):
    """Read-only, selectable text (message details, "select text" on a message)."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(620, 420)
        view = QTextBrowser(self)
        view.setOpenLinks(False)
        view.setPlainText(text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(view)
        layout.addWidget(buttons)


class EditDialog(QDialog):
    """Edit a user turn; accepting resubmits it as a new branch (the original stays)."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Edit message"))
        self.resize(620, 320)
        self.edit = QPlainTextEdit(self)
        self.edit.setPlainText(text)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText(self.tr("Send as new branch"))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.edit)
        layout.addWidget(buttons)

    def text(self) -> str:
        return self.edit.toPlainText()
