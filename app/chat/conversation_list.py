"""The sidebar's conversations as `ChatSession` fills them: listing, search, delete, restore.

Owns filling the `ConversationListModel` from the store (pinned first, the folder filter
applied), full-text search hits as rows (one per conversation), and soft delete / restore of
a conversation (the window offers Undo; the Trash erases for good). A mixin of `ChatSession`,
which owns the attributes declared here. Does not own SQL (`app.store`) or the widgets.
"""

from __future__ import annotations

from typing import Any

from app.bridge import DbWorker
from app.listmodels.conversations import ConversationListModel, ConversationRow
from app.store import Store
from app.store.organise import folder_map


class ConversationListing:
    # Owned by ChatSession (see its __init__); declared for the type checker.
    store_db: DbWorker
    conversations: ConversationListModel
    conversation_id: str | None
    folder_filter: str
    busy: Any  # a property of ChatSession

    def on_stop_requested(self) -> None: ...  # ChatSession's

    async def open_conversation(self, conversation_id: str | None) -> None: ...  # ChatSession's

    async def refresh_conversations(self) -> None:
        convs = await self.store_db.call(Store.list_conversations)
        folders = await self.store_db.call(folder_map)
        if self.folder_filter:
            convs = [c for c in convs if folders.get(c.id) == self.folder_filter]
        self.conversations.set_rows(
            [ConversationRow(c.id, c.title, c.updated_at, pinned=c.pinned,
                             folder=folders.get(c.id, "")) for c in convs]
        )  # fmt: skip

    async def search(self, query: str) -> None:
        if not query.strip():
            await self.refresh_conversations()
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
        self.conversations.set_rows(rows)

    async def delete_conversation(self, conversation_id: str) -> None:
        """Soft delete: the window offers Undo (`restore_conversation`)."""
        if conversation_id == self.conversation_id and self.busy:
            self.on_stop_requested()
        await self.store_db.call(Store.delete_conversation, conversation_id)
        self.conversations.remove(conversation_id)
        if conversation_id == self.conversation_id:
            await self.open_conversation(None)

    async def restore_conversation(self, conversation_id: str) -> None:
        await self.store_db.call(Store.restore_conversation, conversation_id)
        await self.refresh_conversations()
