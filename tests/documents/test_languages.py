"""Each collection's languages (`app.documents.languages`): real SQLite files, the engine's real
detector through `app.bridge`, real passages (CMRC 2018 Chinese, SQuAD English, from
tests/data/docs_qa); an index made before the language column upgrades and gets its languages
at the next rescan without reading or embedding a file again; the embedding catalogue says
which languages a model misses."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

import pytest

from app.documents import DocumentIndex, extract_text, languages, ranking
from app.documents.chunking import chunk_document
from app.documents.languages import SCHEMA_VERSION, shares_of, uncovered
from app.documents.records import LanguageShare
from engine.hub.embedding import EmbeddingModel, load_embedding_models

DATA = Path(__file__).parent.parent / "data" / "docs_qa"


def _passages(name: str, count: int) -> str:
    passages = json.loads((DATA / name).read_text(encoding="utf-8"))["passages"]
    return "\n\n".join(p["text"] for p in passages[:count])


@pytest.fixture
def bilingual(tmp_path: Path) -> Path:
    """A folder with a Chinese document (12 CMRC passages) and an English one (SQuAD)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "wiki_zh.txt").write_text(_passages("cmrc2018_dev_subset.json", 12), "utf-8")
    (folder / "normans.txt").write_text(_passages("squad_dev_subset.json", 12), "utf-8")
    return folder


def _chunk_languages(path: Path) -> dict[str, set[str | None]]:
    """Each file's chunk languages, read from the file with plain sqlite3."""
    conn = sqlite3.connect(path)
    found: dict[str, set[str | None]] = {}
    for file, language in conn.execute(
        "SELECT f.path, k.language FROM chunks k JOIN files f ON f.id = k.file_id"
    ):
        found.setdefault(Path(file).name, set()).add(language)
    conn.close()
    return found


def test_a_collection_of_chinese_and_english_documents_records_both(
    bilingual: Path, tmp_path: Path
) -> None:
    path = tmp_path / "documents.sqlite3"
    index = DocumentIndex(path)
    report = index.add("wiki", bilingual)
    index.close()
    assert report.added == 2 and report.chunks > 4
    # Every chunk of each file carries its language (the Chinese passages name no kana or
    # Hangul in these 12, so no stray tag).
    assert _chunk_languages(path) == {"wiki_zh.txt": {"zh-Hans"}, "normans.txt": {"en"}}
    reopened = DocumentIndex(path)
    (info,) = reopened.collections()
    reopened.close()
    assert sorted(s.tag for s in info.languages) == ["en", "zh-Hans"]
    assert info.languages[0].share >= info.languages[1].share  # largest first
    conn = sqlite3.connect(path)
    by_tag = dict(conn.execute("SELECT language, COUNT(*) FROM chunks GROUP BY language"))
    conn.close()
    assert {s.tag: round(s.share, 6) for s in info.languages} == {
        tag: round(n / info.chunks, 6) for tag, n in by_tag.items()
    }


OLD_SCHEMA = """
CREATE TABLE collections (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at REAL NOT NULL,
    embed_model TEXT);
CREATE TABLE roots (
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL, PRIMARY KEY (collection_id, path));
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL, size INTEGER, mtime REAL, sha256 TEXT,
    status TEXT NOT NULL, error TEXT, indexed_at REAL NOT NULL,
    UNIQUE (collection_id, path));
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL, locator TEXT NOT NULL, text TEXT NOT NULL,
    model TEXT, vector BLOB);
CREATE INDEX chunks_file ON chunks(file_id);
CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, tokenize='unicode61');
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks
    BEGIN DELETE FROM chunks_fts WHERE rowid = old.id; END;
"""  # documents.sqlite3 as Hearth wrote it before chunks had a language (commit 6e8c59f)


def _old_index(path: Path, folder: Path) -> None:
    """An index of ``folder`` in the old schema, its files recorded as they are on disk."""
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    conn.execute("INSERT INTO collections VALUES (1, 'wiki', 0, NULL)")
    conn.execute("INSERT INTO roots VALUES (1, ?)", (str(folder.resolve()),))
    for fid, file in enumerate(sorted(folder.iterdir()), start=1):
        data, stat = file.read_bytes(), file.stat()
        conn.execute(
            "INSERT INTO files VALUES (?, 1, ?, ?, ?, ?, 'ok', NULL, 0)",
            (
                fid,
                str(file.resolve()),
                stat.st_size,
                stat.st_mtime,
                hashlib.sha256(data).hexdigest(),
            ),
        )
        for chunk in chunk_document(extract_text(file.name, data), 256):
            cur = conn.execute(
                "INSERT INTO chunks(file_id, ordinal, locator, text) VALUES (?, ?, ?, ?)",
                (fid, chunk.ordinal, chunk.locator, chunk.text),
            )
            conn.execute(
                "INSERT INTO chunks_fts(rowid, terms) VALUES (?, ?)",
                (cur.lastrowid, ranking.index_terms(chunk.text)),
            )
    conn.commit()
    conn.close()


