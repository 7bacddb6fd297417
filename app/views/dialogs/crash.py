"""The "Hearth closed unexpectedly last time" dialog.

Shows one crash log (read-only text) with Open folder / Copy / Dismiss. Dismiss (and closing
the dialog) acknowledges the log so it is offered only once. Knows nothing about how logs are
written (app/system/crashlog.py) or when to show the dialog (the application decides at start-up).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.system import crashlog

_MAX_CHARS = 200_000  # a runaway log must not freeze the dialog


class CrashDialog(QDialog):
    """Offers the newest unacknowledged crash log to the user."""

    def __init__(self, log_path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._path = Path(log_path)
        self.setObjectName("crashDialog")
        self.setWindowTitle(self.tr("Hearth closed unexpectedly"))
        self.resize(720, 480)
        self._text = self._build_text_view()
        layout = QVBoxLayout(self)
        layout.addWidget(self._build_intro())
        layout.addWidget(self._text)
        layout.addWidget(self._build_buttons())

    @property
    def log_text(self) -> str:
        return self._text.toPlainText()

    def _build_intro(self) -> QLabel:
        label = QLabel(
            self.tr(
                "Hearth stopped because of an error last time. The report below stays on this "
                "computer; you can copy it into a bug report.\n{path}"
            ).format(path=self._path)
        )
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    def _build_text_view(self) -> QPlainTextEdit:
        view = QPlainTextEdit(self)
        view.setObjectName("crashLogText")
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        view.setPlainText(self._read_log())
        return view

    def _build_buttons(self) -> QDialogButtonBox:
        box = QDialogButtonBox(self)
        open_button = QPushButton(self.tr("Open folder"), self)
        copy_button = QPushButton(self.tr("Copy"), self)
        dismiss_button = QPushButton(self.tr("Dismiss"), self)
        open_button.setObjectName("crashOpenFolder")
        copy_button.setObjectName("crashCopy")
        dismiss_button.setObjectName("crashDismiss")
        box.addButton(open_button, QDialogButtonBox.ButtonRole.ActionRole)
        box.addButton(copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        box.addButton(dismiss_button, QDialogButtonBox.ButtonRole.AcceptRole)
        open_button.clicked.connect(self.on_open_folder_clicked)
        copy_button.clicked.connect(self.on_copy_clicked)
        dismiss_button.clicked.connect(self.accept)
        return box

    def _read_log(self) -> str:
        try:
            text = self._path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return self.tr("Could not read {path}: {error}").format(path=self._path, error=exc)
        return text if len(text) <= _MAX_CHARS else text[-_MAX_CHARS:]

    def on_open_folder_clicked(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self._path.parent)))

    def on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.log_text)

    def done(self, result: int) -> None:  # Qt override: every way of closing acknowledges
        # A read-only log dir must not keep the dialog open.
        with contextlib.suppress(OSError):
            crashlog.acknowledge(self._path)
        super().done(result)
