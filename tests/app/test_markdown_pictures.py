"""A Markdown export's pictures: written beside the ``.md``, linked relatively, read back on
import (issue 31 item 5). Real SQLite files, real PNGs made by Pillow, the real exporter and
importer."""

from __future__ import annotations

import shutil
from pathlib import Path

from PIL import Image

from app.chat.images import attach_image
from app.listmodels.branch import load_branch
from app.portability.export import export_conversations
from app.portability.importer import import_files
from app.store import Store
from app.store.images import save_images


def _chat_with_pictures(tmp_path: Path) -> tuple[Store, str, list[Path]]:
    """A chat whose first turn holds two pictures and whose second turn repeats one."""
    made = []
    for n, colour in enumerate(((200, 10, 10), (10, 200, 10))):
        path = tmp_path / f"photo {n}.png"
        Image.new("RGB", (40 + n, 30), colour).save(str(path))
        made.append(path)
    pictures = [attach_image(p, images_folder=tmp_path / "kept") for p in made]
    store = Store(tmp_path / "a.sqlite3")
    conv = store.create_conversation("two pictures")
    first = store.add_message(conv.id, None, "user", "What are these?")
    save_images(store, first.id, pictures)
    reply = store.add_message(conv.id, first.id, "assistant", "Red and green.")
    again = store.add_message(conv.id, reply.id, "user", "And this one?")
    save_images(store, again.id, pictures[:1])
    return store, conv.id, made


def test_markdown_export_writes_pictures_beside_it_and_import_restores_them(
    tmp_path: Path,
) -> None:
    store, cid, made = _chat_with_pictures(tmp_path)
    [md] = export_conversations(store, [cid], "markdown", tmp_path / "out")
    store.close()
    folder = md.with_name(md.stem + "_images")
    assert sorted(p.read_bytes() for p in folder.iterdir()) == sorted(
        p.read_bytes() for p in made
    )  # one file per picture, the one shown twice too
    text = md.read_text(encoding="utf-8")
    assert f"![photo 0.png](<{folder.name}/" in text and str(tmp_path) not in text

    # Moved elsewhere with its folder, the relative links still find the files.
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.move(str(md), moved / md.name)
    shutil.move(str(folder), moved / folder.name)
    other = Store(tmp_path / "b.sqlite3")
    try:
        [conv] = import_files(other, [moved / md.name])
        items = load_branch(other, conv.id)
        assert [m.record.content for m in items] == [
            "What are these?",
            "Red and green.",
            "And this one?",
        ]  # the trailer with the links is not part of the text
        first, _, last = items
        assert [(i.name, i.width, i.height) for i in first.images] == [
            ("photo 0.png", 40, 30),
            ("photo 1.png", 41, 30),
        ]
        assert [Path(i.path).read_bytes() for i in first.images] == [p.read_bytes() for p in made]
        assert last.images == first.images[:1]
    finally:
        other.close()


def test_a_markdown_file_without_its_pictures_still_imports_its_text(tmp_path: Path) -> None:
    store, cid, _ = _chat_with_pictures(tmp_path)
    [md] = export_conversations(store, [cid], "markdown", tmp_path / "out")
    store.close()
    alone = tmp_path / "alone.md"
    shutil.copyfile(md, alone)  # the .md copied without its _images folder
    escaping = tmp_path / "sub" / "escaping.md"
    escaping.parent.mkdir()
    # A hand-edited link out of the export's folder is not followed, though the file is there
    # (the edit keeps the trailer's length: ``closed=`` still drops it whole).
    folder = md.with_name(md.stem + "_images")
    outside = folder.name[3:]
    shutil.copytree(folder, tmp_path / outside)
    text = md.read_text(encoding="utf-8").replace(f"<{folder.name}/", f"<../{outside}/")
    escaping.write_text(text, encoding="utf-8")
    other = Store(tmp_path / "b.sqlite3")
    try:
        for path in (alone, escaping):
            [conv] = import_files(other, [path])
            items = load_branch(other, conv.id)
            assert items[0].record.content == "What are these?"
            assert all(not m.images for m in items)
    finally:
        other.close()
