"""Attached images decode to upright RGB, or are refused with one line naming why."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.errors import InvalidImageError
from engine.vision.image import load_rgb


def _png(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def _with_header_size(png: bytes, w: int, h: int) -> bytes:
    """``png`` whose IHDR claims ``w`` x ``h`` (CRC fixed): a bomb, a banner, a 0 x 0."""
    ihdr = png[12:16] + struct.pack(">II", w, h) + png[24:29]
    return png[:12] + ihdr + struct.pack(">I", zlib.crc32(ihdr)) + png[33:]


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    img = Image.new("RGB", (40, 20), (255, 0, 0))
    img.paste((0, 0, 255), (0, 0, 10, 20))  # blue on the left
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: "rotate 90 clockwise to view"
    path = tmp_path / "photo.jpg"
    img.save(path, "JPEG", exif=exif.tobytes(), quality=95)
    rgb = load_rgb(path)
    assert rgb.shape == (40, 20, 3)  # upright: taller than wide
    assert rgb[2, 10, 2] > 200 and rgb[-3, 10, 0] > 200  # the blue side is now on top


def test_cmyk_jpeg_palette_alpha_and_grey_become_rgb() -> None:
    cmyk = io.BytesIO()
    Image.new("CMYK", (8, 8), (0, 255, 255, 0)).save(cmyk, "JPEG")
    assert load_rgb(cmyk.getvalue())[4, 4, 0] > 200  # red
    rgba = Image.new("RGBA", (8, 8), (0, 0, 0, 0))  # transparent: white, as a viewer shows it
    assert load_rgb(_png(rgba))[0, 0].tolist() == [255, 255, 255]
    assert load_rgb(_png(Image.new("L", (8, 8), 7)))[0, 0].tolist() == [7, 7, 7]


def test_an_animated_gif_gives_its_first_frame() -> None:
    frames = [Image.new("RGB", (8, 8), c) for c in ((255, 0, 0), (0, 255, 0))]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    assert load_rgb(out.getvalue())[0, 0].tolist()[0] > 200


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (_png(Image.new("RGB", (64, 64), 9))[:-40], "truncated or corrupt"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 60, "truncated or corrupt|not an image"),
        (b"not an image at all", "not an image Hearth can read"),
        (
            _with_header_size(_png(Image.new("RGB", (4, 4))), 20_000, 20_000),
            "400,000,000 pixels.*decompression bomb",
        ),
        (_with_header_size(_png(Image.new("RGB", (4, 4))), 12_000, 12_000), "12,000 x 12,000"),
        (_with_header_size(_png(Image.new("RGB", (4, 4))), 30_000, 20), "30,000 x 20 pixels"),
        (_with_header_size(_png(Image.new("RGB", (4, 4))), 0, 0), "not an image|too small"),
        (_png(Image.new("RGB", (1, 1))), "1 x 1 pixels: too small"),
    ],
    ids=["truncated", "corrupt", "text", "20000x20000", "12000x12000", "banner", "0x0", "1x1"],
)
def test_bad_images_are_refused_in_one_line(data: bytes, why: str) -> None:
    with pytest.raises(InvalidImageError, match=why) as e:
        load_rgb(data, "shot.png")
    assert "\n" not in str(e.value) and str(e.value).startswith("shot.png")


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidImageError, match=r"gone\.png cannot be read"):
        load_rgb(tmp_path / "gone.png")


def test_pixels_are_kept(tmp_path: Path) -> None:
    rgb = np.random.default_rng(0).integers(0, 256, (30, 50, 3), dtype=np.uint8)
    path = tmp_path / "x.png"
    Image.fromarray(rgb).save(path)
    assert np.array_equal(load_rgb(path), rgb)
