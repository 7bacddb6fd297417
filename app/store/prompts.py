"""Saved system prompts (name + text) that any conversation may pick.

Owns the ``prompts`` table's queries (schema version 2), as functions of the `Database`
(`app.store.Store`) they run on, like the other side tables (`app.store.attachments`); call
them through `DbWorker.call` (``db.call(list_prompts)``). Names are unique and never empty; a
conversation keeps its own copy of the prompt text (``conversations.system_prompt``), so editing
or deleting a saved prompt never rewrites a past chat. Does not own anything Qt.
"""

from __future__ import annotations

import sqlite3
import time
import uuid

from app.store.database import Database
from app.store.records import NotFoundError, SavedPrompt, StoreError


def list_prompts(db: Database) -> list[SavedPrompt]:
    """Every saved prompt, by name (case-insensitively)."""
    with db._db() as conn:
        rows = conn.execute("SELECT * FROM prompts ORDER BY name COLLATE NOCASE").fetchall()
    return [_prompt(row) for row in rows]


def save_prompt(db: Database, name: str, text: str) -> SavedPrompt:
    """Save ``text`` under ``name``; a prompt already called ``name`` gets the new text."""
    name = _check_name(name)
    now = time.time()
    with db._db() as conn:
        conn.execute(
            "INSERT INTO prompts (id, name, text, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET text = excluded.text, updated_at = ?",
            (str(uuid.uuid4()), name, text, now, now, now),
        )
        row = conn.execute("SELECT * FROM prompts WHERE name = ?", (name,)).fetchone()
    return _prompt(row)


def rename_prompt(db: Database, prompt_id: str, name: str) -> SavedPrompt:
    name = _check_name(name)
    with db._db() as conn:
        clash = conn.execute(
            "SELECT id FROM prompts WHERE name = ? AND id != ?", (name, prompt_id)
        ).fetchone()
        if clash is not None:
            raise StoreError(f"a saved prompt is already called {name!r}")
        conn.execute(
            "UPDATE prompts SET name = ?, updated_at = ? WHERE id = ?",
            (name, time.time(), prompt_id),
        )
    return get_prompt(db, prompt_id)


def delete_prompt(db: Database, prompt_id: str) -> None:
    with db._db() as conn:
        cur = conn.execute("DELETE FROM prompts WHERE id = ?", (prompt_id,))
    if cur.rowcount == 0:
        raise NotFoundError(f"no saved prompt with id {prompt_id!r}")


def get_prompt(db: Database, prompt_id: str) -> SavedPrompt:
    with db._db() as conn:
        row = conn.execute("SELECT * FROM prompts WHERE id = ?", (prompt_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"no saved prompt with id {prompt_id!r}")
    return _prompt(row)


def _check_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise StoreError("a saved prompt needs a name")
    if len(name) > 200:
        raise StoreError(f"a saved prompt's name must be at most 200 characters, got {len(name)}")
    return name


def _prompt(row: sqlite3.Row) -> SavedPrompt:
    return SavedPrompt(row["id"], row["name"], row["text"], row["created_at"], row["updated_at"])
