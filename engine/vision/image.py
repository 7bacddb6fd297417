"""Decoding an attached image into RGB pixels, or refusing it in one line.

Owns `load_rgb`: Pillow opens the file (or bytes) under its decompression-bomb limit, checks the
declared size before decoding (a 20,000 x 20,000 PNG is refused from its header, not after
1.2 GB of pixels), applies the EXIF orientation (a phone photo taken upright is upright), takes
an animated image's first frame, converts CMYK, palette, grey and alpha images to RGB (alpha
over white, as a viewer shows it), and returns (H, W, 3) uint8. HEIC opens only where a Pillow
plugin for it is installed. Every failure is an `InvalidImageError` naming the file and why.

Does not own resizing or normalising (`engine.vision.preprocess`) nor hashing for the cache.
"""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path

import numpy as np

from engine.errors import InvalidImageError

# Checked from the header, before any pixel is decoded. Pillow's own bomb limit (a warning past
# ~89.5 MP, an error past twice that) would refuse a 108 MP phone photo; this one reads it.
MAX_PIXELS = 100_000_000
MAX_SIDE = 16_384  # a side longer than this is a banner or a bomb, not a picture to read
MIN_SIDE = 2  # libmtmd's bilinear resize needs two pixels a side


def load_rgb(source: Path | str | bytes, name: str | None = None) -> np.ndarray:
    """The image at ``source`` (a path or the file's bytes) as (H, W, 3) uint8 RGB."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    label = name or (Path(source).name if not isinstance(source, bytes) else "the image")
    try:
        fp = io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb")  # noqa: SIM115
    except OSError as e:
        raise InvalidImageError(f"{label} cannot be read: {e.strerror or e}") from None
    with fp, warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            img = Image.open(fp)
            _check_size(label, img.size)
            if getattr(img, "is_animated", False):
                img.seek(0)  # an animated GIF/WebP/PNG: its first frame
            img.load()
            return _to_rgb(ImageOps.exif_transpose(img) or img)
        except InvalidImageError:
            raise
        except Image.DecompressionBombError as e:  # Pillow refuses > ~179 MP as it opens
            found = re.search(r"\((\d+) pixels\)", str(e))
            size = f" to {int(found.group(1)):,} pixels" if found else ""
            raise InvalidImageError(
                f"{label} is refused: it decompresses{size}, far more than a picture "
                "(a decompression bomb)"
            ) from None
        except UnidentifiedImageError:
            raise InvalidImageError(
                f"{label} is not an image Hearth can read (PNG, JPEG, WebP, GIF, BMP; HEIC "
                "needs the pillow-heif plugin)"
            ) from None
        except (OSError, SyntaxError, ValueError, EOFError) as e:
            raise InvalidImageError(f"{label} is truncated or corrupt: {e}") from None


def _check_size(label: str, size: tuple[int, int]) -> None:
    w, h = size
    if w < MIN_SIDE or h < MIN_SIDE:
        raise InvalidImageError(f"{label} is {w} x {h} pixels: too small to be an image")
    if w > MAX_SIDE or h > MAX_SIDE or w * h > MAX_PIXELS:
        raise InvalidImageError(
            f"{label} is {w:,} x {h:,} pixels: larger than Hearth reads "
            f"(at most {MAX_SIDE:,} a side and {MAX_PIXELS // 1_000_000} megapixels)"
        )


def _to_rgb(img: object) -> np.ndarray:
    from PIL import Image

    assert isinstance(img, Image.Image)
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(white, rgba)
    # CMYK JPEGs, 16-bit greys, palettes: Pillow's own conversion to RGB
    return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()
