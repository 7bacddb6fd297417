"""Reading and writing a reply's tool calls and their results (schema V5).

Owns the SQL for ``message_tool_calls``: one JSON list per reply of plain dicts in
`app.mcp.approval.ToolRecord`'s form (``{"id", "name", "arguments", "server", "result",
"status", "text_before"}``). Functions take the `Store` first, so the GUI calls them through
``DbWorker.call(fn, ...)``. The rows go with their message (ON DELETE CASCADE). Does not own the
schema (`app.store.migrations`) or what the records mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.store.message_lists import lists_for, save_list
from app.store.store import Store


def save_tool_calls(store: Store, message_id: str, calls: Sequence[Mapping[str, Any]]) -> None:
    """The reply's calls (replaces what was saved for it; an empty list deletes the row)."""
    save_list(store, "message_tool_calls", "calls_json", message_id, calls)


def tool_calls_for(store: Store, message_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    return lists_for(store, "message_tool_calls", "calls_json", message_ids)
