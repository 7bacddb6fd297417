"""Reading and writing the documents attached to messages and the sources replies cite (schema V4).

Owns the SQL for ``attachment_blobs`` (extracted text stored once per SHA-256),
``message_attachments`` (which user message carries which document, in order) and
``message_sources`` (a reply's cited passages as one JSON list). Functions take the `Store` as
their first argument, so the GUI calls them through ``DbWorker.call(fn, ...)`` like Store
methods. Values are plain dicts (the chat layer turns them into `app.chat.attachments.Attachment`
and `app.chat.sources.Source`): ``{"name", "text", "size", "kind", "tokens", "sha256"}`` and the
source form ``{"n", "file", "locator", "text", "before", "after"}``.

Erasing is the schema's job: a message's rows go with it (ON DELETE CASCADE) and a blob no
message refers to is deleted by a trigger, so purging a conversation from the trash erases its
documents too. Does not own the schema (`app.store.migrations`) or extraction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.store.message_lists import lists_for, save_list
from app.store.store import Store


def save_attachments(
    store: Store, message_id: str, attachments: Sequence[Mapping[str, Any]]
) -> None:
    """Attach ``attachments`` (in order) to ``message_id``; a document already stored (same
    text hash) is referenced, not copied."""
    with store.transaction(), store._db() as conn:
        for position, a in enumerate(attachments):
            text = str(a["text"])
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            sections = json.dumps([[int(o), str(loc)] for o, loc in a.get("sections") or ()])
            conn.execute(
                "INSERT OR IGNORE INTO attachment_blobs (sha256, text, size, kind, sections_json)"
                " VALUES (?, ?, ?, ?, ?)",
                (digest, text, int(a.get("size") or 0), str(a.get("kind") or ""), sections),
            )
            conn.execute(
                "INSERT OR REPLACE INTO message_attachments"
                " (message_id, position, name, sha256, tokens) VALUES (?, ?, ?, ?, ?)",
                (message_id, position, str(a["name"]), digest, a.get("tokens")),
            )


def attachments_for(store: Store, message_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The attachments of each of ``message_ids`` that has any, in the order attached."""
    out: dict[str, list[dict[str, Any]]] = {}
    with store._db() as conn:
        for mid in message_ids:
            rows = conn.execute(
                "SELECT a.name, a.tokens, b.sha256, b.text, b.size, b.kind, b.sections_json"
                " FROM message_attachments a JOIN attachment_blobs b USING (sha256)"
                " WHERE a.message_id = ? ORDER BY a.position",
                (mid,),
            ).fetchall()
            if rows:
                out[mid] = [_attachment(r) for r in rows]
    return out


def _attachment(row: Any) -> dict[str, Any]:
    d = dict(row)
    try:
        d["sections"] = json.loads(d.pop("sections_json") or "[]")
    except ValueError:
        d["sections"] = []
    return d


def save_sources(store: Store, message_id: str, sources: Sequence[Mapping[str, Any]]) -> None:
    """The passages a reply was given (replaces what was saved for it)."""
    save_list(store, "message_sources", "sources_json", message_id, sources)


def sources_for(store: Store, message_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    return lists_for(store, "message_sources", "sources_json", message_ids)


def blob_count(store: Store) -> int:
    """How many distinct documents the database holds (tests, the trash's "erased" check)."""
    with store._db() as conn:
        return int(conn.execute("SELECT count(*) FROM attachment_blobs").fetchone()[0])
