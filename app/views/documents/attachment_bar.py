"""The row above the composer's text box: attachment chips, the exact fit count, a read error.

Owns showing the draft's `AttachmentTray`: one chip per document ("notes.md · 2.1 KB · 512
tokens  ✕", a click removes it), "fits: 3,214 of 8,192 tokens" (or "does not fit whole: 12,034
of 8,192 tokens; the best passages are sent per question") and the last file that could not be
read, in one line. Hidden while there is nothing to show. Never touches the typed text. Does
not own reading files or counting (`app.chat.chat_documents`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from app.chat.attachments import human_size
from app.chat.chat_documents import AttachmentTray


class AttachmentBar(QWidget):
    sig_changed = Signal()  # chips were added or removed (the composer's Send may change)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("attachmentBar")
        self.tray: AttachmentTray | None = None
        self.chips: list[QToolButton] = []
        self.fit_label = QLabel(self)
        self.fit_label.setObjectName("fitLabel")
        self.error_label = QLabel(self)
        self.error_label.setObjectName("attachmentError")
        self.error_label.setStyleSheet("color: #c01c28")
        self.error_label.setWordWrap(True)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 4)
        self._layout.setSpacing(6)
        self._layout.addStretch(1)
        self._layout.addWidget(self.error_label)
        self._layout.addWidget(self.fit_label)
        self.setVisible(False)

    def bind(self, tray: AttachmentTray) -> None:
        self.tray = tray
        tray.sig_changed.connect(self.refresh)
        tray.sig_fit_changed.connect(self.on_tray_fit_changed)
        tray.sig_error.connect(self.on_tray_error)
        self.refresh()

    def refresh(self) -> None:
        for chip in self.chips:
            self._layout.removeWidget(chip)
            chip.deleteLater()
        self.chips = []
        items = self.tray.items if self.tray is not None else []
        for i, a in enumerate(items):
            chip = QToolButton(self)
            chip.setObjectName("attachmentChip")
            bits = [a.name, human_size(a.size)]
            if a.tokens is not None:
                bits.append(self.tr("{0} tokens").format(f"{a.tokens:,}"))
            chip.setText(" · ".join(bits) + "  ✕")
            chip.setToolTip(a.text[:400] + ("…" if len(a.text) > 400 else ""))
            chip.setAccessibleName(self.tr("Remove attachment {0}").format(a.name))
            chip.clicked.connect(lambda _=False, n=i: self._remove(n))
            self._layout.insertWidget(i, chip)
            self.chips.append(chip)
        if not items:
            self.fit_label.clear()
        self.sig_changed.emit()
        self._update_visible()

    def _remove(self, index: int) -> None:
        if self.tray is not None:
            self.tray.remove(index)

    def on_tray_fit_changed(self, used: int, window: int, fits: bool) -> None:
        self.refresh()  # the chips now know their token counts
        if not window:
            self.fit_label.clear()
        elif self.tray is not None and self.tray.estimate:
            self.fit_label.setText(
                self.tr("about {0} of {1} tokens (estimated)").format(f"{used:,}", f"{window:,}")
            )
        elif fits:
            self.fit_label.setText(
                self.tr("fits: {0} of {1} tokens").format(f"{used:,}", f"{window:,}")
            )
        else:
            self.fit_label.setText(
                self.tr(
                    "too long to send whole: {0} of {1} tokens; the best passages go with each"
                    " question"
                ).format(f"{used:,}", f"{window:,}")
            )
        self._update_visible()

    def on_tray_error(self, message: str) -> None:
        self.error_label.setText(message)
        self._update_visible()

    def _update_visible(self) -> None:
        self.setVisible(bool(self.chips or self.error_label.text() or self.fit_label.text()))
        self.fit_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
