"""The start-up sweep of picture files (issue 31 item 4/5): in a real data folder
(``HEARTH_DATA_DIR``), the application started on its own database deletes, in the background,
the picture files no message holds that are older than a day, and nothing else: a held
picture, a fresh one (a draft's) and an old one just attached again all stay. Real SQLite, real
PNGs, the real `Application.start`."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from app.application import Application
from app.chat.images import attach_image
from app.store import Store
from app.store.images import SWEEP_AFTER_S, save_images, sweep_image_files
from app.system import paths
from app.system.settings import Settings

DAYS_AGO = 2 * SWEEP_AFTER_S


def _aged(path: Path, seconds: float) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


def _picture(folder: Path, name: str, colour: tuple[int, int, int]) -> Path:
    path = folder / name
    Image.new("RGB", (24, 16), colour).save(path)
    return path


def test_start_up_sweeps_old_unheld_pictures_only(
    qapp: Any, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("HEARTH_DATA_DIR", str(data))
    images = paths.data_dir() / "images"
    assert images == data / "images"
    sources = tmp_path / "sources"
    sources.mkdir()
    colours = {"held": (200, 0, 0), "old": (0, 200, 0), "fresh": (0, 0, 200), "again": (9, 9, 9)}
    kept = {k: attach_image(_picture(sources, f"{k}.png", c)) for k, c in colours.items()}
    assert all(Path(k.path).parent == images for k in kept.values())
    with Store(paths.database_path()) as store:
        conv = store.create_conversation("A chat with a picture")
        user = store.add_message(conv.id, None, "user", "Look.")
        save_images(store, user.id, (kept["held"],))
    for key in ("held", "old", "again"):
        _aged(Path(kept[key].path), DAYS_AGO)
    attach_image(sources / "again.png")  # the same bytes attached again: new to the sweep
    crashed = images / "0123.png.part"  # a write cut short long ago
    crashed.write_bytes(b"half")
    _aged(crashed, DAYS_AGO)

    gc.collect()
    app = Application(qapp, Settings(str(tmp_path / "s.ini")))
    try:
        assert run(app.start(model=None))  # the default database, in the data folder
        run(app.db.call(lambda _store: None))  # the DB thread has done what came before
        left = {p.name for p in images.iterdir()}
        assert Path(kept["old"].path).name not in left  # unheld for two days: swept
        assert crashed.name not in left  # a write that never finished, long ago
        for key in ("held", "fresh", "again"):
            assert Path(kept[key].path).name in left, key
    finally:
        run(app.shutdown())


def test_the_full_sweep_takes_every_unheld_picture_but_a_file_being_written(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "images"
    held = attach_image(_picture(tmp_path, "a.png", (1, 2, 3)), images_folder=folder)
    loose = attach_image(_picture(tmp_path, "b.png", (4, 5, 6)), images_folder=folder)
    (folder / "c.png.part").write_bytes(b"half")
    with Store(tmp_path / "hearth.sqlite3") as store:
        conv = store.create_conversation("c")
        user = store.add_message(conv.id, None, "user", "Look.")
        save_images(store, user.id, (held,))
        assert sweep_image_files(store, folder, older_than_s=SWEEP_AFTER_S) == 0  # all fresh
        assert sweep_image_files(store, folder) == 1
    assert sorted(p.name for p in folder.iterdir()) == sorted([Path(held.path).name, "c.png.part"])
    assert not Path(loose.path).exists()
