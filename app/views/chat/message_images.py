"""A user message's pictures in the transcript: thumbnails in its body, a click opens one large.

Owns the HTML of the thumbnails (each an ``<img>`` inside a link, both ``hearth-image:N``, N the
picture's place in the message), the pixels a message's document loads for them (only the
message's own pictures, so no other text can make a document read a file), and the click.
Does not own the file (`app.chat.images`), reading pixels (`app.views.chat.image_pixels`) or
the large view (`app.views.chat.image_viewer`).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import QUrl
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QWidget

from app.chat.images import ImageAttachment
from app.listmodels.messages import MessageItem
from app.views.chat.image_pixels import fitted, thumbnail
from app.views.chat.image_viewer import show_image

IMAGE_SCHEME = "hearth-image"
THUMB_SIDE = 160  # px: a thumbnail's longer side in the transcript


def images_of(item: MessageItem) -> tuple[ImageAttachment, ...]:
    return item.images


def images_html(item: MessageItem) -> str:
    """The thumbnails of ``item``'s pictures as one paragraph ("" when it has none)."""
    cells = []
    for n, image in enumerate(images_of(item)):
        width, height = fitted(image.width, image.height, THUMB_SIDE)
        title = html.escape(f"{image.name} · {image.width} × {image.height}", quote=True)
        url = f"{IMAGE_SCHEME}:{n}"
        cells.append(
            f'<a href="{url}"><img src="{url}" width="{width}" height="{height}"'
            f' title="{title}"></a>'
        )
    return f"<p>{'&nbsp;&nbsp;'.join(cells)}</p>" if cells else ""


def image_resource(url: QUrl, images: Sequence[ImageAttachment], dpr: float) -> QImage | None:
    """The thumbnail a ``hearth-image:N`` URL names among ``images``; None for any other URL.
    Drawn at the screen's pixel ratio; a picture that cannot be read is a grey square."""
    if url.scheme() != IMAGE_SCHEME or not url.path().isdigit():
        return None
    n = int(url.path())
    if n >= len(images):
        return None
    image = images[n]
    picture = thumbnail(image.path, round(THUMB_SIDE * max(1.0, dpr)))
    if picture.isNull():
        width, height = fitted(image.width, image.height, THUMB_SIDE)
        picture = QImage(width, height, QImage.Format.Format_RGB32)
        picture.fill(QColor("#9a9996"))
        return picture
    width, _height = fitted(
        image.width or picture.width(), image.height or picture.height(), THUMB_SIDE
    )
    picture = QImage(picture)  # a copy: the cached one keeps its ratio
    picture.setDevicePixelRatio(max(1.0, picture.width() / width))  # sharp on a HiDPI screen
    return picture


def handle_click(href: str, item: MessageItem, parent: QWidget | None) -> bool:
    """Open the clicked thumbnail large; False when ``href`` is not one."""
    scheme, _, number = href.partition(":")
    if scheme != IMAGE_SCHEME or not number.isdigit():
        return False
    images = images_of(item)
    if int(number) < len(images):
        image = images[int(number)]
        show_image(image.path, image.name, parent)
    return True
