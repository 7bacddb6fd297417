"""Bit twiddling over GGUF quant blocks, shared by the repacking recipes.

Owns small vectorised helpers: little-endian f16 fields as exact float32, GGUF nibble order to
ONNX Runtime's pair order, 4-bit planes packed into ORT bytes, and eight-bytes-at-a-time
shifts and masks over uint64 words. Knows no quant type (`engine.gguf.repack` and
`engine.gguf.repack_iq` hold the recipes).
"""

from __future__ import annotations

import numpy as np

V16 = np.dtype("V16")  # 16 bytes moved as one element


def f16(blocks: np.ndarray, at: int) -> np.ndarray:
    """The little-endian f16 field at byte `at` of every block, as float32 (exact)."""
    return blocks[..., at : at + 2].copy().view(np.float16)[..., 0].astype(np.float32)


def nibbles_to_ort(qs: np.ndarray) -> np.ndarray:
    """GGUF nibbles (byte j: element j low, j+G high) → ORT pairs (byte j: 2j low, 2j+1 high)."""
    even, odd = qs[..., 0::2], qs[..., 1::2]  # (..., G/2)
    half = qs.shape[-1] // 2
    out = np.empty_like(qs)
    out[..., :half] = (even & 0x0F) | (odd << 4)  # elements 0..G-1
    out[..., half:] = (even >> 4) | (odd & 0xF0)  # elements G..2G-1
    return out


def pack_planes(planes: list[np.ndarray]) -> np.ndarray:
    """Per plane, (L, 4) words of 4-bit codes (one per byte) → (L, planes, 16) ORT bytes."""
    out = np.empty((planes[0].shape[0], len(planes), 16), dtype=np.uint8)
    carrier = out.view(V16)  # (L, planes, 1): moves 16 bytes as one element
    for i, plane in enumerate(planes):
        carrier[:, i, 0] = pairs(plane).view(V16)[:, 0]
    return out


def shifted(x: np.ndarray, shifts: list[int]) -> np.ndarray:
    """x (..., L) → (..., len(shifts), L): x >> s for each shift s."""
    return x[..., None, :] >> np.array(shifts, dtype=np.uint8)[:, None]


def words(x: np.ndarray) -> np.ndarray:
    """(..., 8m) bytes → (..., m) uint64 words, to work on eight bytes per operation."""
    return np.ascontiguousarray(x).view(np.uint64)


def as_bytes(w: np.ndarray) -> np.ndarray:
    """(..., m) uint64 words → (..., 8m) bytes."""
    return w.view(np.uint8)


def u64(*shifts: int) -> np.ndarray:
    """Shift amounts as a uint64 column, (len(shifts), 1), to broadcast over words."""
    return np.array(shifts, dtype=np.uint64)[:, None]


def byte_splat(value: int) -> np.uint64:
    """`value` repeated in every byte of a word."""
    return np.uint64(value * 0x0101010101010101)


def pairs(w: np.ndarray) -> np.ndarray:
    """Words of 4-bit codes, one per byte → bytes holding code 2j low and 2j+1 high."""
    lanes = (w | (w >> np.uint64(4))) & np.uint64(0x00FF00FF00FF00FF)
    out: np.ndarray = lanes.view(np.uint16).astype(np.uint8)
    return out


def split_nibbles(qs: np.ndarray) -> np.ndarray:
    """(..., G) bytes → (..., 2G): the low nibbles, then the high nibbles."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)
