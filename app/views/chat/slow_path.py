"""The lasting "slower path" notice: a status-bar button, model-menu lines and their explanation.

Owns showing, while the loaded model's `ModelInfo.slow_path_reason` is set, a "⚠ Slower path"
button in the status bar (the full reason in its tooltip), a disabled line plus a "why?" action
at the top of the model menu, and the message box both open: the reason and what the user can
do about it. Does not own deciding the path (the engine) nor where the widgets sit (the main
window adds the button and the actions).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMessageBox, QToolButton, QWidget

from engine.types import ModelInfo


class SlowPathNotice(QObject):
    """Shows why the loaded model runs on a slower path until another model loads."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._window = parent
        self.model_name = ""
        self.reason = ""
        self.button = QToolButton(parent)
        self.button.setObjectName("slowPathButton")
        self.button.setAutoRaise(True)
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.setText(self.tr("⚠ Slower path"))
        self.button.setStyleSheet("font-weight: 600;")
        self.button.clicked.connect(self.on_button_clicked)
        self.line = QAction(self.tr("⚠ Running on the slower float32 path"), parent)
        self.line.setObjectName("slowPathLine")
        self.line.setEnabled(False)
        self.why = QAction(self.tr("Why, and what to do…"), parent)
        self.why.setObjectName("slowPathWhy")
        self.why.triggered.connect(self.on_button_clicked)
        self.separator = QAction(parent)
        self.separator.setSeparator(True)
        self.set_model(None)

    def menu_actions(self) -> list[QAction]:
        """The lines for the top of the model menu (hidden while there is no reason)."""
        return [self.line, self.why, self.separator]

    def set_model(self, info: ModelInfo | None) -> None:
        """Show the notice for ``info`` (hide it for None or a model on its usual path)."""
        self.model_name = info.name if info is not None else ""
        self.reason = info.slow_path_reason if info is not None else ""
        shown = bool(self.reason)
        tip = self.tr("“{name}” runs on the slower float32 path: {reason}").format(
            name=self.model_name, reason=self.reason
        )
        self.button.setToolTip(tip if shown else "")
        self.line.setToolTip(tip if shown else "")
        for widget in (self.button, self.line, self.why, self.separator):
            widget.setVisible(shown)

    def on_button_clicked(self) -> None:
        """Explain the reason and the way out; open(), not exec(): no nested event loop."""
        if not self.reason:
            return
        box = QMessageBox(self._window)
        box.setObjectName("slowPathDialog")
        box.setIcon(QMessageBox.Icon.Information)
        box.setWindowTitle(self.tr("Slower path"))
        box.setText(
            self.tr("“{name}” runs on the slower float32 path.").format(name=self.model_name)
        )
        box.setInformativeText(self._advice())
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def _advice(self) -> str:
        why = self.tr("Why: {reason}").format(reason=self.reason)
        fix = self.tr(
            "What you can do: use a GGUF file in Q4_K_M, Q5_K_M, Q6_K or Q8_0 of a supported "
            "architecture (Llama, for example). Replies work as they are, only more slowly "
            "and with more memory."
        )
        return f"{why}\n\n{fix}"
