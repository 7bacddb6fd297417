"""A conversation detached from the database: what export writes and import reads.

Owns `PortableConversation` / `PortableMessage` and the two moves between them and the store:
`from_store` (read one conversation's whole tree) and `into_store` (add conversations, all or
nothing); `check_tree` and `ImportFormatError` for documents read from files; `short_title`
(a chat's title from its first words) and `shareable_model` (the model as a shared file names
it). Message ids inside a portable conversation are short keys local to the document ("1",
"2", ...) in tree order, so files stay readable and importing twice never collides.
Does not own any file format (see `app.portability.export` and `app.portability.importer`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.store import (
    Conversation,
    MessageRecord,
    MessageStatus,
    Store,
    StoredMessage,
    record_fields,
    shown_branch,
)
from app.store.attachments import attachments_for, save_attachments, save_sources, sources_for
from app.store.images import images_for, save_images
from app.store.records import ImageAttachment
from app.store.tool_calls import save_tool_calls, tool_calls_for


class ImportFormatError(ValueError):
    """A file cannot be imported. Deliberately not a subclass of the built-in ImportError, which
    ``except ImportError`` around optional module imports would swallow."""

    def __init__(self, source: str, problem: str, line: int | None = None) -> None:
        where = source if line is None else f"{source}, line {line}"
        super().__init__(f"{where}: {problem}")
        self.source, self.problem, self.line = source, problem, line


@dataclass(frozen=True, slots=True, kw_only=True)
class PortableMessage(MessageRecord):
    """A message in a file: its `MessageRecord` fields, where it sits (ids local to the
    document), unchecked status text, optional times, and the side tables' rows."""

    id: str  # key local to the document
    parent_id: str | None
    active_child_id: str | None = None  # the parent's remembered choice, when there is one
    status: str = MessageStatus.COMPLETE.value
    created_at: float | None = None
    updated_at: float | None = None
    # Documents attached to a user turn and passages a reply cites (`app.store.attachments` form).
    attachments: tuple[Mapping[str, Any], ...] = ()
    sources: tuple[Mapping[str, Any], ...] = ()
    # A reply's tool calls and results (`app.store.tool_calls` form).
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    # A user turn's pictures (`ImageAttachment.to_dict()` form: ``path`` is this computer's file).
    images: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class PortableConversation:
    """``messages`` in tree order: every parent before its children, siblings oldest first."""

    title: str
    messages: tuple[PortableMessage, ...]
    active_root_id: str | None = None
    model: str | None = None
    system_prompt: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    created_at: float | None = None
    updated_at: float | None = None
    pinned: bool = False
    source_id: str | None = None  # the conversation's id in the database it came from

    def branch(self) -> list[PortableMessage]:
        """The shown thread, as the app would show it."""
        return shown_branch(self.messages, self.active_root_id)

    def alternatives(self) -> list[PortableMessage]:
        """Messages off the shown branch, in tree order."""
        shown = {m.id for m in self.branch()}
        return [m for m in self.messages if m.id not in shown]


TITLE_CHARS = 60


