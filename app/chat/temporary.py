"""Temporary chats: a conversation that is never written to disk.

Owns switching a `ChatSession` to a private in-memory `Store` (SQLite ``:memory:`` on its own
database worker) for the current chat, and back to the saved store when another chat opens.
Everything a chat does (branches, regenerate, continue, its settings) works unchanged because
the session simply talks to the other store; the sidebar, search, the trash and export keep
using the saved one (``session.store_db``). Leaving a temporary chat stops its reply first and
drops the memory store, and with it every trace. Does not own the window's mark or the drafts
(the application skips saving them while ``session.temporary`` is set).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from app.bridge import DbWorker
from app.store import Store

if TYPE_CHECKING:
    from app.chat.session import ChatSession

MEMORY = ":memory:"


def _memory_store() -> Store:
    store = Store(MEMORY)
    store.open()
    return store


async def start_temporary(session: ChatSession) -> None:
    """Open a new, empty chat that lives in memory only."""
    await session.open_conversation(None)  # leaves any temporary chat, shows the defaults
    worker = DbWorker()
    await worker.open(_memory_store)
    session.db = worker
    session.temporary = True
    session.sig_temporary_changed.emit(True)


async def leave_temporary(session: ChatSession) -> None:
    """Back to the saved store; the temporary chat is gone for good."""
    if not session.temporary:
        return
    if session.busy:
        session.on_stop_requested()
        while session.busy:  # its final save goes to the memory store, then it is dropped
            await asyncio.sleep(0.02)
    worker, session.db = session.db, session.store_db
    session.temporary = False
    session.conversation_id = None
    await asyncio.get_running_loop().run_in_executor(None, worker.close_blocking)
    session.sig_temporary_changed.emit(False)
