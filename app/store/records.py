"""The values `app.store.Store` hands out, and its errors.

Frozen dataclasses that are safe to pass from the database worker thread to the GUI thread:
they hold copies, never a cursor or a connection. Timestamps are Unix epoch seconds (UTC);
settings and statistics are plain JSON-compatible dicts so that settings saved by a newer Hearth
survive a round trip through an older one. Does not own SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from engine.types import ImageRef


class StoreError(Exception):
    """The conversation database cannot do what was asked; the message says why."""


class NewerSchemaError(StoreError):
    """The database was written by a newer Hearth; it is left untouched."""


class NotHearthsError(StoreError):
    """The file at the database path is another program's SQLite file; it is left untouched."""


class NotFoundError(StoreError, LookupError):
    """No conversation or message has the given id."""


class MessageStatus(StrEnum):
    COMPLETE = "complete"  # finished normally (or written by the user)
    STREAMING = "streaming"  # a reply being generated and saved as it grows
    PARTIAL = "partial"  # a reply cut short by a crash or quit; its text is kept
    ERROR = "error"  # the backend failed; ``error`` says why, the partial text is kept
    CANCELLED = "cancelled"  # the user pressed Stop


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    title: str
    created_at: float
    updated_at: float
    model: str | None = None
    system_prompt: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)  # SamplingParams.to_dict() form
    pinned: bool = False
    deleted_at: float | None = None  # set while the conversation sits in the trash
    active_root_id: str | None = None  # the first message of the shown branch

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None


@dataclass(frozen=True, slots=True)
class ImageAttachment:
    """A picture kept with a user turn: its copy in the data folder (``path``, named by the
    sha256 of its bytes), that sha256, the name it had, its size in pixels, and the image-token
    budget chosen for it (None: the model's default). Stored beside its message (schema V8,
    `app.store.images`), shown by `app.views.chat.message_images`."""

    path: str
    sha256: str
    name: str
    width: int
    height: int
    budget: int | None = None

    def to_ref(self) -> ImageRef:
        """What the engine is given: the file, its hash (the embeddings cache's key), budget."""
        return ImageRef(self.path, self.sha256, self.budget)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "name": self.name,
                "width": self.width, "height": self.height, "budget": self.budget}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ImageAttachment:
        """From `to_dict`'s form; raises ValueError on a malformed one."""
        budget = data.get("budget")
        try:
            return cls(str(data["path"]), str(data["sha256"]), str(data.get("name", "")),
                       int(data.get("width", 0)), int(data.get("height", 0)),
                       None if budget is None else int(budget))  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a picture record: {exc}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageRecord:
    """What one message says and how it came about: THE declaration of a message's fields.

    `StoredMessage` (the database's), `app.portability.portable.PortableMessage` (a file's)
    extend it with where the message sits; `record_fields` moves these fields between them, the
    rows (`app.store.rows`) and the chat's rows (`app.listmodels.messages.MessageItem`). A new
    message field goes here, then into a migration (its column), the export/import formats and
    the view that shows it. Where a message sits, its status and times are not here: each
    holder types them its own way (a file's status is unchecked text until imported).
    """

    role: str  # "system" | "user" | "assistant"
    content: str
    finish_reason: str | None = None  # engine.types.FinishReason value, when finished
    error: str | None = None
    model: str | None = None
    params: Mapping[str, Any] | None = None  # sampling settings in effect at the start
    # Live slider changes mid-stream: [{"token_index": int, "params": {...}}, ...]
    param_changes: tuple[Mapping[str, Any], ...] = ()
    stats: Mapping[str, Any] | None = None  # engine.types.Stats.to_dict() form
    reasoning: str = ""  # a reasoning model's thinking, apart from the answer in ``content``
    reasoning_seconds: float | None = None  # how long it thought; None when it did not


RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(MessageRecord))


def record_fields(message: MessageRecord) -> dict[str, Any]:
    """The `MessageRecord` fields of ``message`` by name (to build another holder from)."""
    return {name: getattr(message, name) for name in RECORD_FIELDS}


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredMessage(MessageRecord):
    """One node of a conversation's message tree, as the database holds it."""

    id: str
    conversation_id: str
    parent_id: str | None  # None for a first message
    created_at: float
    updated_at: float
    status: MessageStatus = MessageStatus.COMPLETE
    active_child_id: str | None = None  # the child shown after this one, if any


@dataclass(frozen=True, slots=True)
class SavedPrompt:
    """A system prompt in the prompt library (names are unique)."""

    id: str
    name: str
    text: str
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class Siblings:
    """Where a message sits among its alternatives, for ‹ index+1 / count › navigation."""

    index: int  # 0-based position of the message among ``ids``
    count: int
    ids: tuple[str, ...]  # oldest first

    @property
    def previous_id(self) -> str | None:
        return self.ids[self.index - 1] if self.index > 0 else None

    @property
    def next_id(self) -> str | None:
        return self.ids[self.index + 1] if self.index + 1 < self.count else None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A conversation title or message that matches a search.

    ``snippet`` is plain text around the first match (never HTML); ``highlights`` are
    (start, end) character offsets of the matches inside ``snippet``, for bolding.
    ``message_id`` is None when the title matched.
    """

    conversation_id: str
    conversation_title: str
    message_id: str | None
    role: str | None
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    updated_at: float
