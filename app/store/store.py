"""`Store`: the conversation database (SQLite, WAL) behind the sidebar, the chat view and export.

Owns reading and writing conversations and their message trees, the "shown branch" pointers,
soft delete, crash recovery and search. Does not own the schema text (`app.store.migrations`),
file formats (`app.portability.export`) or anything Qt.

Threads: one `sqlite3` connection, opened lazily by the first call (so a `Store` may be built on
the GUI thread and used on a worker), with ``check_same_thread=False`` and every call serialised
by a re-entrant lock. Any thread may therefore call any method safely, but calls block on disk
I/O: the GUI calls the store from ONE database worker thread (a single-worker executor), never
from the GUI thread. Values returned are frozen copies, safe to send to the GUI thread.

Crash safety: WAL with ``synchronous=NORMAL`` (a commit survives an application crash; a power
loss may lose the last few commits, never corrupt the file). A streaming reply is saved as it
grows with `update_message_content`; a reply left ``streaming`` by a crash is marked ``partial``
when the store is next opened (`Store.recovered` says how many).

Nothing the user wrote is lost: an edited user message is added as a new sibling
(`add_message` with the same parent); message content is only ever replaced for replies
being generated.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from app.store import search as search_sql
from app.store.database import Database
from app.store.records import (
    Conversation,
    MessageStatus,
    NotFoundError,
    SearchHit,
    Siblings,
    StoredMessage,
    StoreError,
)
from app.store.rows import (
    check_role,
    check_time,
    conversation_from_row,
    dumps,
    finish_columns,
    message_from_row,
    parse_status,
    record_columns,
    shown_branch,
)

_UNSET: Any = object()


class Store(Database):
    """The conversation database at ``path`` (created, with its folder, on first use).

    ``recover_interrupted=False`` leaves ``streaming`` replies alone: use it for a second
    process (the command-line export) that must not touch a running app's live reply.
    Connection, locking and `transaction()` come from `Database`; the side tables (saved
    prompts, attachments, tool calls, folders) are functions of a Store in their own modules.
    """

    # -- conversations ---------------------------------------------------------------------

    def create_conversation(
        self,
        title: str = "",
        *,
        model: str | None = None,
        system_prompt: str = "",
        params: Mapping[str, Any] | Any | None = None,
        created_at: float | None = None,
        updated_at: float | None = None,
        staged: bool = False,
    ) -> Conversation:
        """A new conversation; ``staged`` keeps it hidden (from the list, the trash and search)
        until `reveal_staged`: an import being added in several short transactions."""
        now = time.time()
        created = now if created_at is None else check_time(created_at, "created_at")
        updated = created if updated_at is None else check_time(updated_at, "updated_at")
        cid = str(uuid.uuid4())
        with self._db() as conn:
            conn.execute(
                "INSERT INTO conversations (id, title, created_at, updated_at, model,"
                " system_prompt, params_json, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, title, created, updated, model, system_prompt, dumps(params or {}),
                 -now if staged else None),
            )  # fmt: skip
        return self.get_conversation(cid)

    def reveal_staged(self, conversation_ids: Sequence[str]) -> None:
        """Show staged conversations (one transaction: all appear together)."""
        with self.transaction(), self._db() as conn:
            conn.executemany(
                "UPDATE conversations SET deleted_at = NULL WHERE id = ? AND deleted_at < 0",
                [(cid,) for cid in conversation_ids],
            )

    def discard_staged(self, conversation_ids: Sequence[str]) -> None:
        """Delete staged conversations for good (an import that failed half-way)."""
        with self.transaction(), self._db() as conn:
            conn.executemany(
                "DELETE FROM conversations WHERE id = ? AND deleted_at < 0",
                [(cid,) for cid in conversation_ids],
            )

    def get_conversation(self, conversation_id: str) -> Conversation:
        with self._db() as conn:
            row = conn.execute(
                "SELECT * FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no conversation with id {conversation_id!r}")
        return conversation_from_row(row)

    def list_conversations(self, *, deleted: bool = False) -> list[Conversation]:
        """Pinned first, then most recently updated first. ``deleted=True`` lists the trash."""
        where = "deleted_at >= 0" if deleted else "deleted_at IS NULL"  # < 0: staged import
        with self._db() as conn:
            rows = conn.execute(
                f"SELECT * FROM conversations WHERE {where} "
                "ORDER BY pinned DESC, updated_at DESC, rowid DESC"
            ).fetchall()
        return [conversation_from_row(row) for row in rows]

    def rename_conversation(self, conversation_id: str, title: str) -> Conversation:
        self._update_conversation(conversation_id, "title = ?", (title,))
        return self.get_conversation(conversation_id)

    def set_pinned(self, conversation_id: str, pinned: bool) -> Conversation:
        self._update_conversation(conversation_id, "pinned = ?", (int(pinned),))
        return self.get_conversation(conversation_id)

    def update_settings(
        self,
        conversation_id: str,
        *,
        model: str | None = _UNSET,
        system_prompt: str = _UNSET,
        params: Mapping[str, Any] | Any = _UNSET,
    ) -> Conversation:
        """Change the conversation's model, system prompt and/or sampling params (a dict or
        `SamplingParams`); arguments left out keep their value."""
        changes = {"model": model, "system_prompt": system_prompt}
        changes = {k: v for k, v in changes.items() if v is not _UNSET}
        if params is not _UNSET:
            changes["params_json"] = dumps(params or {})
        if changes:
            sets = ", ".join(f"{column} = ?" for column in changes)
            self._update_conversation(conversation_id, sets, tuple(changes.values()))
        return self.get_conversation(conversation_id)

    def delete_conversation(self, conversation_id: str) -> None:
        """Move to the trash; `restore_conversation` undoes it, `purge_deleted` is final."""
        self._update_conversation(conversation_id, "deleted_at = ?", (time.time(),))

    def restore_conversation(self, conversation_id: str) -> Conversation:
        self._update_conversation(conversation_id, "deleted_at = NULL", ())
        return self.get_conversation(conversation_id)

    def purge_deleted(self, deleted_before: float | None = None) -> int:
        """Empty the trash (only what was deleted before ``deleted_before``, if given)."""
        limit = time.time() + 1 if deleted_before is None else deleted_before
        with self._db() as conn:
            cur = conn.execute(
                "DELETE FROM conversations WHERE deleted_at >= 0 AND deleted_at < ?",
                (limit,),
            )
        return cur.rowcount

    def _update_conversation(self, conversation_id: str, sets: str, args: tuple[Any, ...]) -> None:
        with self._db() as conn:
            cur = conn.execute(
                f"UPDATE conversations SET {sets} WHERE id = ?", (*args, conversation_id)
            )
        if cur.rowcount == 0:
            raise NotFoundError(f"no conversation with id {conversation_id!r}")

    def _touch(self, conn: sqlite3.Connection, conversation_id: str, now: float) -> None:
        conn.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id))

    # -- messages --------------------------------------------------------------------------

    def add_message(
        self,
        conversation_id: str,
        parent_id: str | None,
        role: str,
        content: str,
        *,
        status: MessageStatus | str = MessageStatus.COMPLETE,
        model: str | None = None,
        params: Mapping[str, Any] | Any | None = None,
        activate: bool = True,
        **fields: Any,
    ) -> StoredMessage:
        """Add a child of ``parent_id`` (None: a first message) and, with ``activate``, show it.

        A regenerated reply or an edited user turn is a new sibling: same ``parent_id``.
        For a reply about to stream pass ``status="streaming"`` and content "".
        ``fields`` may carry any other `MessageRecord` field (finish_reason, error, stats,
        param_changes, reasoning, ...), and created_at and updated_at (used by import).
        """
        check_role(role)
        status = parse_status(status)
        now = time.time()
        created = check_time(fields.pop("created_at", None) or now, "created_at")
        updated = check_time(fields.pop("updated_at", None) or created, "updated_at")
        record = record_columns({"role": role, "content": content, "model": model,
                                 "params": params, **fields})  # fmt: skip
        mid = str(uuid.uuid4())
        columns = {"id": mid, "conversation_id": conversation_id, "parent_id": parent_id,
                   "created_at": created, "updated_at": updated, "status": status.value,
                   **record}  # fmt: skip
        with self.transaction(), self._db() as conn:
            self._check_parent(conn, conversation_id, parent_id)
            conn.execute(
                f"INSERT INTO messages ({', '.join(columns)})"
                f" VALUES ({', '.join('?' * len(columns))})",
                tuple(columns.values()),
            )
            if activate:
                self._point_to(conn, conversation_id, parent_id, mid)
            self._touch(conn, conversation_id, max(now, updated))
        return self.get_message(mid)

    def update_message_content(
        self, message_id: str, content: str, reasoning: str | None = None
    ) -> None:
        """Replace a streaming reply's text (and thinking, when given) with its latest full
        text. Cheap: one row."""
        sets, args = "content = ?", [content]
        if reasoning is not None:
            sets, args = sets + ", reasoning = ?", [content, reasoning]
        with self._db() as conn:
            cur = conn.execute(
                f"UPDATE messages SET {sets}, updated_at = ? WHERE id = ?",
                (*args, time.time(), message_id),
            )
        if cur.rowcount == 0:
            raise NotFoundError(f"no message with id {message_id!r}")

    def finish_message(
        self,
        message_id: str,
        status: MessageStatus | str,
        *,
        content: str | None = None,
        finish_reason: str | None = None,
        error: str | None = None,
        stats: Mapping[str, Any] | Any | None = None,
        param_changes: Sequence[Mapping[str, Any] | Any] = (),
        reasoning: str | None = None,
        reasoning_seconds: float | None = None,
    ) -> StoredMessage:
        """Record how a reply ended. ``content`` (the final text) and ``reasoning`` (the final
        thinking) replace the saved ones when given; ``stats`` may be `engine.types.Stats`,
        ``param_changes`` `ParamsApplied` events."""
        status = parse_status(status)
        columns = finish_columns(finish_reason, error, stats, param_changes)
        columns["status"] = status.value
        if content is not None:
            columns["content"] = content
        if reasoning is not None:
            columns["reasoning"] = reasoning
            columns["reasoning_seconds"] = reasoning_seconds
        now = time.time()
        columns["updated_at"] = now
        sets = ", ".join(f"{column} = ?" for column in columns)
        with self.transaction(), self._db() as conn:
            message = self.get_message(message_id)
            conn.execute(
                f"UPDATE messages SET {sets} WHERE id = ?", (*columns.values(), message_id)
            )
            self._touch(conn, message.conversation_id, now)
        return self.get_message(message_id)

    def resume_message(self, message_id: str) -> StoredMessage:
        """Mark a stopped reply as streaming again, before "continue" appends to it."""
        with self._db() as conn:
            cur = conn.execute(
                "UPDATE messages SET status = 'streaming', finish_reason = NULL, error = NULL,"
                " updated_at = ? WHERE id = ?",
                (time.time(), message_id),
            )
        if cur.rowcount == 0:
            raise NotFoundError(f"no message with id {message_id!r}")
        return self.get_message(message_id)

    def get_message(self, message_id: str) -> StoredMessage:
        with self._db() as conn:
            row = conn.execute("SELECT * FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no message with id {message_id!r}")
        return message_from_row(row)

    def tree(self, conversation_id: str) -> list[StoredMessage]:
        """Every message of the conversation, in insertion order (parents before children)."""
        self.get_conversation(conversation_id)
        with self._db() as conn:
            rows = conn.execute(
                "SELECT * FROM messages WHERE conversation_id = ? ORDER BY rowid",
                (conversation_id,),
            ).fetchall()
        return [message_from_row(row) for row in rows]

    def branch(self, conversation_id: str) -> list[StoredMessage]:
        """The shown thread, first message to active leaf. At each fork the remembered active
        child is followed (the newest child when none is remembered)."""
        conversation = self.get_conversation(conversation_id)
        return shown_branch(self.tree(conversation_id), conversation.active_root_id)

    def siblings(self, message_id: str) -> Siblings:
        """``message_id`` among its alternatives (messages with the same parent), oldest first."""
        message = self.get_message(message_id)
        with self._db() as conn:
            rows = conn.execute(
                "SELECT id FROM messages WHERE conversation_id = ? AND parent_id IS ?"
                " ORDER BY rowid",
                (message.conversation_id, message.parent_id),
            ).fetchall()
        ids = tuple(row["id"] for row in rows)
        return Siblings(index=ids.index(message_id), count=len(ids), ids=ids)

    def set_active(self, message_id: str) -> list[StoredMessage]:
        """Show ``message_id``: point its parent (and every ancestor) at it, so it lies on the
        shown branch, which continues below it along its own remembered children. Returns the
        new `branch`."""
        with self.transaction(), self._db() as conn:
            message = self.get_message(message_id)
            by_id = {m.id: m for m in self.tree(message.conversation_id)}
            child: StoredMessage | None = message
            while child is not None:
                parent = by_id.get(child.parent_id or "")
                if parent is None or parent.active_child_id != child.id:  # only what changes
                    self._point_to(conn, child.conversation_id, child.parent_id, child.id)
                child = parent
        return self.branch(message.conversation_id)

    def _point_to(
        self, conn: sqlite3.Connection, conversation_id: str, parent_id: str | None, child_id: str
    ) -> None:
        if parent_id is None:
            conn.execute(
                "UPDATE conversations SET active_root_id = ? WHERE id = ?",
                (child_id, conversation_id),
            )
        else:
            conn.execute(
                "UPDATE messages SET active_child_id = ? WHERE id = ?", (child_id, parent_id)
            )

    def _check_parent(
        self, conn: sqlite3.Connection, conversation_id: str, parent_id: str | None
    ) -> None:
        self.get_conversation(conversation_id)
        if parent_id is None:
            return
        row = conn.execute(
            "SELECT conversation_id FROM messages WHERE id = ?", (parent_id,)
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no message with id {parent_id!r}")
        if row["conversation_id"] != conversation_id:
            raise StoreError(f"message {parent_id!r} belongs to another conversation")

    # -- search ----------------------------------------------------------------------------

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Conversations (outside the trash) whose title or messages contain every
        whitespace-separated term of ``query``, case-insensitively; works for Chinese."""
        with self._db() as conn:
            return search_sql.search(conn, query, limit)
