"""Pixels of an attached image for the chat's widgets: a thumbnail or the whole picture.

Owns reading an image file into a `QImage` turned upright by its EXIF orientation (a phone
photo is stored sideways), decoded straight at a thumbnail's size where the format allows
(`QImageReader.setScaledSize`: a 12-megapixel JPEG is never held whole for a 64-pixel chip),
with Pillow as the reader where Qt has no plugin for the format (HEIC), and a small cache of
thumbnails (the chat view repaints them often). Does not own checking or storing images
(`app.chat.images`) nor where they are shown.
"""

from __future__ import annotations

import functools

from PIL import Image, ImageOps
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QImage, QImageReader


def read_image(path: str, max_side: int = 0) -> QImage:
    """The image at ``path`` upright, scaled down to fit ``max_side`` (0: whole); a null
    QImage when it cannot be read (a file deleted since, a format nobody here decodes)."""
    reader = QImageReader(path)
    reader.setAutoTransform(True)  # EXIF orientation
    size = reader.size()
    if max_side and size.isValid() and max(size.width(), size.height()) > max_side:
        reader.setScaledSize(size.scaled(max_side, max_side, Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    if image.isNull():
        image = _read_with_pillow(path, max_side)
    if max_side and not image.isNull() and max(image.width(), image.height()) > max_side:
        # The reader turned it after scaling (a sideways photo): fit the upright picture.
        image = image.scaled(
            QSize(max_side, max_side),
            Qt.AspectRatioMode.KeepAspectRatio,
            Qt.TransformationMode.SmoothTransformation,
        )
    return image


@functools.lru_cache(maxsize=256)
def thumbnail(path: str, max_side: int) -> QImage:
    """`read_image` for thumbnails, cached by path and size (the files are stored by hash
    and never change under the same path)."""
    return read_image(path, max_side)


def _read_with_pillow(path: str, max_side: int) -> QImage:
    try:
        with Image.open(path) as opened:
            picture = ImageOps.exif_transpose(opened)
            if max_side:
                picture.thumbnail((max_side, max_side))
            rgba = picture.convert("RGBA")
    except Exception:  # unreadable here: the caller shows a placeholder, never a traceback
        return QImage()
    data = rgba.tobytes("raw", "RGBA")
    image = QImage(data, rgba.width, rgba.height, 4 * rgba.width, QImage.Format.Format_RGBA8888)
    return image.copy()  # own the pixels: ``data`` is freed when this returns


def fitted(width: int, height: int, box: int) -> tuple[int, int]:
    """``width`` × ``height`` scaled to fit a ``box``-pixel square (never enlarged); a size
    that is unknown (0) takes the whole square."""
    if width <= 0 or height <= 0:
        return box, box
    scale = min(1.0, box / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))
