"""Full-text search over message content and conversation titles.

Owns turning what the user typed into SQL and cutting snippets. A query is split on whitespace
into terms that must all occur (AND), each as a case-insensitive substring. Terms of 3+
characters go through the FTS5 trigram index; when any term is shorter (two Chinese characters
are a common whole query) the trigram index cannot answer, so the search falls back to LIKE
over the same rows. Does not own the schema (see `app.store.migrations`).
"""

from __future__ import annotations

import re
import sqlite3

from app.store.records import SearchHit

_TRIGRAM = 3
_BEFORE = 40  # snippet characters kept before the first match
_WIDTH = 160  # snippet characters in all
_ELLIPSIS = "…"

_MESSAGE_COLUMNS = "m.id, m.conversation_id, m.role, m.content, m.updated_at, c.title"
_TITLE_COLUMNS = "c.id, c.title, c.updated_at"


def search(conn: sqlite3.Connection, query: str, limit: int) -> list[SearchHit]:
    """Title hits first (newest first), then message hits (best first), at most ``limit``."""
    terms = query.split()
    if not terms or limit <= 0:
        return []
    hits = [_title_hit(row, terms) for row in _title_rows(conn, terms, limit)]
    rows = _message_rows(conn, terms, limit - len(hits))
    hits += [_message_hit(row, terms) for row in rows]
    return hits


def _uses_fts(terms: list[str]) -> bool:
    return all(len(term) >= _TRIGRAM for term in terms)


def _match_expression(terms: list[str]) -> str:
    # Each term as a quoted FTS5 string: operators and punctuation in it are taken literally.
    return " AND ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _like_clause(column: str, terms: list[str]) -> tuple[str, list[str]]:
    clause = " AND ".join(f"{column} LIKE ? ESCAPE '\\'" for _ in terms)
    return clause, [f"%{_escape_like(term)}%" for term in terms]


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _title_rows(conn: sqlite3.Connection, terms: list[str], limit: int) -> list[sqlite3.Row]:
    if _uses_fts(terms):
        sql = (
            f"SELECT {_TITLE_COLUMNS} FROM conversations_fts f "
            "JOIN conversations c ON c.rowid = f.rowid "
            "WHERE conversations_fts MATCH ? AND c.deleted_at IS NULL "
            "ORDER BY c.updated_at DESC LIMIT ?"
        )
        return conn.execute(sql, (_match_expression(terms), limit)).fetchall()
    clause, args = _like_clause("c.title", terms)
    sql = (
        f"SELECT {_TITLE_COLUMNS} FROM conversations c WHERE {clause} AND c.deleted_at IS NULL "
        "ORDER BY c.updated_at DESC LIMIT ?"
    )
    return conn.execute(sql, (*args, limit)).fetchall()


def _message_rows(conn: sqlite3.Connection, terms: list[str], limit: int) -> list[sqlite3.Row]:
    if limit <= 0:
        return []
    if _uses_fts(terms):
        sql = (
            f"SELECT {_MESSAGE_COLUMNS} FROM messages_fts f "
            "JOIN messages m ON m.rowid = f.rowid "
            "JOIN conversations c ON c.id = m.conversation_id "
            "WHERE messages_fts MATCH ? AND c.deleted_at IS NULL "
            "ORDER BY f.rank LIMIT ?"
        )
        return conn.execute(sql, (_match_expression(terms), limit)).fetchall()
    clause, args = _like_clause("m.content", terms)
    sql = (
        f"SELECT {_MESSAGE_COLUMNS} FROM messages m "
        "JOIN conversations c ON c.id = m.conversation_id "
        f"WHERE {clause} AND c.deleted_at IS NULL ORDER BY m.updated_at DESC LIMIT ?"
    )
    return conn.execute(sql, (*args, limit)).fetchall()


def _title_hit(row: sqlite3.Row, terms: list[str]) -> SearchHit:
    snippet, highlights = make_snippet(row["title"], terms)
    return SearchHit(
        conversation_id=row["id"],
        conversation_title=row["title"],
        message_id=None,
        role=None,
        snippet=snippet,
        highlights=highlights,
        updated_at=row["updated_at"],
    )


def _message_hit(row: sqlite3.Row, terms: list[str]) -> SearchHit:
    snippet, highlights = make_snippet(row["content"], terms)
    return SearchHit(
        conversation_id=row["conversation_id"],
        conversation_title=row["title"],
        message_id=row["id"],
        role=row["role"],
        snippet=snippet,
        highlights=highlights,
        updated_at=row["updated_at"],
    )


def make_snippet(text: str, terms: list[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A one-line window of ``text`` around the first match, and the match spans inside it."""
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    first = pattern.search(text)
    start = max(0, (first.start() if first else 0) - _BEFORE)
    end = min(len(text), start + _WIDTH)
    # Newlines and tabs become spaces one for one, so match offsets stay valid.
    window = text[start:end].translate({ord("\n"): " ", ord("\r"): " ", ord("\t"): " "})
    prefix = _ELLIPSIS if start > 0 else ""
    suffix = _ELLIPSIS if end < len(text) else ""
    shift = len(prefix)
    spans = tuple((m.start() + shift, m.end() + shift) for m in pattern.finditer(window))
    return prefix + window + suffix, spans
