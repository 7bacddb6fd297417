"""Issue 22, A14 / A21 / A22: a lone surrogate in an import, two first runs racing to create
the database, and another program's SQLite file at Hearth's path. Real SQLite files, real
processes for the race."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from app.portability.export import export_conversations, file_stem
from app.portability.importer import import_files
from app.store import Store, StoreError
from app.store.records import NotHearthsError


def test_lone_surrogates_in_an_import_become_replacement_characters(tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(
        '{"title": "bad \\ud800 title", "messages": ['
        '{"role": "system", "content": "sys \\udfff"},'
        '{"role": "user", "content": "pair \\ud83d\\ude00 lone \\ud800"}]}',
        encoding="utf-8",
    )
    with Store(tmp_path / "h.sqlite3") as store:
        [conversation] = import_files(store, [source])
        assert conversation.title == "bad \ufffd title"
        assert conversation.system_prompt == "sys \ufffd"
        [message] = [m for m in store.tree(conversation.id) if m.role == "user"]
        assert message.content == "pair \U0001f600 lone \ufffd"
        [path] = export_conversations(store, [conversation.id], "markdown", tmp_path / "out")
        assert "lone \ufffd" in path.read_text(encoding="utf-8")


def _first_run(path: str, barrier: Any, results: Any) -> None:
    barrier.wait()  # all open the missing database at the same moment
    try:
        with Store(path) as store:
            store.create_conversation("mine")
        results.put("ok")
    except Exception as exc:  # reported to the parent, which fails the test
        results.put(f"{type(exc).__name__}: {exc}")


def test_first_runs_racing_to_create_the_database_all_succeed(tmp_path: Path) -> None:
    path = str(tmp_path / "race.sqlite3")
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(6), context.Queue()
    runs = [context.Process(target=_first_run, args=(path, barrier, results)) for _ in range(6)]
    for run in runs:
        run.start()
    outcomes = [results.get(timeout=120) for _ in runs]
    for run in runs:
        run.join(timeout=30)
    assert outcomes == ["ok"] * 6
    with Store(path) as store:
        assert len(store.list_conversations()) == 6


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_another_programs_database_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "hearth.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.close()
    before = _digest(path)
    with pytest.raises(NotHearthsError, match=r"not a Hearth database.*invoices"):
        Store(path).list_conversations()
    assert _digest(path) == before


def test_a_file_stamped_by_another_program_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "hearth.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1234")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with pytest.raises(StoreError, match="another program"):
        Store(path).list_conversations()


def test_hearths_own_database_is_stamped_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "hearth.sqlite3"
    with Store(path) as store:
        store.create_conversation("kept")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == int.from_bytes(b"HRTH", "big")
    conn.close()
    with Store(path) as store:
        assert [c.title for c in store.list_conversations()] == ["kept"]


def test_exporting_many_chats_that_share_a_title_lists_the_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 A9: the folder was listed, and names retried from (1), once per file: cubic."""
    out = tmp_path / "out"
    out.mkdir()
    with Store(tmp_path / "h.sqlite3") as store:
        chats = [store.create_conversation("New chat") for _ in range(300)]
        ids = [c.id for c in chats]
        theirs = out / (file_stem("New chat", chats[0].created_at).upper() + ".md")
        theirs.write_text("someone else's", encoding="utf-8")  # taken, in any case
        listings = []
        real_iterdir = Path.iterdir

        def counting_iterdir(self: Path) -> Any:
            listings.append(self)
            return real_iterdir(self)

        monkeypatch.setattr(Path, "iterdir", counting_iterdir)
        paths = export_conversations(store, ids, "markdown", out)
    assert listings == [out]
    names = [p.name for p in paths]
    assert len(set(names)) == 300
    assert names[0].startswith("New chat - ") and names[0].endswith(" (2).md")
    assert names[-1].endswith(" (301).md")
    assert theirs.read_text(encoding="utf-8") == "someone else's"
