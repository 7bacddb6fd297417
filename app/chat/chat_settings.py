"""`ChatSettings`: what one conversation remembers about how to talk to the model.

Owns the value (system prompt, sampling parameters, the thinking switch, the model spec, the
Chinese reply options, the safety review's choice) and its mapping to and from a stored
`Conversation` (``system_prompt``, ``params_json``, ``model``). The thinking switch rides in
``params_json`` under ``"thinking"``, the Chinese reply options under ``"chinese"``, the safety
choice ("on"/"off"; absent: follow the Preferences) under ``"safety"`` (older Hearths ignore
unknown keys there).
Settings that cannot be read (a hand-edited or future file) fall back to the given defaults
field by field, never raising. Does not own when settings are saved (`ChatSession`) or any
widget.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from app.chat.chinese_text import ChineseOptions
from app.chat.safety_config import CHAT_CHOICES
from app.store import Conversation
from engine.errors import InvalidParamsError
from engine.types import SamplingParams

THINKING_KEY = "thinking"
CHINESE_KEY = "chinese"
SAFETY_KEY = "safety"


@dataclass(frozen=True, slots=True)
class ChatSettings:
    system_prompt: str = ""
    params: SamplingParams = field(default_factory=SamplingParams)
    thinking: bool | None = None  # enable_thinking for templates that take it; None: default
    model: str | None = None  # the model spec the chat was last used with ("bundled", a path…)
    chinese: ChineseOptions = field(default_factory=ChineseOptions)  # replies' script etc.
    safety: str = "default"  # the safety review: "default" (the Preferences'), "on", "off"

    def replace(self, **changes: Any) -> ChatSettings:
        return dataclasses.replace(self, **changes)

    def params_json(self) -> dict[str, Any]:
        """The ``params_json`` column's content."""
        data = self.params.to_dict()
        if self.thinking is not None:
            data[THINKING_KEY] = self.thinking
        if self.chinese.active:
            data[CHINESE_KEY] = self.chinese.to_dict()
        if self.safety != "default":
            data[SAFETY_KEY] = self.safety
        return data

    @classmethod
    def from_conversation(cls, conv: Conversation, defaults: ChatSettings) -> ChatSettings:
        stored = dict(conv.params) if isinstance(conv.params, dict) else {}
        thinking = stored.pop(THINKING_KEY, None)
        chinese = ChineseOptions.from_dict(stored.pop(CHINESE_KEY, None))
        safety = stored.pop(SAFETY_KEY, "default")
        try:
            params = SamplingParams.from_dict(stored) if stored else defaults.params
        except (InvalidParamsError, TypeError):
            params = defaults.params  # unreadable: the defaults rather than an error
        return cls(
            system_prompt=conv.system_prompt if isinstance(conv.system_prompt, str) else "",
            params=params,
            thinking=thinking if isinstance(thinking, bool) else None,
            model=conv.model,
            chinese=chinese,
            safety=safety if safety in CHAT_CHOICES else "default",
        )
