"""Reading and writing a user turn's pictures (schema V8), and the files they point to.

Owns the SQL of ``message_images``: one JSON list per message of `ImageAttachment.to_dict()`,
written whole, read for many messages at once, deleted with the message (ON DELETE CASCADE);
a row that does not hold picture records reads as none. Also owns `keep_image_bytes`, the one
way a picture's bytes become a file in the data folder (named by their sha256, written aside
then renamed, so a file under its hash is always whole), and `sweep_image_files`, which deletes
the files no message holds any more: at start-up (`app.application`, in the background) only
those untouched for a day (`SWEEP_AFTER_S`), so a picture in a draft or a queued turn (kept,
not yet saved with a message) is never taken. Does not own checking a picture
(`app.chat.images`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

from app.store.message_lists import lists_for, save_list
from app.store.records import ImageAttachment
from app.store.store import Store

_TABLE, _COLUMN = "message_images", "images_json"
# A picture file untouched for this long and held by no message is swept at start-up. A day:
# a draft's or a queued turn's pictures are files before any message holds them.
SWEEP_AFTER_S = 24 * 3600.0


def save_images(store: Store, message_id: str, images: Sequence[ImageAttachment]) -> None:
    """The message's pictures (replaces what was saved for it; none deletes the row)."""
    save_list(store, _TABLE, _COLUMN, message_id, [i.to_dict() for i in images])


def images_for(store: Store, message_ids: Sequence[str]) -> dict[str, tuple[ImageAttachment, ...]]:
    """The pictures of ``message_ids`` that have any, by message id."""
    out: dict[str, tuple[ImageAttachment, ...]] = {}
    for mid, rows in lists_for(store, _TABLE, _COLUMN, message_ids).items():
        images = []
        for row in rows:
            try:
                images.append(ImageAttachment.from_dict(row))
            except ValueError:
                continue  # a damaged record: the rest of the message still shows
        if images:
            out[mid] = tuple(images)
    return out


def keep_image_bytes(data: bytes, suffix: str, folder: Path) -> tuple[Path, str]:
    """Keep ``data`` as ``folder/<sha256><suffix>`` (once: the same bytes are one file);
    returns the path and the sha256. OSError when the folder cannot be written."""
    sha = hashlib.sha256(data).hexdigest()
    target = folder / f"{sha}{suffix}"
    if target.exists():
        # Attached again: the file counts as new, so an age-limited sweep leaves it alone
        # until the turn holding it is saved.
        os.utime(target)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_bytes(data)
        partial.replace(target)
    return target, sha


def pictures_of_conversations(store: Store, conversation_ids: Sequence[str]) -> set[Path]:
    """The files the pictures of these conversations' messages lie in (before erasing them)."""
    with store._db() as conn:
        ids = [
            r[0]
            for cid in conversation_ids
            for r in conn.execute("SELECT id FROM messages WHERE conversation_id = ?", (cid,))
        ]
    return {Path(i.path) for images in images_for(store, ids).values() for i in images}


def forget_image_files(store: Store, files: set[Path]) -> int:
    """Delete those of ``files`` no stored message holds any more (a chat erased for good: a
    picture another chat also holds stays); returns how many went."""
    held = _held(store)
    gone = [f for f in files if f.stem not in held and f.is_file()]
    for file in gone:
        file.unlink(missing_ok=True)
    return len(gone)


def _held(store: Store) -> set[str]:
    with store._db() as conn:
        rows = conn.execute(f"SELECT message_id FROM {_TABLE}").fetchall()
    return {i.sha256 for images in images_for(store, [r[0] for r in rows]).values() for i in images}


def sweep_image_files(store: Store, folder: Path, older_than_s: float = 0.0) -> int:
    """Delete the pictures in ``folder`` that no stored message holds; returns how many went.

    ``older_than_s``: only files not written or attached again for that long (the start-up
    sweep: `SWEEP_AFTER_S`); 0 takes every unheld picture but leaves files being written
    (``.part``) alone. A file that cannot be looked at or deleted is left for the next sweep."""
    held = _held(store)
    cutoff = time.time() - older_than_s
    removed = 0
    for file in folder.iterdir() if folder.is_dir() else ():
        try:
            if not file.is_file() or file.stem in held:
                continue
            if older_than_s <= 0 and file.suffix == ".part":
                continue
            if older_than_s > 0 and file.stat().st_mtime > cutoff:
                continue
            file.unlink(missing_ok=True)
        except OSError:
            continue
        removed += 1
    return removed
