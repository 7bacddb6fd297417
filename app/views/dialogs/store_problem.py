"""The "Hearth cannot open your conversations" dialog, shown at start-up instead of a crash.

Explains what is wrong with the conversation database (damaged or not a database, saved by
a newer Hearth, a folder that cannot be written) and offers: move the file aside and start
fresh (it is renamed, never deleted: `app.store.aside.move_aside`), try again (after fixing the
folder), or quit. Knows nothing about opening the store; the application asks with
`ask_about_store` and retries.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.store import NewerSchemaError
from app.store.aside import move_aside


class StoreProblemDialog(QDialog):
    """Accepted: try to open again (the file was moved aside, or the user fixed something).
    Rejected: quit."""

    def __init__(self, path: Path, error: BaseException, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.moved_to: Path | None = None
        self.setObjectName("storeProblemDialog")
        self.setWindowTitle(self.tr("Hearth cannot open your conversations"))
        self.resize(620, 360)
        self._intro = QLabel(self._explain(error), self)
        self._intro.setObjectName("storeProblemText")
        self._intro.setWordWrap(True)
        self._intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._detail = QPlainTextEdit(f"{self.path}\n\n{error}", self)
        self._detail.setObjectName("storeProblemDetail")
        self._detail.setReadOnly(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self._intro)
        layout.addWidget(self._detail)
        layout.addWidget(self._build_buttons())

    def _explain(self, error: BaseException) -> str:
        if isinstance(error, NewerSchemaError):
            why = self.tr(
                "Your conversations were saved by a newer version of Hearth. Update Hearth to "
                "open them."
            )
        else:
            why = self.tr(
                "The conversation database is damaged or is not a Hearth database, or its "
                "folder cannot be written (permissions, a full disk)."
            )
        return why + "\n\n" + self.tr(
            "You can move the file aside and start with no conversations: it is renamed, "
            "never deleted, so it can still be recovered. Or fix the folder and try again."
        )  # fmt: skip

    def _build_buttons(self) -> QDialogButtonBox:
        box = QDialogButtonBox(self)
        self.fresh_button = QPushButton(self.tr("Move aside and start fresh"), self)
        self.retry_button = QPushButton(self.tr("Try again"), self)
        self.quit_button = QPushButton(self.tr("Quit"), self)
        folder_button = QPushButton(self.tr("Open folder"), self)
        for button, name in ((self.fresh_button, "storeStartFresh"), (self.retry_button,
                             "storeRetry"), (self.quit_button, "storeQuit"),
                             (folder_button, "storeOpenFolder")):  # fmt: skip
            button.setObjectName(name)
        self.fresh_button.setEnabled(self.path.exists())
        box.addButton(self.fresh_button, QDialogButtonBox.ButtonRole.AcceptRole)
        box.addButton(self.retry_button, QDialogButtonBox.ButtonRole.AcceptRole)
        box.addButton(folder_button, QDialogButtonBox.ButtonRole.ActionRole)
        box.addButton(self.quit_button, QDialogButtonBox.ButtonRole.RejectRole)
        self.fresh_button.clicked.connect(self.on_fresh_clicked)
        self.retry_button.clicked.connect(self.accept)
        self.quit_button.clicked.connect(self.reject)
        folder_button.clicked.connect(self.on_open_folder_clicked)
        return box

    def on_fresh_clicked(self) -> None:
        try:
            self.moved_to = move_aside(self.path)
        except OSError as exc:  # a read-only folder: say so, stay open
            self._intro.setText(
                self.tr("The file could not be moved aside: {0}").format(exc.strerror or exc)
            )
            return
        self.accept()

    def on_open_folder_clicked(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.path.parent)))

    @property
    def text(self) -> str:
        return self._intro.text()


async def ask_about_store(parent: QWidget | None, path: Path, error: BaseException) -> bool:
    """Show the dialog without blocking the event loop; True: open again, False: quit."""
    dialog = StoreProblemDialog(path, error, parent)
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def on_finished(result: int) -> None:
        if not done.done():
            done.set_result(result)

    dialog.finished.connect(on_finished)
    dialog.open()
    try:
        return await done == QDialog.DialogCode.Accepted.value
    finally:
        dialog.deleteLater()
