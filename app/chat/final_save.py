"""The last save of a finished reply: retried, and never silently lost.

Owns what happens when the store cannot take a reply's final text and status (a full disk,
an I/O error, a database locked by another process): try again a few times with growing
waits (space may come back: a download finishing, the user deleting files), and when it still
fails, mark the reply on screen as not saved, so the user knows to copy it before closing.
The text always stays in the GUI. Does not own the store call (`ChatSession` passes it) or
how errors are shown (`app.views.dialogs.common.show_error`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QCoreApplication

from app.listmodels.messages import MessageItem
from app.store import StoreError

RETRY_WAITS_S = (0.25, 1.0, 3.0)  # between attempts: four in all, about 4 s at most


class ReplyNotSavedError(StoreError):
    """A finished reply could not be saved; its text is only on screen."""


async def wait_before_retry(seconds: float) -> None:
    await asyncio.sleep(seconds)


async def save_final(
    save: Callable[[], Awaitable[object]],
    reply: MessageItem,
    touch: Callable[[MessageItem], None],
) -> ReplyNotSavedError | None:
    """Run ``save`` until it succeeds (None) or every retry failed: then ``reply`` shows
    why it is not saved and the error to report is returned."""
    error: Exception | None = None
    for wait in (*RETRY_WAITS_S, None):
        try:
            await save()
            return None
        except Exception as exc:  # SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY: all worth a retry
            error = exc
        if wait is not None:
            await wait_before_retry(wait)
    assert error is not None  # every attempt failed, or it would have returned
    # SQLite's own words ("database or disk is full"), without the store's path prefix.
    reason = error.__cause__ if isinstance(error.__cause__, sqlite3.Error) else error
    notice = QCoreApplication.translate(
        "FinalSave",
        "Not saved: {0}. This reply is only on screen; copy it before closing Hearth.",
    ).format(reason)
    # Shown with the reply (status line and tooltip), after the backend's error if it had one.
    error_text = reply.record.error
    reply.update(error=f"{error_text}\n{notice}" if error_text else notice)
    touch(reply)
    return ReplyNotSavedError(notice)
