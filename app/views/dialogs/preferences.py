"""The Preferences dialog: text size, the context length and thread count a local model is
loaded with, when an idle model is unloaded, the disk budget for chats' saved caches, and the
safety review (`app.views.dialogs.safety_options.SafetyBox`).

Owns the fields and saving them through `app.system.settings` when accepted. The text
size applies at once (the caller re-applies it); context length and threads apply when a local
model is next loaded (`Application.engine_options`). Does not own loading.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.chat.safety_config import SafetyConfig
from app.system.settings import (
    CONTEXT_LENGTHS,
    FONT_SIZES,
    IDLE_UNLOAD_MINUTES,
    SAVED_CACHES_GB,
    THREADS,
    Settings,
)
from app.views.dialogs.safety_options import SafetyBox


def _spin(parent: QWidget, allowed: range, value: int, zero_text: str, suffix: str) -> QSpinBox:
    """A spin box whose lowest value, 0, reads as ``zero_text`` ("Automatic")."""
    spin = QSpinBox(parent)
    spin.setRange(0, allowed.stop - 1)
    spin.setSpecialValueText(zero_text)
    spin.setSuffix(suffix)
    spin.setValue(value)
    return spin


class PreferencesDialog(QDialog):
    def __init__(
        self,
        settings: Settings,
        parent: QWidget | None = None,
        check_blocklist: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("preferencesDialog")
        self.setWindowTitle(self.tr("Preferences"))
        self.settings = settings
        self.font_size = _spin(
            self, FONT_SIZES, settings.font_size(), self.tr("System size"), self.tr(" pt")
        )
        self.context = _spin(
            self, CONTEXT_LENGTHS, settings.context_length(), self.tr("Model's own"),
            self.tr(" tokens"),
        )  # fmt: skip
        self.context.setSingleStep(1024)
        self.threads = _spin(self, THREADS, settings.threads(), self.tr("Automatic"), "")
        self.idle_unload = _spin(
            self, IDLE_UNLOAD_MINUTES, settings.idle_unload_minutes(), self.tr("Never"),
            self.tr(" min"),
        )  # fmt: skip
        self.saved_caches = _spin(
            self, SAVED_CACHES_GB, settings.saved_caches_gb(), self.tr("Off"), self.tr(" GB")
        )
        form = QFormLayout()
        form.addRow(self.tr("Text size"), self.font_size)
        form.addRow(self.tr("Context length"), self.context)
        form.addRow(self.tr("CPU threads"), self.threads)
        form.addRow(self.tr("Unload the model after idle"), self.idle_unload)
        form.addRow(self.tr("Saved chat caches (resume at once)"), self.saved_caches)
        fields = (self.font_size, self.context, self.threads, self.idle_unload, self.saved_caches)
        for label, field in enumerate(fields):
            item = form.itemAt(label, QFormLayout.ItemRole.LabelRole)
            label_widget = item.widget() if item is not None else None
            if isinstance(label_widget, QLabel):
                field.setAccessibleName(label_widget.text())
        note = QLabel(
            self.tr("Context length, threads and saved caches apply when a local model is loaded.")
        )
        note.setWordWrap(True)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.safety = SafetyBox(SafetyConfig.from_dict(settings.safety()), check_blocklist, self)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(self.safety)
        layout.addWidget(buttons)

    def accept(self) -> None:
        """Save; a value between 0 and the lowest allowed one means "as low as allowed". A
        blocklist that cannot be used keeps the dialog open with its problem shown."""
        if not self.safety.validate():
            return
        self.settings.set_safety(self.safety.config().to_dict())
        self.settings.set_font_size(_fit(self.font_size.value(), FONT_SIZES))
        self.settings.set_context_length(_fit(self.context.value(), CONTEXT_LENGTHS))
        self.settings.set_threads(_fit(self.threads.value(), THREADS))
        self.settings.set_idle_unload_minutes(self.idle_unload.value())
        self.settings.set_saved_caches_gb(self.saved_caches.value())
        super().accept()


def _fit(value: int, allowed: range) -> int:
    return 0 if value == 0 else max(allowed.start, value)
