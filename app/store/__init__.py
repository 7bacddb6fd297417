"""Conversation persistence: `Store` (SQLite, WAL) and the frozen values it returns.

See `app.store.store` for the thread model and crash-safety guarantees. Typical use on the
database worker thread::

    store = Store(paths.database_path())
    conv = store.create_conversation("你好")
    user = store.add_message(conv.id, None, "user", "Hi")
    reply = store.add_message(conv.id, user.id, "assistant", "", status="streaming")
    store.update_message_content(reply.id, "Hel")          # every ~0.5 s while streaming
    store.finish_message(reply.id, "complete", content="Hello", finish_reason="stop")
    store.branch(conv.id)                                   # [user, reply]
"""

from app.store.migrations import SCHEMA_VERSION
from app.store.records import (
    Conversation,
    MessageRecord,
    MessageStatus,
    NewerSchemaError,
    NotFoundError,
    NotHearthsError,
    SavedPrompt,
    SearchHit,
    Siblings,
    StoredMessage,
    StoreError,
    record_fields,
)
from app.store.rows import ROLES, shown_branch
from app.store.store import Store

__all__ = [
    "ROLES",
    "SCHEMA_VERSION",
    "Conversation",
    "MessageRecord",
    "MessageStatus",
    "NewerSchemaError",
    "NotFoundError",
    "NotHearthsError",
    "SavedPrompt",
    "SearchHit",
    "Siblings",
    "Store",
    "StoreError",
    "StoredMessage",
    "record_fields",
    "shown_branch",
]
