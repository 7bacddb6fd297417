"""Turning the store's message tree into the rows of the shown branch.

Owns `load_branch` (runs on the database thread: one tree query, then pure work) and the
conversion from `StoredMessage` to `MessageItem` with each message's place among its
alternatives. Does not own SQL (see `app.store`) or Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from app.listmodels.messages import MessageItem
from app.store import (
    MessageRecord,
    MessageStatus,
    Store,
    StoredMessage,
    record_fields,
    shown_branch,
)
from app.store.attachments import attachments_for, sources_for
from app.store.images import images_for
from app.store.tool_calls import tool_calls_for


def load_branch(store: Store, conversation_id: str) -> list[MessageItem]:
    """The shown branch of ``conversation_id`` as GUI rows (call on the DB thread)."""
    conversation = store.get_conversation(conversation_id)
    tree = store.tree(conversation_id)
    items = branch_items(tree, shown_branch(tree, conversation.active_root_id))
    add_documents(store, items)
    add_tool_calls(store, items)
    add_images(store, items)
    return items


def add_images(store: Store, items: Sequence[MessageItem]) -> None:
    """Fill in the pictures of user turns (schema V8)."""
    pictures = images_for(store, [i.id for i in items if i.record.role == "user"])
    for item in items:
        item.images = pictures.get(item.id, ())


def add_tool_calls(store: Store, items: Sequence[MessageItem]) -> None:
    """Fill in the tool calls of replies (schema V5)."""
    calls = tool_calls_for(store, [i.id for i in items if i.record.role == "assistant"])
    for item in items:
        item.tool_calls = calls.get(item.id, [])


def add_documents(store: Store, items: Sequence[MessageItem]) -> None:
    """Fill in the attachments of user turns and the sources of replies (schema V4)."""
    ids = [i.id for i in items]
    attached, cited = attachments_for(store, ids), sources_for(store, ids)
    for item in items:
        item.attachments = attached.get(item.id, [])
        item.sources = cited.get(item.id, [])


def branch_items(
    tree: Sequence[StoredMessage], branch: Sequence[StoredMessage]
) -> list[MessageItem]:
    siblings: dict[str | None, list[str]] = {}
    for message in tree:
        siblings.setdefault(message.parent_id, []).append(message.id)
    return [to_item(m, siblings[m.parent_id]) for m in branch if m.role != "system"]


def to_item(message: StoredMessage, sibling_ids: Sequence[str]) -> MessageItem:
    record = MessageRecord(**record_fields(message))  # the stored message's own record
    if message.status == MessageStatus.PARTIAL and not message.finish_reason:
        record = replace(record, finish_reason="partial")
    return MessageItem(
        id=message.id,
        record=record,
        parent_id=message.parent_id,
        sibling_index=list(sibling_ids).index(message.id),
        sibling_count=len(sibling_ids),
        streaming=False,  # a reply saved as streaming is being written by no one in this view
    )
