"""The conversation database's schema and its numbered migrations.

Owns the SQL that creates and upgrades the tables behind `app.store.Store`. The schema version
lives in ``PRAGMA user_version``; migration N takes a database from version N-1 to N inside one
transaction, so a crash or an error mid-migration leaves the previous version intact. Does not own
queries (see `app.store`) or connection settings.

Never edit a migration that has shipped: add a new one at the end of `MIGRATIONS`.
"""

from __future__ import annotations

import sqlite3

from app.store.records import NewerSchemaError, NotHearthsError, StoreError

# Version 1: conversations, the message tree and trigram full-text search.
#
# Messages form a tree: ``parent_id`` is NULL for a first message; alternatives (regenerated
# replies, edited user turns) are siblings under one parent, ordered by rowid (insertion order).
# Each parent remembers which child is shown in ``active_child_id``; the conversation remembers
# its shown first message in ``active_root_id``. Both pointers are plain columns without
# foreign keys (a conversations <-> messages cycle would make deletes order-sensitive); the store
# keeps them valid and treats a dangling pointer as "the newest child".
#
# Search: two external-content FTS5 tables kept in sync by triggers. The trigram tokenizer
# (SQLite >= 3.34) matches any substring of 3+ characters, which is what makes Chinese, Japanese
# and code searchable (unicode61 would treat a whole CJK sentence as one token).
_V1 = """
CREATE TABLE conversations (
    id             TEXT PRIMARY KEY,
    title          TEXT NOT NULL DEFAULT '',
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL,
    model          TEXT,
    system_prompt  TEXT NOT NULL DEFAULT '',
    params_json    TEXT NOT NULL DEFAULT '{}',
    pinned         INTEGER NOT NULL DEFAULT 0,
    deleted_at     REAL,
    active_root_id TEXT
);
CREATE INDEX conversations_by_update ON conversations (deleted_at, updated_at);

CREATE TABLE messages (
    id                 TEXT PRIMARY KEY,
    conversation_id    TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    parent_id          TEXT REFERENCES messages (id) ON DELETE CASCADE,
    role               TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content            TEXT NOT NULL DEFAULT '',
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL,
    status             TEXT NOT NULL DEFAULT 'complete'
                       CHECK (status IN ('complete', 'streaming', 'partial', 'error', 'cancelled')),
    finish_reason      TEXT,
    error              TEXT,
    model              TEXT,
    params_json        TEXT,
    param_changes_json TEXT NOT NULL DEFAULT '[]',
    stats_json         TEXT,
    active_child_id    TEXT
);
CREATE INDEX messages_by_parent ON messages (conversation_id, parent_id);
CREATE INDEX messages_by_parent_id ON messages (parent_id);
CREATE INDEX messages_streaming ON messages (status) WHERE status = 'streaming';

CREATE VIRTUAL TABLE messages_fts USING fts5 (
    content, content = 'messages', content_rowid = 'rowid', tokenize = 'trigram'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content)
    VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content)
    VALUES ('delete', old.rowid, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.rowid, new.content);
END;

CREATE VIRTUAL TABLE conversations_fts USING fts5 (
    title, content = 'conversations', content_rowid = 'rowid', tokenize = 'trigram'
);
CREATE TRIGGER conversations_fts_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversations_fts (rowid, title) VALUES (new.rowid, new.title);
END;
CREATE TRIGGER conversations_fts_delete AFTER DELETE ON conversations BEGIN
    INSERT INTO conversations_fts (conversations_fts, rowid, title)
    VALUES ('delete', old.rowid, old.title);
END;
CREATE TRIGGER conversations_fts_update AFTER UPDATE OF title ON conversations BEGIN
    INSERT INTO conversations_fts (conversations_fts, rowid, title)
    VALUES ('delete', old.rowid, old.title);
    INSERT INTO conversations_fts (rowid, title) VALUES (new.rowid, new.title);
END;
"""

# Version 2: reasoning models and the prompt library.
#
# A reply's thinking (the <think> block of Qwen3/R1/QwQ, or a remote endpoint's
# reasoning_content) is kept apart from its answer in ``reasoning``; ``reasoning_seconds`` is how
# long the model thought (NULL when it did not). Thinking is not indexed for search: it is long,
# repetitive, and not what the user is looking for.
#
# ``prompts`` holds saved system prompts (name + text) that any conversation may pick; a
# conversation keeps its own copy of the text in ``conversations.system_prompt``, so deleting or
# editing a saved prompt never changes a past chat.
_V2 = """
ALTER TABLE messages ADD COLUMN reasoning TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN reasoning_seconds REAL;

CREATE TABLE prompts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    text       TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
"""

# Version 3: folders. A conversation lies in at most one folder, named by ``folder`` ('' = none);
# a folder exists while a chat is in it (no table of empty folders to keep in step).
_V3 = """
ALTER TABLE conversations ADD COLUMN folder TEXT NOT NULL DEFAULT '';
CREATE INDEX conversations_by_folder ON conversations (folder) WHERE folder != '';
"""

