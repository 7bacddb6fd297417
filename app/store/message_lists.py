"""Per-message JSON lists kept in side tables: a reply's sources (``message_sources``) and its
tool calls (``message_tool_calls``), one row per message, deleted with it (ON DELETE CASCADE).

Owns the one way such a list is written and read back: written whole (an empty list deletes the
row), read for many messages at once, and a row that does not hold a JSON list of objects is
treated as absent rather than breaking the chat. Callers pass the table and column from their own
constants, never from user input. Does not own the schema (`app.store.migrations`) or what the
items mean (`app.store.attachments`, `app.store.tool_calls`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.store.store import Store


def save_list(
    store: Store, table: str, column: str, message_id: str, items: Sequence[Mapping[str, Any]]
) -> None:
    """Replace ``message_id``'s list in ``table`` (an empty list deletes the row)."""
    with store._db() as conn:
        if not items:
            conn.execute(f"DELETE FROM {table} WHERE message_id = ?", (message_id,))
            return
        conn.execute(
            f"INSERT OR REPLACE INTO {table} (message_id, {column}) VALUES (?, ?)",
            (message_id, json.dumps([dict(i) for i in items], ensure_ascii=False)),
        )


def lists_for(
    store: Store, table: str, column: str, message_ids: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """The non-empty lists of ``message_ids``, by message id."""
    out: dict[str, list[dict[str, Any]]] = {}
    with store._db() as conn:
        for mid in message_ids:
            row = conn.execute(
                f"SELECT {column} FROM {table} WHERE message_id = ?", (mid,)
            ).fetchone()
            if row is None:
                continue
            try:
                items = json.loads(row[0])
            except ValueError:
                continue
            if isinstance(items, list) and items:
                out[mid] = [dict(i) for i in items if isinstance(i, dict)]
    return out
