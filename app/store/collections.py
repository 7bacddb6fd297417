"""Which document collections a conversation searches (schema V7, ``conversation_collections``).

Owns the SQL for that table: the names, in the order chosen, written whole. A collection is
named, not referenced: collections live in their own file (``documents.sqlite3``), so one
removed there simply finds nothing here until the chat drops it. Functions take the `Store`
first, so the GUI calls them through ``DbWorker.call(fn, ...)`` like Store methods; rows go
with their conversation (ON DELETE CASCADE). Does not own the schema or the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.store.store import Store


def set_collections(store: Store, conversation_id: str, names: Sequence[str]) -> None:
    """``conversation_id`` searches ``names`` from now on (in that order; none: no search)."""
    with store.transaction(), store._db() as conn:
        conn.execute(
            "DELETE FROM conversation_collections WHERE conversation_id = ?", (conversation_id,)
        )
        for position, name in enumerate(dict.fromkeys(names)):
            conn.execute(
                "INSERT INTO conversation_collections (conversation_id, name, position)"
                " VALUES (?, ?, ?)",
                (conversation_id, name, position),
            )


def collections_for(store: Store, conversation_id: str) -> list[str]:
    with store._db() as conn:
        rows = conn.execute(
            "SELECT name FROM conversation_collections WHERE conversation_id = ? ORDER BY position",
            (conversation_id,),
        ).fetchall()
    return [str(r[0]) for r in rows]