def short_title(text: str, limit: int = TITLE_CHARS) -> str:
    """``text``'s first line as a title of at most ``limit`` characters: cut at the last word
    that fits, with an ellipsis ("Plan a three-day trip to…", not "Plan a three-day trip to Ky").
    Text with no space near the end (Chinese) is cut at the limit, where any character ends
    a word."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2 and not line[limit - 1].isspace():
        cut = cut[:space]
    return cut.rstrip(" ,;:-–—") + "…"


def shareable_model(model: str | None, messages: Sequence[PortableMessage]) -> str | None:
    """How a shared file names the model: a local file's path (which tells everyone the
    user's folders) becomes the name the replies recorded, else the file's name."""
    if not model or not _is_local_path(model):
        return model
    named = [m.model for m in messages if m.role == "assistant" and m.model]
    for name in reversed(named):
        if not _is_local_path(name):
            return name
    return re.split(r"[\\/]", model.rstrip("\\/"))[-1] or None


def _is_local_path(text: str) -> bool:
    return text.startswith(("/", "~", "\\")) or re.match(r"[A-Za-z]:[\\/]", text) is not None


def check_tree(pc: PortableConversation, source: str, lines: dict[str, int] | None = None) -> None:
    """Ids unique, each parent earlier in the list, each remembered child a real child."""
    seen: dict[str, PortableMessage] = {}
    for m in pc.messages:
        line = (lines or {}).get(m.id)
        if m.id in seen:
            raise ImportFormatError(source, f"message id {m.id!r} appears twice", line)
        if m.parent_id is not None and m.parent_id not in seen:
            problem = f"message {m.id!r} has parent {m.parent_id!r}, which does not come before it"
            raise ImportFormatError(source, problem, line)
        seen[m.id] = m
    for m in pc.messages:
        child = seen.get(m.active_child_id or "")
        if m.active_child_id is not None and (child is None or child.parent_id != m.id):
            problem = f"message {m.id!r}: active child {m.active_child_id!r} is not its child"
            raise ImportFormatError(source, problem, (lines or {}).get(m.id))
    root = seen.get(pc.active_root_id or "")
    if pc.active_root_id is not None and (root is None or root.parent_id is not None):
        raise ImportFormatError(source, f"active root {pc.active_root_id!r} is not a first message")


def from_store(store: Store, conversation_id: str) -> PortableConversation:
    conversation = store.get_conversation(conversation_id)
    tree = store.tree(conversation_id)
    keys = {m.id: str(n) for n, m in enumerate(tree, start=1)}
    ids = [m.id for m in tree]
    attached, cited = attachments_for(store, ids), sources_for(store, ids)
    called = tool_calls_for(store, ids)
    pictures = images_for(store, ids)
    return PortableConversation(
        title=conversation.title,
        messages=tuple(
            replace(
                _portable_message(m, keys),
                attachments=tuple(attached.get(m.id, ())),
                sources=tuple(cited.get(m.id, ())),
                tool_calls=tuple(called.get(m.id, ())),
                images=tuple(i.to_dict() for i in pictures.get(m.id, ())),
            )
            for m in tree
        ),
        active_root_id=keys.get(conversation.active_root_id or ""),
        model=conversation.model,
        system_prompt=conversation.system_prompt,
        params=dict(conversation.params),
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        pinned=conversation.pinned,
        source_id=conversation.id,
    )


def _portable_message(message: StoredMessage, keys: Mapping[str, str]) -> PortableMessage:
    return PortableMessage(
        id=keys[message.id],
        parent_id=None if message.parent_id is None else keys[message.parent_id],
        active_child_id=keys.get(message.active_child_id or ""),
        status=message.status.value,
        created_at=message.created_at,
        updated_at=message.updated_at,
        **record_fields(message),
    )


# One import writes in transactions of at most this much, so that another process (the app
# starting while a command-line import runs) waits for the write lock a moment, not a minute.
BATCH_MESSAGES = 500
BATCH_CHARS = 4_000_000


def into_store(store: Store, conversations: Sequence[PortableConversation]) -> list[Conversation]:
    """Add ``conversations`` as new conversations (new ids), all or nothing.

    They are written hidden, in short transactions (`BATCH_MESSAGES`), and shown together in a
    last one; on any error the hidden ones are deleted again (should that fail too, the next
    start of the app does it). A reply that was still streaming when exported arrives as
    ``partial``."""
    staged: list[str] = []
    try:
        with store.transaction():
            staged = [_add_conversation(store, pc).id for pc in conversations]
        chosen = [{pc.active_root_id} | {m.active_child_id for m in pc.messages}
                  for pc in conversations]  # fmt: skip
        new_ids: dict[tuple[int, str], str] = {}
        for batch in _batches(conversations):
            with store.transaction():
                for n, m in batch:
                    parent = None if m.parent_id is None else new_ids[n, m.parent_id]
                    new_ids[n, m.id] = _add_message(store, staged[n], parent, m, m.id in chosen[n])
        with store.transaction():
            store.reveal_staged(staged)
            for cid, pc in zip(staged, conversations, strict=True):
                if pc.pinned:
                    store.set_pinned(cid, True)
    except BaseException:
        with contextlib.suppress(Exception):
            store.discard_staged(staged)
        raise
    return [store.get_conversation(cid) for cid in staged]


def _batches(
    conversations: Sequence[PortableConversation],
) -> Iterator[list[tuple[int, PortableMessage]]]:
    batch: list[tuple[int, PortableMessage]] = []
    chars = 0
    for n, pc in enumerate(conversations):
        for m in pc.messages:
            if batch and (len(batch) >= BATCH_MESSAGES or chars + len(m.content) > BATCH_CHARS):
                yield batch
                batch, chars = [], 0
            batch.append((n, m))
            chars += len(m.content)
    if batch:
        yield batch


def _add_conversation(store: Store, pc: PortableConversation) -> Conversation:
    return store.create_conversation(
        pc.title,
        model=pc.model,
        system_prompt=pc.system_prompt,
        params=pc.params,
        created_at=pc.created_at,
        updated_at=pc.updated_at,
        staged=True,
    )


def _add_message(
    store: Store, conversation_id: str, parent_id: str | None, m: PortableMessage, chosen: bool
) -> str:
    status = MessageStatus.PARTIAL if m.status == MessageStatus.STREAMING else m.status
    new_id = store.add_message(
        conversation_id,
        parent_id,
        status=status,
        activate=chosen,  # sets the parent's pointer to exactly this child
        created_at=m.created_at,
        updated_at=m.updated_at,
        **record_fields(m),
    ).id
    if m.attachments:
        save_attachments(store, new_id, m.attachments)
    if m.sources:
        save_sources(store, new_id, m.sources)
    if m.tool_calls:
        save_tool_calls(store, new_id, m.tool_calls)
    if m.images:
        save_images(store, new_id, [ImageAttachment.from_dict(i) for i in m.images])
    return new_id
