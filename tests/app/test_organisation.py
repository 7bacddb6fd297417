"""Organising chats, on the real Application offscreen, a real SQLite file, a real preferences
file and the real engine (tiny random model): pins, rename, folders and their filter, the trash
(restore; "Empty trash" erases rows, search index, drafts and the bytes themselves) and the
temporary chat that leaves nothing on disk."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.application import Application
from app.chat.temporary import start_temporary
from app.listmodels.conversations import PIN_MARK, IdRole
from app.store import SCHEMA_VERSION, Store
from app.store.organise import erase, folders, set_folder
from app.system.settings import Settings
from app.views.chat.organise import Organiser
from engine.types import Backend, SamplingParams
from tests.app.conftest import GatedBackend

SHORT = SamplingParams(temperature=0.0, max_new_tokens=3)
MARKER = "紫色长颈鹿zq7x-secret"  # unique: appears nowhere else in a Hearth database


async def _drain(session: Any) -> None:
    while session._tasks:
        await asyncio.sleep(0.01)


@pytest.fixture
def hearth(qapp: Any, run: Any, tiny_engine: Backend, tmp_path: Path) -> Any:
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    run(app.start(db_path=tmp_path / "db.sqlite3", model=None))
    run(app.load("tiny", lambda _progress: GatedBackend(tiny_engine)))
    app.apply_params(SHORT)
    yield app
    app.session.bridge.detach()
    run(app.shutdown())


def _organiser(hearth: Application) -> Organiser:
    organiser = hearth.extras.organiser
    assert isinstance(organiser, Organiser)
    return organiser


def _titles(hearth: Application) -> list[str]:
    model = hearth.session.conversations
    return [str(model.index(i).data()) for i in range(model.rowCount())]


def _on_disk(tmp_path: Path) -> bytes:
    """Every byte Hearth keeps: the database, its write-ahead log and the preferences."""
    names = ("db.sqlite3", "db.sqlite3-wal", "s.ini")
    return b"".join((tmp_path / n).read_bytes() for n in names if (tmp_path / n).exists())


def test_pinned_chats_come_first_with_a_mark_and_rename_is_saved(
    hearth: Application, run: Any
) -> None:
    session = hearth.session
    for text in ("first", "second", "third"):
        run(session.open_conversation(None))
        run(session.send(text))
    first = session.conversations.rows()[-1].id
    run(_organiser(hearth).pin(first, True))
    assert _titles(hearth)[0] == f"{PIN_MARK} first"
    run(session.open_conversation(None))
    run(session.send("fourth"))  # a new chat goes to the top of the unpinned ones
    assert _titles(hearth)[:2] == [f"{PIN_MARK} first", "fourth"]
    model = session.conversations
    model.setData(model.index(1), "renamed fourth", Qt.ItemDataRole.EditRole)  # inline edit
    run(_drain(session))
    run(session.refresh_conversations())
    assert _titles(hearth)[:2] == [f"{PIN_MARK} first", "renamed fourth"]
    run(_organiser(hearth).pin(first, False))
    assert f"{PIN_MARK} first" not in _titles(hearth)


def test_folders_filter_the_sidebar(hearth: Application, run: Any) -> None:
    session, organiser = hearth.session, _organiser(hearth)
    for text in ("work one", "home one", "work two"):
        run(session.open_conversation(None))
        run(session.send(text))
    ids = {r.title: r.id for r in session.conversations.rows()}
    run(organiser.move_to_folder(ids["work one"], "  Work  "))
    run(organiser.move_to_folder(ids["work two"], "Work"))
    asked = organiser.on_folder_requested(ids["home one"])  # the sidebar menu's question
    asked.setTextValue("家")
    asked.accept()
    run(_drain(session))
    run(organiser.refresh_folders())
    names = [organiser.filter.itemText(i) for i in range(organiser.filter.count())]
    assert names[1:] == ["Work", "家"]
    organiser.filter.setCurrentIndex(organiser.filter.findData("Work"))
    organiser.filter.activated.emit(organiser.filter.currentIndex())
    run(_drain(session))
    assert sorted(_titles(hearth)) == ["work one", "work two"]
    organiser.filter.setCurrentIndex(0)
    organiser.filter.activated.emit(0)
    run(_drain(session))
    assert len(_titles(hearth)) == 3


def test_a_version_2_database_gains_folders(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    from app.store import migrations

    conn = sqlite3.connect(path, isolation_level=None)
    for version, script in enumerate(migrations.MIGRATIONS[:2], start=1):
        conn.executescript(f"BEGIN;{script}PRAGMA user_version = {version};COMMIT;")
    conn.close()
    with Store(path) as store:
        conv = store.create_conversation("kept")
        set_folder(store, conv.id, "Old")
        assert folders(store) == ["Old"]
    version = sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION >= 3


def test_trash_restores_and_empty_trash_erases_every_byte(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    session = hearth.session
    run(session.send(f"keep this {MARKER}"))
    doomed = session.conversation_id
    assert doomed is not None
    run(session.send(f"and again {MARKER}"))
    hearth.settings.set_draft(doomed, f"unsent {MARKER}")  # a draft left in that chat
    run(session.open_conversation(None))
    run(session.send("an innocent chat"))
    kept = session.conversation_id
    run(session.delete_conversation(doomed))
    run(session.delete_conversation(kept))
    hearth.settings.sync()
    assert MARKER.encode() in _on_disk(tmp_path)  # the test can see it while it is there

    dialog = _organiser(hearth).open_trash()
    run(_drain(session))
    assert dialog.list.count() == 2
    for i in range(dialog.list.count()):
        item = dialog.list.item(i)
        item.setSelected(item.data(Qt.ItemDataRole.UserRole) == kept)
    run(dialog.restore_selected())
    assert [r.id for r in session.conversations.rows()] == [kept]
    dialog.empty_button.click()  # asks first
    box = dialog.findChildren(QMessageBox)[-1]
    assert box.isVisible() and dialog.list.count() == 1
    box.button(QMessageBox.StandardButton.Yes).click()
    run(_drain(session))
    assert dialog.list.count() == 0 and not dialog.empty_button.isEnabled()

    assert MARKER.encode() not in _on_disk(tmp_path)
    assert MARKER[:5].encode() not in _on_disk(tmp_path)  # nor a piece of the Chinese part
    assert doomed.encode() not in _on_disk(tmp_path)  # its draft's key went too
    assert run(session.store_db.call(Store.search, "紫色长颈")) == []
    assert run(session.store_db.call(erase, None)) == []  # nothing left to erase


def test_a_temporary_chat_leaves_nothing_on_disk(
    hearth: Application, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a ":memory:" mistaken for a file name would land here
    session, organiser = hearth.session, _organiser(hearth)
    run(session.send("a saved chat"))
    saved = session.conversation_id
    organiser.temporary_button.click()
    run(_drain(session))
    assert session.temporary and organiser.mark.isVisibleTo(hearth.window)
    hearth.window.composer.set_text(f"typed {MARKER}")
    hearth.save_preferences()  # a draft save while it is open
    run(session.send(f"secret {MARKER}"))
    temp_id = session.conversation_id
    assert temp_id is not None and temp_id not in {r.id for r in session.conversations.rows()}
    run(session.regenerate(session.messages.item(1).id))  # branches work in memory too
    assert session.messages.item(1).sibling_count == 2
    hearth.save_preferences()
    run(session.open_conversation(saved))
    assert not session.temporary and not organiser.mark.isVisibleTo(hearth.window)
    assert session.db is session.store_db
    hearth.save_preferences()
    run(session.store_db.call(Store.close))  # flush and let go of the file
    disk = _on_disk(tmp_path)
    assert MARKER.encode() not in disk and temp_id.encode() not in disk
    assert not (tmp_path / ":memory:").exists()
    assert [r.id for r in session.conversations.rows()] == [saved]


def test_starting_a_temporary_chat_twice_keeps_one_memory_store(
    hearth: Application, run: Any
) -> None:
    session = hearth.session
    run(start_temporary(session))
    first = session.db
    run(start_temporary(session))
    assert session.db is not first and session.db is not session.store_db
    run(session.open_conversation(None))
    assert session.db is session.store_db and not session.temporary
    assert all(r.id for r in session.conversations.rows() if r.id)  # list untouched
    assert hearth.window.sidebar.list.model().rowCount() == 0
    assert IdRole  # the list model's roles stay importable


def test_a_temporary_chat_can_still_be_exported_on_request(
    hearth: Application, run: Any, tmp_path: Path
) -> None:
    session = hearth.session
    run(start_temporary(session))
    run(session.send(f"export me {MARKER}"))
    written = run(hearth.export("markdown", False, tmp_path / "out"))
    assert len(written) == 1 and MARKER in written[0].read_text(encoding="utf-8")
    hearth.settings.sync()
    assert MARKER.encode() not in _on_disk(tmp_path)  # the export is the only copy