# Version 4: documents attached to chat messages, and the sources a reply cites.
#
# An attachment's extracted text is stored once per content hash (``attachment_blobs``, keyed by
# the SHA-256 of the text) and referenced by each user message that carries it
# (``message_attachments``, in the order attached). Rows follow their message: deleting a message
# (purging its conversation from the trash) deletes its references, and the trigger deletes a
# blob no message refers to any more, so erased documents really leave the file. A reply's
# sources (the passages it was given, numbered as it cites them: [1], [2]) are one JSON list per
# message in ``message_sources``.
_V4 = """
CREATE TABLE attachment_blobs (
    sha256 TEXT PRIMARY KEY,
    text   TEXT NOT NULL,
    size   INTEGER NOT NULL,
    kind   TEXT NOT NULL DEFAULT ''
);
CREATE TABLE message_attachments (
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    name       TEXT NOT NULL,
    sha256     TEXT NOT NULL REFERENCES attachment_blobs (sha256),
    tokens     INTEGER,
    PRIMARY KEY (message_id, position)
);
CREATE INDEX message_attachments_by_hash ON message_attachments (sha256);
CREATE TRIGGER message_attachments_gc AFTER DELETE ON message_attachments BEGIN
    DELETE FROM attachment_blobs WHERE sha256 = old.sha256
        AND NOT EXISTS (SELECT 1 FROM message_attachments WHERE sha256 = old.sha256);
END;
CREATE TABLE message_sources (
    message_id   TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    sources_json TEXT NOT NULL DEFAULT '[]'
);
"""

# V5 (issue 20): a reply's tool calls and their results, as one JSON list of
# {"id", "name", "arguments", "server", "result", "status", "text_before"} (app.mcp.ToolRecord).
_V5 = """
CREATE TABLE message_tool_calls (
    message_id TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    calls_json TEXT NOT NULL DEFAULT '[]'
);
"""

# V6 (issue 19): where each part of an attachment's text lies in its file, as a JSON list of
# [offset, locator] ("page 3", "Setup › Linux"), so passages chosen from a PDF or DOCX after a
# restart still cite their page or heading.
_V6 = """
ALTER TABLE attachment_blobs ADD COLUMN sections_json TEXT NOT NULL DEFAULT '[]';
"""

# V7 (issue 19): the document collections a conversation searches on each question (GPT4All's
# LocalDocs), by collection name in the document index (documents.sqlite3, a separate file, so
# no foreign key there); in the order chosen, deleted with the conversation.
_V7 = """
CREATE TABLE conversation_collections (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    position        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_id, name)
);
"""

# V8 (issue 31): the pictures of a user turn, as one JSON list of `ImageAttachment.to_dict()`
# ({"path", "sha256", "name", "width", "height", "budget"}); the files lie in the data folder's
# images/ by their hash, deleted when no message holds them any more (`app.store.images`).
_V8 = """
CREATE TABLE message_images (
    message_id  TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    images_json TEXT NOT NULL DEFAULT '[]'
);
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8)
SCHEMA_VERSION = len(MIGRATIONS)
MIN_SQLITE = (3, 34, 0)  # the trigram tokenizer
# SQLite's header field for "which program's file is this": b"HRTH".
APPLICATION_ID = int.from_bytes(b"HRTH", "big")


def check_sqlite_version(version: tuple[int, int, int] = sqlite3.sqlite_version_info) -> None:
    """Raise `StoreError` when the linked SQLite lacks what the schema needs."""
    if version < MIN_SQLITE:
        need = ".".join(map(str, MIN_SQLITE))
        have = ".".join(map(str, version))
        raise StoreError(f"SQLite {need} or newer is needed (trigram search), found {have}")


def check_version(conn: sqlite3.Connection) -> int:
    """The database's schema version, read without writing anything; `StoreError` for one from
    a newer Hearth. Call it before anything that may write (even ``PRAGMA journal_mode``): a
    refused database must stay exactly as the newer Hearth left it."""
    check_sqlite_version()
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"the database has schema version {version}, newer than this Hearth understands "
            f"({SCHEMA_VERSION}); update Hearth to open it"
        )
    return version


def migrate(conn: sqlite3.Connection) -> int:
    """Bring ``conn``'s database to `SCHEMA_VERSION`; return the version it had before.

    ``conn`` must be in autocommit mode (``isolation_level=None``) so that each migration's
    BEGIN/COMMIT is ours. A database from a newer Hearth is refused, never downgraded.
    """
    before = check_version(conn)
    check_is_hearths(conn, before)
    for version in range(before + 1, SCHEMA_VERSION + 1):
        try:
            _apply(conn, version, MIGRATIONS[version - 1])
        except StoreError:
            # Two first runs race: both read version 0, one waits for the other's write lock
            # and then finds the tables made. Its own attempt rolled back whole, so the
            # database is exactly what the winner left: carry on from there.
            if _user_version(conn) < version:
                raise
    if _application_id(conn) != APPLICATION_ID:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    return before


def check_is_hearths(conn: sqlite3.Connection, version: int) -> None:
    """Refuse another program's SQLite file at Hearth's path; `StoreError` names its tables.

    A Hearth database carries Hearth's ``application_id`` (or, from before it was stamped, a
    schema version); a file with neither is Hearth's only while it is empty. Reads only.
    """
    app_id = _application_id(conn)
    if app_id not in (0, APPLICATION_ID):
        raise NotHearthsError(
            f"this SQLite file belongs to another program (application id {app_id:#x}); "
            "Hearth will not change it"
        )
    if version > 0 or app_id == APPLICATION_ID:
        return
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    # Another Hearth may have created the schema between the two reads (a first-run race):
    # its tables and its version commit together, so the version read now tells.
    if names and _user_version(conn) == 0:
        shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
        raise NotHearthsError(
            f"this SQLite file is not a Hearth database (it has the tables {shown}); "
            "Hearth will not change it"
        )


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _application_id(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA application_id").fetchone()[0])


def _apply(conn: sqlite3.Connection, version: int, script: str) -> None:
    # executescript runs the whole script; BEGIN ... COMMIT makes it one transaction, and
    # user_version is part of the database header, so it rolls back with the tables.
    try:
        conn.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreError(f"database migration to version {version} failed: {exc}") from exc
