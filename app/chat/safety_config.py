"""The safety review as the user set it up: the guard, the blocklist, and whether a chat uses it.

Owns `SafetyConfig` (the Preferences' choices: a local guard file or an OpenAI-compatible
endpoint serving one, a blocklist's text, the safety system prompt, strict and required) and
`CHAT_CHOICES`, a chat's own choice ("default" follows the Preferences' switch, "on", "off").
Plain values, read tolerantly from storage; the bridge turns them into the engine's review
(`app.bridge`). Does not own storage (`app.system.settings`, `ChatSettings`) or the UI.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

CHAT_CHOICES = ("default", "on", "off")


@dataclass(frozen=True, slots=True)
class SafetyConfig:
    """What the review does when it is on (see the module docstring)."""

    enabled: bool = False  # the Preferences' switch: new and "default" chats are reviewed
    guard_model: str = ""  # a local .gguf, or the model name the endpoint serves
    guard_base_url: str = ""  # "" for a local guard
    blocklist: str = ""  # one entry a line; "re:" starts a regular expression
    system_prompt: bool = False
    strict: bool = False  # Controversial stops a turn too
    required: bool = False  # a guard that cannot answer stops the turn

    @property
    def has_review(self) -> bool:
        """Whether there is anything to apply: a guard, a blocklist or the system prompt."""
        return bool(self.guard_model.strip() or self.blocklist.strip() or self.system_prompt)

    def for_chat(self, choice: str) -> SafetyConfig | None:
        """The review a chat with ``choice`` gets; None for none."""
        on = choice == "on" or (choice == "default" and self.enabled)
        return replace(self, enabled=True) if on and self.has_review else None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> SafetyConfig:
        """Tolerant of anything stored: a field of the wrong type takes its default."""
        if not isinstance(data, dict):
            return cls()
        values: dict[str, object] = {}
        for f in fields(cls):
            value = data.get(f.name)
            if isinstance(value, type(getattr(cls(), f.name))):
                values[f.name] = value
        return cls(**values)  # type: ignore[arg-type]
