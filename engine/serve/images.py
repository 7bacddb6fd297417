"""Pictures in OpenAI requests: ``image_url`` content parts to image files the engine reads.

Owns the two halves of an image part: `parse_image_part` (no I/O, for `engine.serve.schema`):
a ``data:`` URL is decoded (base64, at most `MAX_IMAGE_BYTES`) and stands in the message as an
`ImageRef` named by its sha256; an ``http(s)`` URL is kept as it is. `store_images` (the
handler, before the request is queued) writes decoded pictures to
``<cache>/serve-images/<sha256>`` (once per picture: the same picture in the next turn is the
same file, so the engine's embeddings cache and prefix reuse hit), and fetches an http(s) URL
only when the server runs with ``--allow-image-urls``, bounded in size and time; otherwise such
a part is refused with 400. Does not decode pictures (`engine.vision`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import urllib.request
from pathlib import Path
from typing import Any

from engine.cache_folders import cache_root
from engine.serve.api_error import ApiError
from engine.types import ImageRef, Message

MAX_IMAGE_BYTES = 20 * 2**20  # one picture, decoded (a phone photo is 2-8 MB)
FETCH_TIMEOUT_S = 10.0
DATA_PREFIX = "inline:"  # the ImageRef.path of a decoded data: URL until it is stored


def parse_image_part(part: dict[str, Any], where: str) -> tuple[ImageRef, bytes | None]:
    """An ``image_url`` part as an ImageRef (and the decoded bytes of a data: URL)."""
    raw = part.get("image_url")
    url = raw.get("url") if isinstance(raw, dict) else raw
    if not isinstance(url, str) or not url:
        raise ApiError(400, f"{where}.image_url needs a url", param=where)
    if url.startswith(("http://", "https://")):
        return ImageRef(url), None
    if not url.startswith("data:") or "," not in url:
        raise ApiError(
            400, f"{where}: an image_url must be a data: URL (or http(s) where the server allows)",
            param=where,
        )  # fmt: skip
    header, _, payload = url[5:].partition(",")
    if not header.split(";")[0].lower().startswith("image/") or ";base64" not in header:
        raise ApiError(400, f"{where}: an image data URL must be base64 image/*", param=where)
    if len(payload) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        raise ApiError(413, f"{where}: the image is larger than {MAX_IMAGE_BYTES // 2**20} MB")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, f"{where}: the image's base64 is damaged", param=where) from None
    sha = hashlib.sha256(data).hexdigest()
    return ImageRef(DATA_PREFIX + sha, sha256=sha), data


def image_folder() -> Path:
    return cache_root() / "serve-images"


def store_images(
    messages: tuple[Message, ...], decoded: dict[str, bytes], allow_urls: bool
) -> tuple[Message, ...]:
    """``messages`` with every image a file: decoded ones written by hash, URLs fetched when
    ``allow_urls`` (else ApiError 400)."""
    if not any(m.images for m in messages):
        return messages
    folder = image_folder()
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for message in messages:
        refs = tuple(_stored(ref, decoded, folder, allow_urls) for ref in message.images)
        out.append(dataclasses.replace(message, images=refs) if refs else message)
    return tuple(out)


def _stored(ref: ImageRef, decoded: dict[str, bytes], folder: Path, allow_urls: bool) -> ImageRef:
    if ref.path.startswith(DATA_PREFIX):
        return _write(decoded[ref.sha256], folder, ref.budget)
    if not allow_urls:
        raise ApiError(
            400, "image URLs are not fetched by this server (send a data: URL, or start it with "
            "--allow-image-urls)", param="messages",
        )  # fmt: skip
    return _write(_fetch(ref.path), folder, ref.budget)


def _write(data: bytes, folder: Path, budget: int | None) -> ImageRef:
    sha = hashlib.sha256(data).hexdigest()
    path = folder / sha
    if not path.is_file():
        tmp = folder / f".{sha}.tmp"
        tmp.write_bytes(data)
        tmp.replace(path)  # whole or not at all
    return ImageRef(str(path), sha256=sha, budget=budget)


def _fetch(url: str) -> bytes:
    """At most `MAX_IMAGE_BYTES` from ``url`` within `FETCH_TIMEOUT_S` per read; ApiError
    400 when it cannot be had."""
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as reply:
            data: bytes = reply.read(MAX_IMAGE_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise ApiError(400, f"the image at {url[:200]} could not be fetched: {exc}") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise ApiError(
            413, f"the image at {url[:200]} is larger than {MAX_IMAGE_BYTES // 2**20} MB"
        )
    return data
