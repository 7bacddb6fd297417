"""A picture attached to a user turn: checked, hashed and copied into the data folder.

Owns `attach_image` — Pillow reads the header (size limits before any pixel is decoded, the
decompression-bomb limit), decodes the first frame (a truncated file fails here, not in the
engine), and the bytes are copied once under ``<data>/images/<sha256>.<ext>`` — and the record
the composer, the store and the views share (`ImageAttachment`). Every failure is an
`ImageError` in one line naming the file. The work is slow for a large photo (a 100-megapixel
JPEG decodes for seconds), so the composer runs it on a worker thread (`app.views.chat.
image_chips`) and may give up on it: ``cancelled`` is asked between the steps, and a cancelled
attach raises `AttachCancelled` before anything is written. Does not own encoding pictures for
a model (`engine.vision`), showing them (`app.views.chat`) or storing messages.

The record itself lives with the store's records (`app.store.records.ImageAttachment`), so
the store, the rows and the files can hold it; it is re-exported here.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from app.store.images import keep_image_bytes
from app.store.records import ImageAttachment
from app.system import paths
from engine.types import ImageRef

__all__ = ["AttachCancelled", "ImageAttachment", "ImageError", "attach_image", "image_ref"]

try:  # HEIC (phone photos) where the optional pillow-heif plugin is installed; not a dependency
    from pillow_heif import register_heif_opener  # type: ignore[import-not-found]
except ImportError:
    pass
else:  # registers with Pillow for the process: the engine's encoder reads the copy too
    register_heif_opener()

MAX_PIXELS = 100_000_000  # as `engine.vision.image`: a 108 MP phone photo reads, a bomb not
MAX_SIDE = 16_384
MIN_SIDE = 2
_SUFFIX = {"PNG": ".png", "JPEG": ".jpg", "WEBP": ".webp", "GIF": ".gif", "HEIF": ".heic"}


class ImageError(ValueError):
    """A picture that cannot be attached, said in one line (a ValueError: bad input)."""


class AttachCancelled(Exception):
    """The attach was given up (its chip removed) before its copy was written."""


def _never() -> bool:
    return False


def attach_image(
    source: Path | bytes,
    name: str = "",
    images_folder: Path | None = None,
    cancelled: Callable[[], bool] = _never,
) -> ImageAttachment:
    """Check ``source`` (a file, or an image's bytes named ``name``) and keep a copy.

    Any thread. ``cancelled`` is asked after the read and after the decode: True raises
    `AttachCancelled` and nothing is kept."""
    label = name or (source.name if isinstance(source, Path) else "the pasted image")
    try:
        data = source if isinstance(source, bytes) else source.read_bytes()
    except OSError as exc:
        raise ImageError(f"{label} cannot be read: {exc.strerror or exc}") from None
    if cancelled():
        raise AttachCancelled(label)
    width, height, kind = _check(label, data)
    if cancelled():
        raise AttachCancelled(label)
    folder = images_folder or paths.data_dir() / "images"
    try:
        target, sha = keep_image_bytes(data, _SUFFIX.get(kind, ".img"), folder)
    except OSError as exc:
        raise ImageError(f"{label} cannot be kept in {folder}: {exc.strerror or exc}") from None
    return ImageAttachment(str(target), sha, label, width, height)


def image_ref(image: ImageAttachment) -> ImageRef:
    """What the engine is given for ``image``: its file, hash (the embeddings cache's key) and
    budget."""
    return image.to_ref()


def _check(label: str, data: bytes) -> tuple[int, int, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                if width < MIN_SIDE or height < MIN_SIDE:
                    raise ImageError(f"{label} is {width} x {height} pixels: too small")
                if width > MAX_SIDE or height > MAX_SIDE or width * height > MAX_PIXELS:
                    raise ImageError(
                        f"{label} is {width:,} x {height:,} pixels: larger than Hearth reads"
                        f" (at most {MAX_SIDE:,} a side and {MAX_PIXELS // 1_000_000} megapixels)"
                    )
                image.seek(0)  # an animated picture: its first frame
                image.load()
                return width, height, str(image.format or "")
        except ImageError:
            raise
        except Image.DecompressionBombError as exc:  # Pillow refuses ~179 MP as it opens
            found = re.search(r"\((\d+) pixels\)", str(exc))
            size = f" to {int(found.group(1)):,} pixels" if found else ""
            raise ImageError(
                f"{label} is refused: it decompresses{size}, far more than a picture"
                " (a decompression bomb)"
            ) from None
        except UnidentifiedImageError:
            raise ImageError(
                f"{label} is not an image Hearth can read (PNG, JPEG, WebP, GIF; HEIC needs "
                "the pillow-heif plugin)"
            ) from None
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            raise ImageError(f"{label} is truncated or corrupt: {exc}") from None
