"""Regenerate the app icon files from assets/icons/hearth.svg.

Writes ``assets/icons/hearth-<N>.png`` for every size in ``PNG_SIZES``, ``hearth.ico`` (Windows:
PNG-compressed entries, readable since Windows Vista) and ``hearth.icns`` (macOS: PNG entries,
readable since OS X 10.7). Both containers are written by hand because they are simple and this
keeps Pillow out of the dependencies. The outputs are committed: they are assets, not build
products; run this again only after editing the SVG.

Usage: python packaging/make_icons.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ICON_DIR = REPO / "assets" / "icons"
SVG = ICON_DIR / "hearth.svg"

PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)  # 256 is the largest an ICO entry can describe
# ICNS element types holding PNG data, and the pixel size each one must contain.
ICNS_TYPES = (
    (b"icp4", 16),
    (b"icp5", 32),
    (b"icp6", 64),
    (b"ic07", 128),
    (b"ic08", 256),
    (b"ic09", 512),
    (b"ic10", 1024),  # 512@2x
    (b"ic11", 32),  # 16@2x
    (b"ic12", 64),  # 32@2x
    (b"ic13", 256),  # 128@2x
    (b"ic14", 512),  # 256@2x
)


def render_png(svg: Path, size: int) -> bytes:
    """Rasterize the SVG at ``size`` x ``size`` pixels with Qt's SVG renderer; PNG bytes."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data.data())


def build_ico(pngs: dict[int, bytes]) -> bytes:
    """An ICO container: ICONDIR header, one 16-byte entry per image, then the PNG bytes."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))  # reserved, type 1 = icon, count
    offset = len(header) + 16 * len(sizes)
    entries, blobs = [], []
    for size in sizes:
        blob = pngs[size]
        dim = 0 if size >= 256 else size  # 0 means 256 in the one-byte fields
        entries.append(struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(blob), offset))
        blobs.append(blob)
        offset += len(blob)
    return header + b"".join(entries) + b"".join(blobs)


def build_icns(elements: list[tuple[bytes, bytes]]) -> bytes:
    """An ICNS container: 'icns' + big-endian total length, then (type, length, data) items."""
    body = b"".join(kind + struct.pack(">I", 8 + len(data)) + data for kind, data in elements)
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ICON_DIR, help="output folder")
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 (keeps Qt alive)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cache: dict[int, bytes] = {}

    def png(size: int) -> bytes:
        if size not in cache:
            cache[size] = render_png(SVG, size)
        return cache[size]

    for size in PNG_SIZES:
        (out / f"hearth-{size}.png").write_bytes(png(size))
    (out / "hearth.ico").write_bytes(build_ico({s: png(s) for s in ICO_SIZES}))
    (out / "hearth.icns").write_bytes(build_icns([(k, png(s)) for k, s in ICNS_TYPES]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
