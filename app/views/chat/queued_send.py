"""The strip above the composer while a message waits for the model to open.

Owns saying that the message is waiting ("it will be sent when ready"), or that opening the
model failed (the error, and that the message is kept), with Cancel (the text stays in the
composer, editable again) and, after a failure, Retry. Does not own the queued turn
(`app.chat.send_queue`) or loading (the session).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from app.chat.send_queue import QueuedSend


class QueuedSendBar(QFrame):
    sig_cancel_requested = Signal()
    sig_retry_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("queuedSendBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(self)
        self.label.setObjectName("queuedSendLabel")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.retry_button = QPushButton(self.tr("Retry"), self)
        self.retry_button.setObjectName("queuedRetryButton")
        self.cancel_button = QPushButton(self.tr("Cancel sending"), self)
        self.cancel_button.setObjectName("queuedCancelButton")
        self.cancel_button.setToolTip(self.tr("Keep the text in the box without sending it"))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 6)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.retry_button)
        layout.addWidget(self.cancel_button)
        self.retry_button.clicked.connect(self.sig_retry_requested)
        self.cancel_button.clicked.connect(self.sig_cancel_requested)
        self.show_queued(None)

    def show_queued(self, queued: QueuedSend | None) -> None:
        self.setVisible(queued is not None)
        if queued is None:
            return
        error = queued.error.rstrip(".")
        if queued.failed and queued.edit_of:
            text = self.tr("The model could not be opened: {0}. Your edit is kept: retry, or "
                           "choose another model.").format(error)  # fmt: skip
        elif queued.failed:
            text = self.tr("The model could not be opened: {0}. Your message is kept: retry, "
                           "or choose another model.").format(error)  # fmt: skip
        elif queued.edit_of:
            text = self.tr("Waiting for the model to open… your edit will be sent when ready.")
        else:
            text = self.tr("Waiting for the model to open… it will be sent when ready.")
        self.label.setText(text)
        self.setAccessibleDescription(text)
        self.retry_button.setVisible(queued.failed)
