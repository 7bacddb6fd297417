"""One image in, its image-token rows out: the vision room's entry point.

Owns `ImageEncoder`: an opened mmproj, the embeddings cache, and `encode(image, budget)`, which
hashes the file's bytes, answers from the cache when it can (reporting the hit), else decodes
(`engine.vision.image`), pre-processes (`engine.vision.preprocess`) and encodes (the blocks in
ONNX Runtime, `engine.vision.ort_tower`, its session built at the first encode; the numpy
`engine.vision.encoders` where ONNX Runtime cannot take the file), and returns
`ImageEmbeddings` with the token count, the patch grid and the seconds the encode took.
Also `vision_cache_dir`, where encoded images are kept.

Does not own putting the rows into the language model (the prompt's image markers, Gemma's
bidirectional image attention, Qwen's M-RoPE positions): that is the generation loop's.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.cache_folders import cache_root, gguf_cache_key
from engine.errors import InvalidImageError
from engine.vision.cache import EmbeddingCache, image_key
from engine.vision.encoders import encode
from engine.vision.image import load_rgb
from engine.vision.mmproj import Mmproj, open_mmproj
from engine.vision.ort_tower import OrtTower, encode_fast, tower_for
from engine.vision.preprocess import Prepared, n_tokens, prepare, target_size, token_limits

MAX_FILE_BYTES = 256 * 2**20  # a picture file larger than this is not read whole


def vision_cache_dir() -> Path:
    """<cache folder>/vision: encoded images, LRU-trimmed."""
    return cache_root() / "vision"


@dataclass(frozen=True)
class ImageEmbeddings:
    """One encoded image."""

    rows: np.ndarray  # (n_tokens, width) float32, read-only
    n_tokens: int
    seconds: float  # the encode (0 on a cache hit)
    cache_hit: str | None  # None, "memory" or "disk"


class ImageEncoder:
    """An mmproj ready to encode images, with a cache in front of it."""

    def __init__(self, mmproj: Path | str, cache: EmbeddingCache | None = None) -> None:
        self.mmproj: Mmproj = open_mmproj(mmproj)
        self.identity = gguf_cache_key(self.mmproj.path)
        self.cache = cache if cache is not None else EmbeddingCache(None)
        self._tower: OrtTower | bool | None = False  # False: not built yet; None: numpy

    def encode(self, image: Path | str | bytes, budget: int | None = None) -> ImageEmbeddings:
        """``image`` (a path or the file's bytes) as rows for the language model."""
        token_limits(self.mmproj.projector, budget)  # a bad budget fails before any work
        data, name = _read(image)
        key = image_key(hashlib.sha256(data).hexdigest(), self.identity, budget)
        hit = self.cache.get(key)
        if hit is not None:
            return ImageEmbeddings(hit.rows, hit.rows.shape[0], 0.0, hit.where)
        start = time.perf_counter()
        prepared = prepare(load_rgb(data, name), self.mmproj.params, self.mmproj.projector, budget)
        rows = self._encode(prepared)
        seconds = time.perf_counter() - start
        self.cache.put(key, rows)
        return ImageEmbeddings(rows, prepared.n_tokens, seconds, None)

    def _encode(self, prepared: Prepared) -> np.ndarray:
        if self._tower is False:
            self._tower = tower_for(self.mmproj)
        if isinstance(self._tower, OrtTower):
            return encode_fast(self._tower, prepared)
        return encode(self.mmproj, prepared)

    def count_tokens(self, width: int, height: int, budget: int | None = None) -> int:
        """How many tokens an image of this size costs (for the chip's "≈ 280 tokens")."""
        p = self.mmproj.params
        rows, cols = target_size(height, width, p, self.mmproj.projector, budget)
        return n_tokens(p, (rows // p.patch, cols // p.patch))


def _read(image: Path | str | bytes) -> tuple[bytes, str]:
    if isinstance(image, bytes):
        return image, "the image"
    path = Path(image)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InvalidImageError(f"{path.name} is {size / 2**20:.0f} MB: too large a picture")
        return path.read_bytes(), path.name
    except OSError as e:
        raise InvalidImageError(f"{path.name} cannot be read: {e.strerror or e}") from None
