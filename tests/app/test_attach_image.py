"""`app.chat.images.attach_image` (issue 31 item 9): a picture is kept once by its hash; a bad
one is refused in one line naming it — a truncated file, a header claiming 20,000 x 20,000 or a
decompression bomb (both refused from the header, before any pixel), a 1 x 1 image, bytes that are
no image — while a CMYK JPEG and an animated GIF (its first frame) are pictures like any other.
Real files written with Pillow; a PNG's header is rewritten to lie about its size."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from app.chat.images import ImageError, attach_image


def _png(size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    Image.effect_noise(size, 60).convert("RGB").save(out, "PNG")  # noise: no tiny file
    return out.getvalue()


def _claiming(width: int, height: int) -> bytes:
    """A small PNG whose header (IHDR, CRC fixed) says ``width`` x ``height``."""
    data = bytearray(_png())
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    return bytes(data)


def test_a_picture_is_kept_once_by_its_hash(tmp_path: Path) -> None:
    source = tmp_path / "photo.png"
    source.write_bytes(_png())
    first = attach_image(source, images_folder=tmp_path / "images")
    again = attach_image(source.read_bytes(), name="pasted", images_folder=tmp_path / "images")
    assert (first.width, first.height, first.name, first.budget) == (64, 48, "photo.png", None)
    assert first.path == again.path and Path(first.path).read_bytes() == source.read_bytes()
    assert Path(first.path).name == f"{first.sha256}.png"
    assert len(list((tmp_path / "images").iterdir())) == 1


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_png()[:2000], "truncated or corrupt"),
        (_claiming(12_000, 10_000), "12,000 x 10,000 pixels: larger than Hearth reads"),
        (_claiming(20_000, 20_000), "decompresses to 400,000,000 pixels"),  # Pillow's bomb
        (_png((1, 1)), "1 x 1 pixels: too small"),
        (b"GIF89a this is not really one", "not an image Hearth can read"),
    ],
)
def test_a_bad_picture_is_refused_in_one_line(tmp_path: Path, data: bytes, words: str) -> None:
    source = tmp_path / "menu.png"
    source.write_bytes(data)
    with pytest.raises(ImageError) as refused:
        attach_image(source, images_folder=tmp_path / "images")
    message = str(refused.value)
    assert message.startswith("menu.png ") and words in message and "\n" not in message
    assert not (tmp_path / "images").exists()  # nothing kept


def test_cmyk_jpeg_and_animated_gif_are_pictures(tmp_path: Path) -> None:
    cmyk = tmp_path / "print.jpg"
    Image.new("CMYK", (40, 30), (0, 80, 160, 0)).save(cmyk, "JPEG")
    frames = [Image.new("P", (20, 10), i) for i in range(3)]
    gif = tmp_path / "spin.gif"
    frames[0].save(gif, save_all=True, append_images=frames[1:], duration=50, loop=0)
    folder = tmp_path / "images"
    assert (attach_image(cmyk, images_folder=folder).width, 30) == (40, 30)
    kept = attach_image(gif, images_folder=folder)
    assert (kept.width, kept.height) == (20, 10) and kept.path.endswith(".gif")
