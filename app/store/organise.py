"""Organising conversations in the store: folders, and erasing the trash for good.

Owns the ``folder`` column (schema version 3) and `erase`, which makes "Empty trash" final:
the rows go (messages by cascade), the full-text index entries go with them (the delete
triggers add FTS5 delete markers; ``optimize`` merges them away so no old segment still holds
the text), then ``VACUUM`` rewrites the file without the freed pages and a truncating WAL
checkpoint drops the log that held earlier versions of the pages. Functions take the `Store`
first, so they run on the database worker like its methods (``db.call(erase, ids)``).
Does not own drafts (`app.system.settings`) or soft delete and restore (`Store`).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.store.images import forget_image_files, pictures_of_conversations
from app.store.records import NotFoundError, StoreError
from app.store.store import Store

MAX_FOLDER_CHARS = 80


def set_folder(store: Store, conversation_id: str, folder: str) -> None:
    """Put a conversation in ``folder`` ('' takes it out of any)."""
    name = " ".join(folder.split())
    if len(name) > MAX_FOLDER_CHARS:
        raise StoreError(f"a folder name may have at most {MAX_FOLDER_CHARS} characters")
    with store._db() as conn:
        cur = conn.execute(
            "UPDATE conversations SET folder = ? WHERE id = ?", (name, conversation_id)
        )
    if cur.rowcount == 0:
        raise NotFoundError(f"no conversation with id {conversation_id!r}")


def folders(store: Store) -> list[str]:
    """The folders that hold a chat outside the trash, by name."""
    with store._db() as conn:
        rows = conn.execute(
            "SELECT DISTINCT folder FROM conversations WHERE folder != '' AND deleted_at IS NULL"
            " ORDER BY folder COLLATE NOCASE"
        ).fetchall()
    return [row["folder"] for row in rows]


def folder_map(store: Store) -> dict[str, str]:
    """Conversation id -> folder, for chats in one (outside the trash)."""
    with store._db() as conn:
        rows = conn.execute(
            "SELECT id, folder FROM conversations WHERE folder != '' AND deleted_at IS NULL"
        ).fetchall()
    return {row["id"]: row["folder"] for row in rows}


def trashed_ids(store: Store) -> list[str]:
    with store._db() as conn:
        rows = conn.execute("SELECT id FROM conversations WHERE deleted_at >= 0").fetchall()
    return [row["id"] for row in rows]


def erase(store: Store, conversation_ids: Sequence[str] | None = None) -> list[str]:
    """Erase trashed conversations for good (all of the trash when ``conversation_ids`` is None;
    ids outside the trash are ignored). Returns the ids erased, so their drafts go too."""
    wanted = trashed_ids(store)
    if conversation_ids is not None:
        chosen = set(conversation_ids)
        wanted = [cid for cid in wanted if cid in chosen]
    if not wanted:
        return []
    pictures = pictures_of_conversations(store, wanted)
    with store.transaction(), store._db() as conn:
        conn.executemany("DELETE FROM conversations WHERE id = ?", [(cid,) for cid in wanted])
        # Orphans cannot exist (the cascade); a crash-cut import's rows are not ours to touch.
        for table in ("messages_fts", "conversations_fts"):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    with store._db() as conn:  # outside any transaction: VACUUM refuses to run in one
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    forget_image_files(store, pictures)  # their picture files, unless another chat holds them
    return wanted
