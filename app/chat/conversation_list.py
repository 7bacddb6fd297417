"""The sidebar's conversations: `ConversationListing`, a collaborator of `ChatSession`.

Owns filling the `ConversationListModel` from the store (pinned first, the folder filter
applied: its own state), full-text search hits as rows (one per conversation), and the store
side of a soft delete / restore (the window offers Undo; the Trash erases for good). Works on
the saved conversations only (``store_db``), never a temporary chat's memory store. Does not
own what deleting the open chat means for it (`ChatSession.delete_conversation` stops its reply
and opens a new chat), SQL (`app.store`) or the widgets.
"""

from __future__ import annotations

from app.bridge import DbWorker
from app.listmodels.conversations import ConversationListModel, ConversationRow
from app.store import Store
from app.store.organise import folder_map


class ConversationListing:
    """Fills ``rows`` (the sidebar's model) from the saved conversations."""

    def __init__(self, store_db: DbWorker, rows: ConversationListModel) -> None:
        self.store_db = store_db
        self.rows = rows
        self.folder_filter = ""  # the sidebar shows this folder only ('' = every chat)

    async def refresh(self) -> None:
        convs = await self.store_db.call(Store.list_conversations)
        folders = await self.store_db.call(folder_map)
        if self.folder_filter:
            convs = [c for c in convs if folders.get(c.id) == self.folder_filter]
        self.rows.set_rows(
            [ConversationRow(c.id, c.title, c.updated_at, pinned=c.pinned,
                             folder=folders.get(c.id, "")) for c in convs]
        )  # fmt: skip

    async def search(self, query: str) -> None:
        if not query.strip():
            await self.refresh()
            return
        hits = await self.store_db.call(Store.search, query.strip())
        rows, seen = [], set()
        for hit in hits:
            if hit.conversation_id not in seen:
                seen.add(hit.conversation_id)
                rows.append(
                    ConversationRow(
                        hit.conversation_id,
                        hit.conversation_title,
                        hit.updated_at,
                        hit.snippet,
                        hit.message_id,
                    )
                )
        self.rows.set_rows(rows)

    async def remove(self, conversation_id: str) -> None:
        """Soft delete (into the trash) and drop its row."""
        await self.store_db.call(Store.delete_conversation, conversation_id)
        self.rows.remove(conversation_id)

    async def restore(self, conversation_id: str) -> None:
        await self.store_db.call(Store.restore_conversation, conversation_id)
        await self.refresh()
