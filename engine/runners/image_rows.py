"""Image embeddings in a runner's token sequence: ids for image tokens, their rows, positions.

An image joins a prompt as a run of *image ids*: negative ids derived from the image's
sha256 (and, in the caller's key, the projector and budget), one per image token, so a prompt
holding an image is still a list of ints. Prefix reuse (`engine.kv_cache`) and the saved
caches (`engine.runners.kv_store`) compare and store them like any other id: the same image in
the same place matches, another image never does. A runner that takes images keeps an
`ImageRows`: what `ImageEmbedding` each image id stands for, so any run (a prompt, a replay
after ``crop``) can read the image's rows instead of token-embedding rows.

Also owns what an image changes in a run besides its input rows:
- M-RoPE (Qwen3.5, Qwen3-VL: `MRope`): an image token has a temporal, a row and a column
  position (t = p0, h = p0 + y, w = p0 + x), text after the image continues at
  p0 + max(rows, cols), as libmtmd places them; each rotary frequency takes one of them by
  llama.cpp's sections (interleaved for ``IMROPE``). The runner writes the rotary table's rows
  for a run's indices (GroupQueryAttention rotates by index).
- Gemma's both-ways image block (`block_inputs`, the inputs of `engine.fastpath.image_block`).
Does not own encoding images (`engine.vision`), nor where ids go in a prompt (`engine.text`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.gguf.reader import open_gguf

INDEX_BITS = 20  # an image of up to 2**20 tokens; the rest of an id is its image's key


def image_key(sha256: str, salt: str = "") -> int:
    """A 40-bit key for an image (its sha256, and ``salt``: projector and budget)."""
    digest = hashlib.sha256(f"{sha256}:{salt}".encode()).hexdigest() if salt else sha256
    return int(digest[:10], 16)


def image_ids(key: int, n: int) -> list[int]:
    """The ``n`` ids of image ``key``'s tokens (negative; never a vocabulary id)."""
    base = key << INDEX_BITS
    return [-(base + k + 1) for k in range(n)]


def split_id(token: int) -> tuple[int, int]:
    """(image key, token index) of an image id."""
    raw = -token - 1
    return raw >> INDEX_BITS, raw & ((1 << INDEX_BITS) - 1)


@dataclass(frozen=True)
class ImageEmbedding:
    """One encoded image: its key, rows (n_tokens, hidden) float32 and token grid (rows, cols)."""

    key: int
    rows: np.ndarray
    grid: tuple[int, int]

    def __post_init__(self) -> None:
        if self.rows.ndim != 2 or self.grid[0] * self.grid[1] != len(self.rows):
            raise ValueError(
                f"an image's {self.rows.shape} rows do not fill its {self.grid} token grid"
            )

    @property
    def ids(self) -> list[int]:
        return image_ids(self.key, len(self.rows))

    @property
    def n_pos(self) -> int:
        """Positions the image takes under M-RoPE (libmtmd: the longer side of its grid)."""
        return max(self.grid)


class ImageRows:
    """The images a runner may meet in its ids, by key (see the module docstring)."""

    def __init__(self) -> None:
        self._images: dict[int, ImageEmbedding] = {}

    def add(self, image: ImageEmbedding) -> None:
        self._images[image.key] = image

    def __len__(self) -> int:
        return len(self._images)

    def image(self, token: int) -> ImageEmbedding:
        key, _ = split_id(token)
        if key not in self._images:
            raise ValueError("an image token of an image this runner was not given")
        return self._images[key]

    def fill(self, ids: Sequence[int], embeds: np.ndarray) -> None:
        """Put the image rows of ``ids``'s image ids into ``embeds`` (len(ids), hidden)."""
        width = embeds.shape[1]  # Qwen3-VL's rows carry deepstack rows after it (fill_extra)
        for j, token in enumerate(ids):
            if token < 0:
                embeds[j] = self.image(token).rows[split_id(token)[1], :width]

    def fill_extra(self, ids: Sequence[int], out: np.ndarray, hidden: int) -> None:
        """Qwen3-VL: the deepstack rows of ``ids``'s image ids (each row's values past
        ``hidden``) into ``out`` (len(ids), n_deepstack x hidden); text rows stay as they are."""
        for j, token in enumerate(ids):
            if token < 0:
                out[j] = self.image(token).rows[split_id(token)[1], hidden:]

    def position_shift(self, ids: Sequence[int]) -> int:
        """M-RoPE: the position after ``ids`` minus their count (each image's n_pos - n)."""
        shift = 0
        for token in ids:  # counted at an image's last token: a cut image shifts nothing yet
            if token < 0:
                image = self.image(token)
                if split_id(token)[1] == len(image.rows) - 1:
                    shift += image.n_pos - len(image.rows)
        return shift


