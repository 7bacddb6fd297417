"""How the open chat talks to the model: its settings as `ChatSession` holds and saves them.

Owns the setters the panel and the window call (sampling parameters, system prompt, thinking
switch, Chinese reply options, the safety review's choice, model spec), `settings()` (what is in
effect now), restoring a chat's own settings when it opens, and saving each change to the open
conversation, or to the defaults a new chat starts from. A mixin of `ChatSession`, which owns
the attributes declared here. Does not own the stored format (`app.chat.chat_settings`) or any
widget.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import SignalInstance

from app.bridge import DbWorker
from app.chat.chat_settings import ChatSettings
from app.chat.chinese_text import ChineseOptions
from app.store import Store
from engine.types import LiveParams, SamplingParams


class ChatSettingsState:
    # Owned by ChatSession (see its __init__); declared for the type checker.
    db: DbWorker
    conversation_id: str | None
    live: LiveParams
    system_prompt: str
    thinking: bool | None
    chinese: ChineseOptions
    safety_choice: str
    model_spec: str | None
    defaults: ChatSettings
    sig_settings_restored: SignalInstance

    @property
    def params(self) -> SamplingParams:
        return self.live.get()

    def set_params(self, params: SamplingParams) -> None:
        """The panel changed: the running reply (if any) samples with it from the next token."""
        self._remember(params=params)
        self.live.set(params)

    def set_system_prompt(self, text: str) -> None:
        self.system_prompt = text
        self._remember(system_prompt=text)

    def set_thinking(self, on: bool | None) -> None:
        self.thinking = on
        self._remember(thinking=on)

    def set_chinese(self, options: ChineseOptions) -> None:
        """Replies from now on are converted so (the one streaming now keeps its options)."""
        self.chinese = options
        self._remember(chinese=options)

    def set_safety_choice(self, choice: str) -> None:
        """This chat's safety review: "default" (the Preferences'), "on" or "off"."""
        self.safety_choice = choice
        self._remember(safety=choice)

    def set_model_spec(self, spec: str | None) -> None:
        """A model was loaded: the open chat remembers it (new chats: the defaults do)."""
        self.model_spec = spec
        self._remember(model=spec)

    def settings(self) -> ChatSettings:
        """The settings in effect now."""
        return ChatSettings(
            self.system_prompt, self.params, self.thinking, self.model_spec, self.chinese,
            self.safety_choice,
        )  # fmt: skip

    def _restore(self, settings: ChatSettings) -> None:
        """Take on the opened chat's settings; the window shows them (``sig_settings_restored``)
        and sends the sampling params back through `set_params`."""
        self.system_prompt, self.thinking = settings.system_prompt, settings.thinking
        self.chinese = settings.chinese
        self.safety_choice = settings.safety
        self.sig_settings_restored.emit(settings)

    def _remember(self, **changes: Any) -> None:
        """Save a change to the open conversation, or to the defaults when none is open."""
        if self.conversation_id is None:
            self.defaults = self.defaults.replace(**changes)
            return
        current = self.settings().replace(**changes)
        self.db.submit(
            Store.update_settings, self.conversation_id, model=current.model,
            system_prompt=current.system_prompt, params=current.params_json(),
        )  # fmt: skip
