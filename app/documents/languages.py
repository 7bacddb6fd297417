"""Each collection's languages: the language of every chunk, recorded when it is indexed.

Owns the chunks table's ``language`` column (migration 1 of ``documents.sqlite3``: an index
made before it gains the column, empty, and its chunks get their language at the next rescan,
from their stored text: nothing is read or embedded again), detecting a chunk's language
(`app.bridge.language_of`, the engine's detector: script rules for Chinese, Japanese and
Korean, fastText's lid.176 "lite" for the rest), each collection's `LanguageShare`s, and
whether an embedding model covers them (`uncovered`, from the catalogue's ``languages``).

Per chunk, not per document: measured on real text (CMRC 2018 and SQuAD passages, Hearth's
zh_CN translation file) it costs 0.04-0.07 ms a chunk, about what chunking costs and some
10,000 times less than embedding a chunk, and a document of Chinese and English gets both
(the whole CMRC subset read as one document was tagged "ja", from a few kana in 150 passages).

Does not own the rest of the schema (`app.documents.index`) nor what the shares are shown as
(the Collections window).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.bridge import language_of
from app.documents.records import LanguageShare
from engine.hub.embedding import EmbeddingModel, embedding_model_for, uncovered_languages

SCHEMA_VERSION = 1  # PRAGMA user_version of documents.sqlite3 once migrated
UNDETERMINED = "und"  # detected, but no language to go by (numbers, symbols, code)
# Shares under 5 % of a collection's chunks are left out: a Chinese article quoting a Korean
# name in Hangul, or a table of figures, is not a language the collection is written in.
MIN_SHARE = 0.05
FILL_BATCH = 500  # chunks detected and written per transaction when filling an old index


def migrate(conn: sqlite3.Connection) -> None:
    """Bring ``conn``'s chunks table to `SCHEMA_VERSION`: the ``language`` column (NULL: not
    detected yet) and a covering index, so a collection's shares are counted without reading
    chunk texts and vectors. Safe when another connection migrates the same file at once."""
    if _version(conn) >= SCHEMA_VERSION:
        return
    with conn:
        conn.execute("BEGIN IMMEDIATE")  # one writer: a second opener waits, then sees it done
        if _version(conn) < SCHEMA_VERSION:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
            if "language" not in columns:
                conn.execute("ALTER TABLE chunks ADD COLUMN language TEXT")
            conn.execute("CREATE INDEX IF NOT EXISTS chunks_language ON chunks(file_id, language)")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def chunk_language(text: str) -> str:
    """The BCP 47 tag of a chunk's text ("zh-Hans", "en", ...; "und" when it has no words)."""
    return language_of(text)


def fill_missing(
    conn: sqlite3.Connection, collection_id: int, cancel: threading.Event | None = None
) -> int:
    """Detect the language of ``collection_id``'s chunks that have none yet (indexed before
    the column existed); returns how many were filled. Stops between batches on ``cancel``."""
    filled = last = 0
    while cancel is None or not cancel.is_set():
        # By id, from where the last batch ended: each chunk is read once, whatever is written.
        rows = conn.execute(
            "SELECT k.id, k.text FROM chunks k JOIN files f ON f.id = k.file_id"
            " WHERE f.collection_id = ? AND k.language IS NULL AND k.id > ?"
            " ORDER BY k.id LIMIT ?",
            (collection_id, last, FILL_BATCH),
        ).fetchall()
        if not rows:
            break
        with conn:
            conn.executemany(
                "UPDATE chunks SET language = ? WHERE id = ?",
                [(chunk_language(text), chunk_id) for chunk_id, text in rows],
            )
        filled, last = filled + len(rows), int(rows[-1][0])
    return filled


def collection_shares(conn: sqlite3.Connection) -> dict[int, tuple[LanguageShare, ...]]:
    """Each collection's languages (by id), read from the covering index alone."""
    counts: dict[int, Counter[str]] = {}
    for cid, language, n in conn.execute(
        "SELECT f.collection_id, k.language, COUNT(*) FROM files f"
        " JOIN chunks k ON k.file_id = f.id WHERE k.language IS NOT NULL"
        " GROUP BY f.collection_id, k.language"
    ):
        counts.setdefault(int(cid), Counter())[str(language)] += int(n)
    return {cid: shares_of(c) for cid, c in counts.items()}


def shares_of(counts: Mapping[str, int], min_share: float = MIN_SHARE) -> tuple[LanguageShare, ...]:
    """Chunk counts by tag as shares of the chunks whose language was determined, largest
    first, those under ``min_share`` left out. A bare base tag ("zh", from the statistical
    model, which names no script) joins the collection's most frequent tag of that language
    ("zh-Hans"), so one language is not shown twice."""
    folded: Counter[str] = Counter()
    for tag, n in counts.items():
        if tag != UNDETERMINED and n > 0:
            folded[_fold(tag, counts)] += n
    total = sum(folded.values())
    if not total:
        return ()
    shares = [LanguageShare(tag, n / total) for tag, n in folded.items()]
    kept = [s for s in shares if s.share >= min_share]
    return tuple(sorted(kept, key=lambda s: (-s.share, s.tag)))


def shares_text(shares: Iterable[LanguageShare]) -> str:
    """ "en 80 %, zh-Hans 20 %": each language's share of the collection's chunks."""
    return ", ".join(f"{s.tag} {round(s.share * 100)} %" for s in shares)


def _fold(tag: str, counts: Mapping[str, int]) -> str:
    if "-" in tag:
        return tag
    scripts = [(n, t) for t, n in counts.items() if t.startswith(tag + "-")]
    return max(scripts)[1] if scripts else tag


@dataclass(frozen=True)
class Uncovered:
    """A collection's languages that its embedding model does not list: ``model`` (the
    model's name), ``languages`` (tags), ``suggestion`` (a catalogue embedding model that lists
    them all, None when none does)."""

    model: str
    languages: tuple[str, ...]
    suggestion: str | None


def uncovered(
    shares: Iterable[LanguageShare], model: str | None, models: Sequence[EmbeddingModel]
) -> Uncovered | None:
    """What ``model`` (a path or name; a catalogue entry of ``models``) misses of ``shares``;
    None when it covers them all, or when it is not in the catalogue (its languages are not
    known) or there is none (keyword search reads every language)."""
    entry = None if model is None else embedding_model_for(model, models)
    if entry is None:
        return None
    missing = uncovered_languages([s.tag for s in shares], entry.languages)
    if not missing:
        return None
    covering = (m for m in models if not uncovered_languages(missing, m.languages))
    return Uncovered(entry.name, tuple(missing), next((m.name for m in covering), None))
