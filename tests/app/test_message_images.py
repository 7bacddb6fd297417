"""A user turn's pictures kept with it (issue 31 item 5, schema V8), on a real SQLite file and
the real tiny text-only engine: stored and read back with the branch after a reopen, kept on an
edited branch, files no message holds swept after the trash is emptied, a damaged row read as no
pictures, and a text-only model refusing pictures in words with nothing sent or stored.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from app.chat.images import attach_image
from app.listmodels.branch import load_branch
from app.portability.export import export_conversations
from app.portability.importer import import_files
from app.portability.portable import ImportFormatError
from app.store import Store
from app.store.images import images_for, save_images, sweep_image_files
from engine.types import Backend
from tests.app.conftest import close_session, make_session


def _picture(path: Path, colour: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> Path:
    Image.new("RGB", size, colour).save(path)
    return path


def test_pictures_are_stored_with_their_turn_and_read_back_with_the_branch(tmp_path: Path) -> None:
    folder = tmp_path / "images"
    a = attach_image(_picture(tmp_path / "a.png", (200, 0, 0)), images_folder=folder)
    b = attach_image(_picture(tmp_path / "b.png", (0, 200, 0), (30, 90)), images_folder=folder)
    db = tmp_path / "hearth.sqlite3"
    store = Store(db)
    conv = store.create_conversation("pictures")
    user = store.add_message(conv.id, None, "user", "Compare these.")
    store.add_message(conv.id, user.id, "assistant", "The first is red.")
    save_images(store, user.id, (a, b.__class__(b.path, b.sha256, b.name, 30, 90, budget=560)))
    store.close()

    reopened = Store(db)
    items = load_branch(reopened, conv.id)
    assert [i.record.role for i in items] == ["user", "assistant"]
    assert [(p.sha256, p.width, p.height, p.budget) for p in items[0].images] == [
        (a.sha256, 64, 48, None),
        (b.sha256, 30, 90, 560),
    ]
    assert items[1].images == ()
    assert Path(items[0].images[0].path).read_bytes() == (tmp_path / "a.png").read_bytes()

    # Emptying the trash: the pictures' files go once no message holds them.
    stray = attach_image(_picture(tmp_path / "c.png", (0, 0, 200)), images_folder=folder)
    assert sweep_image_files(reopened, folder) == 1
    assert not Path(stray.path).exists() and Path(a.path).exists()
    reopened.delete_conversation(conv.id)
    reopened.purge_deleted()
    assert images_for(reopened, [user.id]) == {}
    assert sweep_image_files(reopened, folder) == 2
    assert list(folder.iterdir()) == []
    reopened.close()


def test_a_damaged_row_reads_as_no_pictures(tmp_path: Path) -> None:
    db = tmp_path / "hearth.sqlite3"
    store = Store(db)
    conv = store.create_conversation("damaged")
    user = store.add_message(conv.id, None, "user", "hi")
    store.close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO message_images (message_id, images_json) VALUES (?, ?)",
            (user.id, '[{"name": "no path"}, 3]'),
        )
    reopened = Store(db)
    assert images_for(reopened, [user.id]) == {}
    assert [i.record.content for i in load_branch(reopened, conv.id)] == ["hi"]
    reopened.close()


def test_a_text_only_model_refuses_pictures_in_words_and_sends_nothing(
    run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    session = make_session(run, tiny_engine, tmp_path / "hearth.sqlite3")
    notices: list[str] = []
    session.sig_notice.connect(notices.append)
    accepted: list[bool] = []
    session.sig_send_accepted.connect(lambda: accepted.append(True))
    try:
        picture = attach_image(_picture(tmp_path / "p.png", (9, 9, 9)), images_folder=tmp_path)
        run(session.send("What is in it?", images=[picture]))
        assert accepted == [] and session.messages.rowCount() == 0
        assert len(notices) == 1 and "cannot read pictures" in notices[0]
        assert tiny_engine.info.vision_refusal in notices[0]
    finally:
        close_session(session)


def test_json_export_embeds_the_pictures_and_import_restores_them(tmp_path: Path) -> None:
    picture = attach_image(_picture(tmp_path / "menu.png", (120, 60, 0)), images_folder=tmp_path)
    store = Store(tmp_path / "a.sqlite3")
    conv = store.create_conversation("menu")
    user = store.add_message(conv.id, None, "user", "What is on it?")
    save_images(store, user.id, (picture,))
    [path] = export_conversations(store, [conv.id], "json", tmp_path / "out")
    [md] = export_conversations(store, [conv.id], "markdown", tmp_path / "out")
    store.close()
    text = path.read_text(encoding="utf-8")
    assert str(tmp_path) not in text  # no path of this computer in a shared file
    assert "*Pictures:* ![menu.png](<" in md.read_text(encoding="utf-8")

    other = Store(tmp_path / "b.sqlite3")
    try:
        [imported] = import_files(other, [path])
        [item] = load_branch(other, imported.id)
        [back] = item.images
        assert (back.sha256, back.name, back.width, back.height) == (
            picture.sha256,
            "menu.png",
            64,
            48,
        )
        assert Path(back.path).read_bytes() == (tmp_path / "menu.png").read_bytes()
        # A file whose picture bytes were changed is refused in one line, nothing imported.
        path.write_text(text.replace(picture.sha256, "0" * 64), encoding="utf-8")
        with pytest.raises(ImportFormatError, match="do not match its sha256"):
            import_files(other, [path])
        assert len(other.list_conversations()) == 1
    finally:
        other.close()


def test_a_chat_with_pictures_goes_on_with_a_text_only_model(
    run: Any, tiny_engine: Backend, tmp_path: Path
) -> None:
    db = tmp_path / "hearth.sqlite3"
    store = Store(db)
    conv = store.create_conversation("pictures")
    user = store.add_message(conv.id, None, "user", "What is this?")
    picture = attach_image(_picture(tmp_path / "p.png", (1, 2, 3)), images_folder=tmp_path)
    save_images(store, user.id, (picture,))
    store.add_message(conv.id, user.id, "assistant", "A square.", finish_reason="stop")
    store.close()
    session = make_session(run, tiny_engine, db)
    try:
        run(session.open_conversation(conv.id))
        assert session.messages.item(0).images == (picture,)  # still shown
        assert all(not m.images for m in session.history(2))  # not given to a blind model
        run(session.send("And now?"))
        reply = session.messages.item(session.messages.rowCount() - 1)
        assert reply.record.role == "assistant" and reply.record.error is None
    finally:
        close_session(session)
