"""Pixels for the formulas the Markdown renderer typeset: ``hearth-math:`` URL -> QImage.

Owns rasterising a formula's SVG (``app.markdown.math.formula_svg``, cached there) with
QSvgRenderer at the screen's device pixel ratio, and a small cache of the images. Does not own
finding or typesetting formulas, or any other resource: documents still load nothing else.
"""

from __future__ import annotations

import functools

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from app.markdown.math import formula_svg, parse_math_url


@functools.lru_cache(maxsize=512)
def math_image(url: str, device_pixel_ratio: float = 1.0) -> QImage | None:
    """The formula image for ``url`` (a ``math_url``), or None if it is not one.

    Drawn at ``device_pixel_ratio`` times its size so it stays sharp on a HiDPI screen; the
    document shows it at the width and height the HTML gives. GUI thread (QImage painting
    works elsewhere too, but the cache is shared with the documents).
    """
    parsed = parse_math_url(url)
    typeset = formula_svg(*parsed) if parsed else None
    if typeset is None:
        return None
    scale = max(1.0, device_pixel_ratio)
    image = QImage(
        max(1, round(typeset.width * scale)),
        max(1, round(typeset.height * scale)),
        QImage.Format.Format_ARGB32_Premultiplied,
    )
    image.fill(Qt.GlobalColor.transparent)
    renderer = QSvgRenderer(QByteArray(typeset.svg.encode()))
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
    finally:
        painter.end()
    image.setDevicePixelRatio(scale)
    return image