def test_an_old_index_upgrades_and_gets_its_languages_at_the_next_rescan(
    bilingual: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(languages, "FILL_BATCH", 7)  # several batches over the old chunks
    path = tmp_path / "documents.sqlite3"
    _old_index(path, bilingual)
    index = DocumentIndex(path)
    columns = [r[1] for r in index.conn.execute("PRAGMA table_info(chunks)")]
    assert columns[-1] == "language"
    assert index.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    (before,) = index.collections()
    assert before.chunks > 4 and before.languages == ()  # not detected yet: nothing claimed
    report = index.rescan("wiki")
    # Nothing on disk changed: no file is read or indexed again, yet every chunk has its
    # language now, from the text the index already holds.
    assert (report.added, report.updated, report.unchanged, report.chunks) == (0, 0, 2, 0)
    (after,) = index.collections()
    assert {s.tag for s in after.languages} == {"zh-Hans", "en"}
    hits = index.search(["wiki"], "Normans Normandy", 1, mode="keyword")
    assert [Path(h.file).name for h in hits] == ["normans.txt"]  # the old rows still search
    index.close()
    assert _chunk_languages(path) == {"wiki_zh.txt": {"zh-Hans"}, "normans.txt": {"en"}}
    again = DocumentIndex(path)  # a second open migrates nothing and keeps the languages
    assert {s.tag for s in again.collections()[0].languages} == {"zh-Hans", "en"}
    again.close()


def test_shares_leave_out_undetermined_and_tiny_ones_and_fold_a_bare_tag() -> None:
    counts = {"zh-Hans": 70, "zh": 10, "en": 17, "ko": 3, "und": 50}
    shares = shares_of(counts)
    # "und" is not a language; "zh" (the statistical model's, no script) joins zh-Hans;
    # Korean at 3 % of the determined chunks is a quoted name, not the collection's language.
    assert [(s.tag, round(s.share, 2)) for s in shares] == [("zh-Hans", 0.8), ("en", 0.17)]
    assert shares_of({"und": 4}) == () and shares_of({}) == ()
    assert [s.tag for s in shares_of({"zh": 5, "en": 5})] == ["en", "zh"]  # no script to join


def _english_only() -> EmbeddingModel:
    return EmbeddingModel(
        repo_id="example/english-embed-GGUF",
        filename="english-embed-Q8_0.gguf",
        name="English Embed",
        architecture="bert",
        dim=384,
        pooling="mean",
        quant="Q8_0",
        size_bytes=1,
        languages=("en",),
        licence="MIT",
    )


def test_uncovered_names_the_missing_languages_and_a_catalogue_model_that_covers_them() -> None:
    catalogue = load_embedding_models()
    models = [*catalogue, _english_only()]
    shares = (LanguageShare("en", 0.8), LanguageShare("zh-Hans", 0.2))
    found = uncovered(shares, "/models/embeddings/english-embed-Q8_0.gguf", models)
    assert found is not None
    assert (found.model, found.languages) == ("English Embed", ("zh-Hans",))
    assert found.suggestion == catalogue[0].name == "Qwen3 Embedding 0.6B"
    assert uncovered(shares, f"/m/{catalogue[0].filename}", models) is None
    assert uncovered(shares, "/m/unknown-model.gguf", models) is None  # languages not known
    assert uncovered(shares, None, models) is None  # keyword search only
    thai = uncovered((LanguageShare("th", 1.0),), "English Embed", models)
    assert thai is not None and thai.languages == ("th",) and thai.suggestion is None


def test_two_openers_of_an_old_index_at_once_both_migrate_it(
    bilingual: Path, tmp_path: Path
) -> None:
    """The app opens the file on two threads (indexer and search) as it starts."""
    path = tmp_path / "documents.sqlite3"
    _old_index(path, bilingual)
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        try:
            DocumentIndex(path).close()
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    conn = sqlite3.connect(path)
    assert [r[1] for r in conn.execute("PRAGMA table_info(chunks)")].count("language") == 1
    conn.close()