def segments(ids: Sequence[int]) -> list[tuple[int, int, bool]]:
    """(start, end, is_image) runs of ``ids``: text, and each image's ids on their own."""
    out: list[tuple[int, int, bool]] = []
    start = 0
    for j in range(1, len(ids) + 1):
        if j == len(ids):
            out.append((start, j, ids[start] < 0))
            break
        here, before = ids[j], ids[j - 1]
        new_image = here < 0 and split_id(here)[1] == 0
        if (here < 0) != (before < 0) or new_image:
            out.append((start, j, before < 0))
            start = j
    return out


MROPE_ARCHS = {"qwen35": True, "qwen35moe": True, "qwen3vl": True, "qwen2vl": False}  # IMROPE?


def mrope_for(hp: Any, source: Path) -> MRope | None:
    """The M-RoPE of ``hp``'s architecture from the GGUF's ``rope.dimension_sections`` (None
    for an architecture without it, or a file without sections)."""
    interleaved = MROPE_ARCHS.get(hp.spec.name)
    if interleaved is None:
        return None
    reader = open_gguf(source, string_arrays=False)
    try:
        sections = reader.get(f"{reader.architecture}.rope.dimension_sections")
    finally:
        reader.close()
    if sections is None or not sum(int(x) for x in sections):
        return None
    return MRope([int(x) for x in sections], hp.rope_dim // 2, interleaved)


class MRope:
    """Multi-section rotary positions over a runner's rotary table (see the module docstring).

    ``sections`` are llama.cpp's ``rope.dimension_sections`` (t, h, w, e frequency pairs);
    ``interleaved``: IMROPE (Qwen3-VL, Qwen3.5), where pair k takes t, h, w by k mod 3."""

    def __init__(self, sections: Sequence[int], half: int, interleaved: bool) -> None:
        s = [int(x) for x in [*sections, 0, 0, 0, 0][:4]]
        total = max(1, sum(s))
        which = np.zeros(half, dtype=np.int64)  # 0 t, 1 h, 2 w, 3 e
        for k in range(half):
            sector = k % total
            if interleaved:
                if sector % 3 == 1 and sector < 3 * s[1]:
                    which[k] = 1
                elif sector % 3 == 2 and sector < 3 * s[2]:
                    which[k] = 2
                elif sector % 3 == 0 and sector < 3 * s[0]:
                    which[k] = 0
                else:
                    which[k] = 3
            elif sector >= s[0] + s[1] + s[2]:
                which[k] = 3
            elif sector >= s[0] + s[1]:
                which[k] = 2
            elif sector >= s[0]:
                which[k] = 1
        self.which = which

    def positions(
        self, rows: ImageRows, ids: Sequence[int], first_pos: int
    ) -> np.ndarray:  # (T, 4)
        """The (t, h, w, e) positions of ``ids`` run after position ``first_pos``."""
        out = np.zeros((len(ids), 4), dtype=np.int64)
        pos = first_pos
        j = 0
        while j < len(ids):
            token = ids[j]
            if token >= 0:
                out[j, :3] = pos
                pos, j = pos + 1, j + 1
                continue
            image = rows.image(token)
            _, index = split_id(token)
            p0 = pos - index  # the image's first token's position (a run may start inside)
            n = min(len(image.rows) - index, len(ids) - j)
            k = np.arange(index, index + n)
            out[j : j + n, 0] = p0
            out[j : j + n, 1] = p0 + k // image.grid[1]
            out[j : j + n, 2] = p0 + k % image.grid[1]
            j += n
            pos = p0 + image.n_pos if index + n == len(image.rows) else pos + n
        return out

    def write(self, live: np.ndarray, base: np.ndarray, start: int, positions: np.ndarray) -> None:
        """Rows ``start ..`` of the bound table ``live`` from ``base`` (the plain table)."""
        columns = np.arange(base.shape[1])
        chosen = positions[:, self.which]  # (T, half): each pair's position
        live[start : start + len(positions)] = base[chosen, columns[None, :]]


def block_inputs(start: int, n: int, window: int) -> dict[str, np.ndarray]:
    """`engine.fastpath.image_block`'s inputs for an image of ``n`` tokens at index ``start``
    (``window``: the sliding layers' window, 0 for none). The image run attends with the
    causal mask off; on sliding layers the bias hides keys ``window`` or more positions
    before a query."""
    bias = np.zeros((1, 1, n, start + n), dtype=np.float32)
    if window:
        query = start + np.arange(n)[:, None]  # true positions; an image key after its
        key = np.arange(start + n)[None, :]  # query is never out of the window
        bias[0, 0][(query - key) >= window] = -np.inf
    return {"image_block": np.array(True), "image_bias_local": bias}


def text_block_inputs() -> dict[str, np.ndarray]:
    """The same inputs for a text run: ``image_block`` False and a one-element dummy bias."""
    return {
        "image_block": np.array(False),
        "image_bias_local": np.zeros((1, 1, 1, 1), dtype=np.float32),
    }
