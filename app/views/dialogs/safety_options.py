"""The safety review's controls: its Preferences (`SafetyBox`) and a chat's own choice
(`SafetyChoiceBox`, under the settings panel).

`SafetyBox` edits a `SafetyConfig`: the switch for chats left at "default", the guard (a local
Qwen3Guard-Gen .gguf — the downloaded guard models are offered by name — or an
OpenAI-compatible endpoint and the model name it serves), the
blocklist (one entry a line, ``re:`` for a regular expression), the safety system prompt,
strict (Controversial stops a turn too) and required (a guard that cannot answer stops the
turn). A blocklist is checked before it is saved, by the function the caller passes (the
engine's own parser, through the bridge). `install_safety_choice` wires a chat's choice
("Follow Preferences", "On", "Off") to the session. Does not own storage or the review.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from app.chat.chat_settings import ChatSettings
from app.chat.safety_config import CHAT_CHOICES, SafetyConfig
from app.hub import hub_calls

if TYPE_CHECKING:
    from app.views.main_window import MainWindow


class SafetyBox(QGroupBox):
    """The Preferences' "Safety review" section."""

    def __init__(
        self,
        config: SafetyConfig,
        check_blocklist: Callable[[str], str | None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(self.tr("Safety review"), parent)
        self.setObjectName("safetyBox")
        self._check_blocklist = check_blocklist
        self.enabled = QCheckBox(self.tr("Review chats (each chat can choose for itself)"), self)
        # The downloaded guard models to choose from (the catalogue's Safety section); any
        # other .gguf path, or the name an endpoint serves, can still be typed.
        self.guard_model = QComboBox(self)
        self.guard_model.setEditable(True)
        for guard, path in hub_calls.downloaded_guards():
            self.guard_model.addItem(guard.name, str(path))
        self.guard_model.setCurrentIndex(self.guard_model.findData(config.guard_model))
        if self.guard_model.currentIndex() < 0:
            self.guard_model.setEditText(config.guard_model)
        if (edit := self.guard_model.lineEdit()) is not None:  # editable: it has one
            edit.setPlaceholderText(self.tr("Qwen3Guard-Gen .gguf file, or served name"))
        self.guard_url = QLineEdit(config.guard_base_url, self)
        self.guard_url.setPlaceholderText(self.tr("optional: http://127.0.0.1:8000/v1"))
        self.blocklist = QPlainTextEdit(config.blocklist, self)
        self.blocklist.setPlaceholderText(self.tr("one word or phrase a line; re: for a pattern"))
        self.blocklist.setMaximumHeight(90)
        self.system_prompt = QCheckBox(self.tr("Add a safety system prompt"), self)
        self.strict = QCheckBox(self.tr("Strict: stop controversial content too"), self)
        self.required = QCheckBox(self.tr("Required: stop when the guard is unavailable"), self)
        for box, on in (
            (self.enabled, config.enabled),
            (self.system_prompt, config.system_prompt),
            (self.strict, config.strict),
            (self.required, config.required),
        ):
            box.setChecked(on)
        self.problem = QLabel(self)
        self.problem.setObjectName("safetyProblem")
        self.problem.setWordWrap(True)
        self.problem.hide()
        form = QFormLayout(self)
        form.addRow(self.enabled)
        form.addRow(self.tr("Guard model"), self.guard_model)
        form.addRow(self.tr("Guard endpoint"), self.guard_url)
        form.addRow(self.tr("Blocklist"), self.blocklist)
        form.addRow(self.system_prompt)
        form.addRow(self.strict)
        form.addRow(self.required)
        form.addRow(self.problem)

    def config(self) -> SafetyConfig:
        return SafetyConfig(
            enabled=self.enabled.isChecked(),
            guard_model=self._guard_choice(),
            guard_base_url=self.guard_url.text().strip(),
            blocklist=self.blocklist.toPlainText(),
            system_prompt=self.system_prompt.isChecked(),
            strict=self.strict.isChecked(),
            required=self.required.isChecked(),
        )

    def _guard_choice(self) -> str:
        """The chosen guard's file, or what was typed (a path, or an endpoint's model)."""
        text = self.guard_model.currentText().strip()
        index = self.guard_model.findText(text)
        return str(self.guard_model.itemData(index)) if index >= 0 and text else text

    def validate(self) -> bool:
        """Whether the blocklist can be used; else its problem is shown, in one line."""
        problem = (
            self._check_blocklist(self.blocklist.toPlainText()) if self._check_blocklist else None
        )
        self.problem.setText(problem or "")
        self.problem.setVisible(bool(problem))
        return problem is None


class SafetyChoiceBox(QGroupBox):
    """A chat's own choice: follow the Preferences, or review it or not whatever they say."""

    sig_choice_changed = Signal(str)  # one of CHAT_CHOICES

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(self.tr("Safety review"), parent)
        self.setObjectName("safetyChoice")
        self.choice = QComboBox(self)
        self.choice.setObjectName("safetyChoiceCombo")
        labels = (self.tr("Follow Preferences"), self.tr("On for this chat"), self.tr("Off"))
        for key, label in zip(CHAT_CHOICES, labels, strict=True):
            self.choice.addItem(label, key)
        self.choice.setAccessibleName(self.tr("Safety review for this chat"))
        form = QFormLayout(self)
        form.addRow(self.choice)
        self.choice.currentIndexChanged.connect(self._on_changed)

    def set_choice(self, key: str) -> None:
        """Show ``key`` without announcing a change (a chat was opened)."""
        self.choice.blockSignals(True)
        self.choice.setCurrentIndex(max(0, self.choice.findData(key)))
        self.choice.blockSignals(False)

    def _on_changed(self, _index: int) -> None:
        self.sig_choice_changed.emit(str(self.choice.currentData()))


def install_safety_choice(window: MainWindow) -> SafetyChoiceBox:
    """Add the choice at the end of the window's settings panel, wired to the session."""
    box = SafetyChoiceBox(window.panel)
    layout = window.panel.layout()
    assert isinstance(layout, QBoxLayout)  # the panel stacks its rows
    layout.addWidget(box)
    box.sig_choice_changed.connect(window.session.set_safety_choice)

    def on_restored(settings: ChatSettings) -> None:
        box.set_choice(settings.safety)

    window.session.sig_settings_restored.connect(on_restored)
    box.set_choice(window.session.safety_choice)
    return box
