"""Reading and writing a reply's tool calls and their results (schema V5).

Owns the SQL for ``message_tool_calls``: one JSON list per reply of plain dicts in
`app.mcp.approval.ToolRecord`'s form (``{"id", "name", "arguments", "server", "result",
"status", "text_before"}``). Functions take the `Store` first, so the GUI calls them through
``DbWorker.call(fn, ...)``. The rows go with their message (ON DELETE CASCADE). Does not own the
schema (`app.store.migrations`) or what the records mean.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.store.store import Store


def save_tool_calls(store: Store, message_id: str, calls: Sequence[Mapping[str, Any]]) -> None:
    """The reply's calls (replaces what was saved for it; an empty list deletes the row)."""
    with store._db() as conn:
        if not calls:
            conn.execute("DELETE FROM message_tool_calls WHERE message_id = ?", (message_id,))
            return
        conn.execute(
            "INSERT OR REPLACE INTO message_tool_calls (message_id, calls_json) VALUES (?, ?)",
            (message_id, json.dumps([dict(c) for c in calls], ensure_ascii=False)),
        )


def tool_calls_for(store: Store, message_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    with store._db() as conn:
        for mid in message_ids:
            row = conn.execute(
                "SELECT calls_json FROM message_tool_calls WHERE message_id = ?", (mid,)
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
