"""The settings panel's "Chinese replies" box: script conversion, punctuation, quotes, spacing.

Owns the four controls and turning them into a `ChineseOptions` (``sig_options_changed``);
`install_chinese_options` puts the box under the sampling panel and wires it to the session
(a change is saved with the open chat; opening a chat shows its own options). Does not own the
conversion (`app.chat.chinese_text`) or where the options are stored (`ChatSettings`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QBoxLayout, QCheckBox, QComboBox, QFormLayout, QGroupBox, QWidget

from app.chat.chat_settings import ChatSettings
from app.chat.chinese_text import ChineseOptions

if TYPE_CHECKING:
    from app.views.main_window import MainWindow

SCRIPTS = ("off", "auto", "traditional_tw", "traditional_hk", "simplified")


class ChineseOptionsBox(QGroupBox):
    sig_options_changed = Signal(object)  # ChineseOptions

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(self.tr("Chinese replies"), parent)
        self.setObjectName("chineseOptions")
        self.script = QComboBox(self)
        self.script.setObjectName("chineseScript")
        for key, label in zip(SCRIPTS, self._script_labels(), strict=True):
            self.script.addItem(label, key)
        self.script.setAccessibleName(self.tr("Convert replies to"))
        self.punctuation = QCheckBox(self.tr("Full-width punctuation"), self)
        self.punctuation.setToolTip(
            self.tr("Half-width , . ! ? ; : between Chinese characters become full-width.")
        )
        self.quotes = QCheckBox(self.tr("Corner-bracket quotes 「」"), self)
        self.quotes.setToolTip(
            self.tr("“ ” and ‘ ’ become 「 」 and 『 』; always on for Traditional replies.")
        )
        self.spacing = QCheckBox(self.tr("Space between Chinese and Latin"), self)
        form = QFormLayout(self)
        form.addRow(self.tr("Script"), self.script)
        form.addRow(self.punctuation)
        form.addRow(self.quotes)
        form.addRow(self.spacing)
        self.setToolTip(self.tr("Applied to this chat's replies as they stream; code is kept."))
        self.script.currentIndexChanged.connect(self._on_any_changed)
        self.punctuation.toggled.connect(self._on_any_changed)
        self.quotes.toggled.connect(self._on_any_changed)
        self.spacing.toggled.connect(self._on_any_changed)

    def _script_labels(self) -> tuple[str, ...]:
        return (
            self.tr("Off"),
            self.tr("Auto: follow the question"),
            self.tr("Traditional (Taiwan)"),
            self.tr("Traditional (Hong Kong)"),
            self.tr("Simplified"),
        )

    def options(self) -> ChineseOptions:
        return ChineseOptions.from_dict(
            {
                "script": self.script.currentData(),
                "punctuation": self.punctuation.isChecked(),
                "spacing": self.spacing.isChecked(),
                "quotes": self.quotes.isChecked(),
            }
        )

    def set_options(self, options: ChineseOptions) -> None:
        """Show ``options`` without announcing a change (a chat was opened)."""
        widgets = (self.script, self.punctuation, self.quotes, self.spacing)
        for widget in widgets:
            widget.blockSignals(True)
        self.script.setCurrentIndex(max(0, SCRIPTS.index(options.script)))
        self.punctuation.setChecked(options.punctuation)
        self.quotes.setChecked(options.quotes)
        self.spacing.setChecked(options.spacing)
        for widget in widgets:
            widget.blockSignals(False)

    def _on_any_changed(self, *_args: object) -> None:
        self.sig_options_changed.emit(self.options())


def install_chinese_options(window: MainWindow) -> ChineseOptionsBox:
    """Add the box at the end of the window's settings panel and wire it to the session."""
    box = ChineseOptionsBox(window.panel)
    layout = window.panel.layout()
    assert isinstance(layout, QBoxLayout)  # the panel stacks its rows
    layout.addWidget(box)
    box.sig_options_changed.connect(window.session.set_chinese)

    def on_restored(settings: ChatSettings) -> None:
        box.set_options(settings.chinese)

    window.session.sig_settings_restored.connect(on_restored)
    box.set_options(window.session.chinese)
    return box
