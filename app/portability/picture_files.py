"""A Markdown export's pictures as files beside it, and reading them back on import.

Owns the ``<file stem>_images/<sha256><suffix>`` folder a Markdown export writes next to its
``.md`` (one file per picture, named by its hash, so a picture shown twice is one file), the
relative link the turn's trailer shows (``![name](<folder/file>)``), finding those links in a
turn's trailer, and keeping the linked files in the data folder on import. Does not own the
rest of the Markdown format (`app.portability.export`, `app.portability.markdown_import`) or
the JSON export, which embeds the bytes instead.
"""

from __future__ import annotations

import re
import shutil
import warnings
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from PIL import Image

from app.portability.portable import PortableConversation, PortableMessage
from app.store.images import keep_image_bytes

# ``![name](<link>)``: the angle brackets let a link hold the spaces a file stem may have.
_LINK = re.compile(r"!\[([^\]\n]*)\]\(<([^>\n]+)>\)")
_PICTURES_LINE = re.compile(r"^\*Pictures:\* (.*)$", re.MULTILINE)
_MAX_PICTURE_BYTES = 64 * 2**20  # as a pasted picture could be; more is not a picture of a chat


def picture_link(image: Mapping[str, Any]) -> str:
    """How the trailer shows one picture: a relative image link where its file was written
    beside the export, its name alone where the picture's file was gone."""
    name = str(image.get("name", "")).replace("[", "(").replace("]", ")").replace("\n", " ")
    link = image.get("link")
    return f"![{name}](<{link}>)" if link else f"`{name}`"


def write_picture_files(pc: PortableConversation, md_path: Path) -> PortableConversation:
    """Copy the pictures of ``pc`` beside ``md_path`` and give each its relative ``link``."""
    if not any(m.images for m in pc.messages):
        return pc
    folder = md_path.with_name(md_path.stem + "_images")
    messages = []
    for m in pc.messages:
        images = []
        for image in m.images:
            source = Path(str(image.get("path", "")))
            target = folder / f"{image.get('sha256', '')}{source.suffix}"
            if source.is_file():
                if not target.exists():
                    folder.mkdir(exist_ok=True)
                    shutil.copyfile(source, target)
                image = {**image, "link": f"{folder.name}/{target.name}"}
            images.append(image)
        messages.append(replace(m, images=tuple(images)))
    return replace(pc, messages=tuple(messages))


def picture_links(trailer: str) -> tuple[dict[str, Any], ...]:
    """The pictures a turn's trailer links: ``{"name", "link"}`` each, to be read by
    `restore_picture_files`."""
    line = _PICTURES_LINE.search(trailer)  # not links a tool's output happened to hold
    found = _LINK.findall(line.group(1)) if line else []
    return tuple({"name": name, "link": link} for name, link in found)


def restore_picture_files(
    pc: PortableConversation, source: str, folder: Path
) -> PortableConversation:
    """Keep each linked picture that lies beside ``source`` in ``folder`` (the data folder's
    images) and give its message the record; a link to a missing, unreadable or outside file
    is dropped (the text still imports, as a copied ``.md`` without its folder should)."""
    if not any(m.images for m in pc.messages):
        return pc
    base = Path(source).parent
    messages: list[PortableMessage] = []
    for m in pc.messages:
        kept = [r for i in m.images if (r := _restored(i, base, folder)) is not None]
        messages.append(replace(m, images=tuple(kept)))
    return replace(pc, messages=tuple(messages))


def _restored(image: Mapping[str, Any], base: Path, folder: Path) -> dict[str, Any] | None:
    if "link" not in image:
        return dict(image)  # already a record (the JSON import kept it)
    link = PurePosixPath(str(image["link"]))
    if link.is_absolute() or ".." in link.parts:  # only files beside the export are read
        return None
    path = base.joinpath(*link.parts)
    try:
        if path.stat().st_size > _MAX_PICTURE_BYTES:
            return None
        data = path.read_bytes()
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as picture:
                width, height = picture.size
        kept, sha = keep_image_bytes(data, path.suffix[:8] or ".img", folder)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombWarning,
            Image.DecompressionBombError):  # fmt: skip
        return None  # not a picture Hearth reads: the turn's text still imports
    name = str(image.get("name") or path.name)
    return {"path": str(kept), "sha256": sha, "name": name, "width": width,
            "height": height, "budget": None}  # fmt: skip
