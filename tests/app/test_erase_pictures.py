"""Erasing chats for good takes their picture files with them, unless another chat still holds
the same picture (files are shared by hash). Real SQLite file, real PNGs, the trash's own
`erase`."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from app.chat.images import attach_image
from app.store import Store
from app.store.images import save_images
from app.store.organise import erase


def test_erasing_a_chat_removes_the_pictures_no_other_chat_holds(tmp_path: Path) -> None:
    kept = tmp_path / "images"
    made = []
    for n, colour in enumerate(((255, 0, 0), (0, 0, 255))):
        Image.new("RGB", (20, 10), colour).save(str(tmp_path / f"{n}.png"))
        made.append(attach_image(tmp_path / f"{n}.png", images_folder=kept))
    shared, own = made
    with Store(tmp_path / "hearth.sqlite3") as store:
        chats = []
        for pictures in ((shared, own), (shared,)):
            conv = store.create_conversation("pictures")
            user = store.add_message(conv.id, None, "user", "Look.")
            save_images(store, user.id, pictures)
            chats.append(conv.id)
        first, second = chats
        store.delete_conversation(first)  # the trash: nothing erased yet
        assert Path(own.path).is_file()
        assert erase(store, [first]) == [first]
        assert not Path(own.path).exists()  # only the erased chat held it
        assert Path(shared.path).is_file()  # the other chat still shows it
        store.delete_conversation(second)
        assert erase(store) == [second]
        assert not Path(shared.path).exists()
