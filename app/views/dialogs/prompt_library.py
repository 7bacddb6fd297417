"""The prompt library bar above the system-prompt box: pick, save, rename and delete saved
system prompts.

Owns `PromptLibraryBar` (a combo of saved prompts, "Custom" when the box holds text of its own,
and a menu with Save as…, Rename…, Delete) and `PromptLibrary`, which runs the store calls on
the database worker and republishes the list. Picking a prompt copies its text into the chat's
own system prompt (the chat keeps that copy; editing or deleting the saved prompt never changes
a chat). Does not own the system-prompt box (`SamplingPanel`) or the store (`app.store`).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QMenu,
    QToolButton,
    QWidget,
)

from app.bridge import DbWorker
from app.store import SavedPrompt
from app.store.prompts import delete_prompt, list_prompts, rename_prompt, save_prompt


class PromptLibrary(QObject):
    """The saved prompts, loaded and changed on the database worker."""

    sig_changed = Signal(list)  # list[SavedPrompt], by name

    def __init__(self, db: DbWorker, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.db = db
        self.prompts: list[SavedPrompt] = []

    async def refresh(self) -> None:
        self.prompts = await self.db.call(list_prompts)
        self.sig_changed.emit(self.prompts)

    async def save(self, name: str, text: str) -> None:
        await self.db.call(save_prompt, name, text)
        await self.refresh()

    async def rename(self, prompt_id: str, name: str) -> None:
        await self.db.call(rename_prompt, prompt_id, name)
        await self.refresh()

    async def delete(self, prompt_id: str) -> None:
        await self.db.call(delete_prompt, prompt_id)
        await self.refresh()


class PromptLibraryBar(QWidget):
    sig_prompt_chosen = Signal(str)  # the saved prompt's text, for the chat's system prompt
    sig_save_requested = Signal(str)  # a name for the current text
    sig_rename_requested = Signal(str, str)  # prompt id, new name
    sig_delete_requested = Signal(str)  # prompt id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("promptLibrary")
        self.combo = QComboBox(self)
        self.combo.setObjectName("promptCombo")
        self.combo.setAccessibleName(self.tr("Saved system prompts"))
        self.combo.setToolTip(self.tr("Saved system prompts: pick one for this chat"))
        self.menu_button = QToolButton(self)
        self.menu_button.setText("…")
        self.menu_button.setAccessibleName(self.tr("Manage saved prompts"))
        self.menu_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self)
        self.save_action = menu.addAction(self.tr("Save as a new prompt…"))
        self.rename_action = menu.addAction(self.tr("Rename…"))
        self.delete_action = menu.addAction(self.tr("Delete"))
        self.menu_button.setMenu(menu)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.combo, 1)
        layout.addWidget(self.menu_button)
        self._prompts: list[SavedPrompt] = []
        self._text = ""
        self.combo.activated.connect(self._on_combo_activated)
        self.save_action.triggered.connect(self._on_save_triggered)
        self.rename_action.triggered.connect(self._on_rename_triggered)
        self.delete_action.triggered.connect(self._on_delete_triggered)
        self.set_prompts([])

    def set_prompts(self, prompts: list[SavedPrompt]) -> None:
        self._prompts = list(prompts)
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItem(self.tr("Custom"), None)
        for prompt in self._prompts:
            self.combo.addItem(prompt.name, prompt.id)
        self.combo.blockSignals(False)
        self.show_text(self._text)

    def show_text(self, text: str) -> None:
        """Select the saved prompt holding exactly ``text`` (else "Custom")."""
        self._text = text
        match = next((p for p in self._prompts if p.text == text), None)
        self.combo.setCurrentIndex(self.combo.findData(match.id) if match else 0)
        chosen = self.current()
        self.rename_action.setEnabled(chosen is not None)
        self.delete_action.setEnabled(chosen is not None)

    def current(self) -> SavedPrompt | None:
        prompt_id = self.combo.currentData()
        return next((p for p in self._prompts if p.id == prompt_id), None)

    def _on_combo_activated(self, _index: int) -> None:
        chosen = self.current()
        if chosen is not None:
            self.sig_prompt_chosen.emit(chosen.text)
        self.show_text(chosen.text if chosen else self._text)

    def _ask(self, title: str, label: str, text: str = "") -> str:
        name, ok = QInputDialog.getText(self, title, label, QLineEdit.EchoMode.Normal, text)
        return name.strip() if ok else ""

    def _on_save_triggered(self) -> None:
        name = self._ask(self.tr("Save system prompt"), self.tr("Name:"))
        if name:
            self.sig_save_requested.emit(name)

    def _on_rename_triggered(self) -> None:
        chosen = self.current()
        if chosen is None:
            return
        name = self._ask(self.tr("Rename saved prompt"), self.tr("New name:"), chosen.name)
        if name and name != chosen.name:
            self.sig_rename_requested.emit(chosen.id, name)

    def _on_delete_triggered(self) -> None:
        chosen = self.current()
        if chosen is not None:
            self.sig_delete_requested.emit(chosen.id)


def connect_library(bar: PromptLibraryBar, library: PromptLibrary, run: Any, text: Any) -> None:
    """Wire the bar to the library: ``run`` schedules a coroutine, ``text()`` is the current
    system prompt (what Save stores)."""
    library.sig_changed.connect(bar.set_prompts)
    bar.sig_save_requested.connect(lambda name: run(library.save(name, text())))
    bar.sig_rename_requested.connect(lambda pid, name: run(library.rename(pid, name)))
    bar.sig_delete_requested.connect(lambda pid: run(library.delete(pid)))
