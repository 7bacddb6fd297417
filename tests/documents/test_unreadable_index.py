"""An index file SQLite refuses (not a database, or held by another program) is one clear
error wherever it is opened: the index itself, ``python -m app docs``, and a background
indexing job and the start-up rescan, which report it through ``on_done`` instead of losing
it on their thread. The file is left byte for byte as it was."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from app.documents import DocumentError, DocumentIndex, index_file
from app.documents.background import WHOLE_INDEX, CollectionIndexer

GARBAGE = bytes(range(256)) * 12  # 3 KB that is no SQLite header


def _garbage(tmp_path: Path) -> Path:
    path = tmp_path / "documents.sqlite3"
    path.write_bytes(GARBAGE)
    return path


def test_a_file_that_is_not_sqlite_is_refused_in_one_line_and_left_alone(tmp_path: Path) -> None:
    path = _garbage(tmp_path)
    with pytest.raises(DocumentError, match="cannot be opened as a document index") as caught:
        DocumentIndex(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    assert path.read_bytes() == GARBAGE


def test_an_index_held_by_another_program_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "documents.sqlite3"
    DocumentIndex(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")  # an old index: the switch to WAL must wait
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(index_file, "BUSY_TIMEOUT_S", 0.2)
    try:
        with pytest.raises(DocumentError, match="in use by another program"):
            DocumentIndex(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_the_docs_command_prints_one_line_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.__main__ import main

    path = _garbage(tmp_path)
    assert main(["docs", "list", "--index", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hearth docs list: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_a_background_job_reports_the_unreadable_index(tmp_path: Path) -> None:
    done = threading.Event()
    results: list[object] = []

    def on_done(collection: str, result: object) -> None:
        results.append((collection, result))
        done.set()

    indexer = CollectionIndexer(_garbage(tmp_path), on_done=on_done)
    try:
        indexer.add("notes", tmp_path).result(timeout=30)
        assert done.wait(5)
    finally:
        indexer.close()
    [(collection, result)] = results
    assert collection == "notes" and isinstance(result, DocumentError)
    assert "cannot be opened as a document index" in str(result)


def test_the_start_up_rescan_reports_the_unreadable_index(tmp_path: Path) -> None:
    # The app does not await the start-up rescan's future: its failure must reach on_done.
    results: list[tuple[str, object]] = []
    done = threading.Event()
    path = _garbage(tmp_path)
    indexer = CollectionIndexer(path, on_done=lambda c, r: (results.append((c, r)), done.set()))
    try:
        indexer.rescan_all().result(timeout=30)
        assert done.wait(5)
    finally:
        indexer.close()
    [(collection, result)] = results
    assert collection == WHOLE_INDEX and isinstance(result, DocumentError)
    assert "cannot be opened as a document index" in str(result)
    assert path.read_bytes() == GARBAGE  # left as it was
