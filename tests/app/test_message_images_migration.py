"""Schema V8 (a user turn's pictures) over a database a Hearth before it wrote: the chats stay,
the new table appears, and pictures can then be kept with the old turns. Real SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from PIL import Image

from app.chat.images import attach_image
from app.listmodels.branch import load_branch
from app.store import Store, migrations
from app.store.images import save_images


def _tables(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_a_v7_database_gains_message_images_and_keeps_its_chats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert migrations.SCHEMA_VERSION >= 8
    db = tmp_path / "hearth.sqlite3"
    with monkeypatch.context() as old:  # the Hearth before pictures: schema V7
        old.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:7])
        old.setattr(migrations, "SCHEMA_VERSION", 7)
        with Store(db) as store:
            conv = store.create_conversation("before pictures")
            user = store.add_message(conv.id, None, "user", "Hello?")
            store.add_message(conv.id, user.id, "assistant", "Hi.")
    assert "message_images" not in _tables(db)

    Image.new("RGB", (32, 24), (1, 2, 3)).save(str(tmp_path / "p.png"))
    picture = attach_image(tmp_path / "p.png", images_folder=tmp_path / "images")
    with Store(db) as store:  # today's Hearth migrates it on open
        assert [m.record.content for m in load_branch(store, conv.id)] == ["Hello?", "Hi."]
        save_images(store, user.id, (picture,))
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
    assert "message_images" in _tables(db)
    with Store(db) as store:
        first, reply = load_branch(store, conv.id)
        assert first.images == (picture,) and reply.images == ()
