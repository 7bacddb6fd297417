"""Exact `MatMulNBits` unpackers for the codebook GGUF types: IQ2_XXS/XS/S, IQ3_XXS/S, MXFP4.

Each function takes GGUF blocks (R, nb, type_size) uint8 and returns (codes, scales, offsets)
in the layout `engine.gguf.repack` documents (it registers them in its `_RECIPES` table):
``w = scale·(code − zp) + offset`` per MatMulNBits block, equal bit for bit to gguf-py's
`dequantize`. Does not read files, choose block sizes for the table, or build graphs.

Why 8-bit codes: these types store a signed value from a small codebook, not an affine
integer, so no 4-bit code with one scale (and one offset) per block reproduces them:
- IQ2_XXS / IQ2_XS / IQ2_S: ±{8, 25, 43} (gaps 16, 17, 18, 17);
- IQ3_XXS: ±{4, 12, 20, 28, 36, 44, 52, 62} (the last gap is 10, not 8);
- MXFP4: e2m1 values ×2, ±{0, 1, 2, 3, 4, 6, 8, 12}.
All fit in int8, so ``code = value + 128`` with the default zero point 128 and the block
scale (an f16 times a small half-integer, or a power of two) is exact in float32.
IQ3_S is the exception: its values ±{1, 3, …, 15} are exactly the odd numbers 2k + 1 for
k in −8..7, so it runs as 4-bit codes k + 8 with scale 2·db and offset db (like Q2_K's minima).

The codebooks (grids) and the sign table are gguf-py's own (`gguf.quants`), read once.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from engine.gguf.blockbits import f16 as _f16

QK_K = 256
_SIGN_SHIFTS = np.array([0, 7, 14, 21], dtype=np.uint32)  # four 7-bit sign indices per word


def _u32(fields: np.ndarray) -> np.ndarray:
    """(..., 4) little-endian bytes → (...,) uint32."""
    return np.ascontiguousarray(fields).view("<u4")[..., 0]


@cache
def _grid(kind: str) -> np.ndarray:
    """gguf-py's codebook for ``kind`` as magnitudes, (entries, width) uint8."""
    from gguf import quants

    cls = getattr(quants, kind)
    cls.init_grid()
    return np.asarray(cls.grid).reshape(cls.grid_shape).astype(np.uint8)


@cache
def _ksign_bytes() -> np.ndarray:
    """The 128 sign bytes of the 7-bit sign indices (bit 7: the parity), (128,) uint8."""
    from gguf import quants

    return np.frombuffer(quants.IQ2_XXS.ksigns, dtype=np.uint8).copy()


def _signed(magnitudes: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """8-bit codes 128 ± magnitude, minus where the sign bit (0/1, same shape) is set."""
    negate = np.uint8(0) - signs  # 0x00 or 0xFF
    codes: np.ndarray = ((magnitudes ^ negate) + signs) + np.uint8(128)  # two's complement
    return codes


def _patterns(n_bits: int, ksigns: bool) -> np.ndarray:
    """Every sign pattern of ``n_bits`` bits as (2^n_bits, 8) 0/1 bytes (bit j: element j)."""
    keys = np.arange(1 << n_bits, dtype=np.uint8)
    if ksigns:  # a 7-bit index into the 128 even-parity bytes
        keys = _ksign_bytes()[keys]
    return np.unpackbits(keys[:, None], axis=-1, bitorder="little")


@cache
def _codebook(kind: str, n_bits: int, ksigns: bool) -> np.ndarray:
    """Every (grid entry, sign pattern) as its codes, one word each: key = entry + E·pattern.

    One gather of these words replaces a grid lookup, a sign lookup and the sign arithmetic.
    """
    grid = _grid(kind)  # (E, W)
    signs = _patterns(n_bits, ksigns)[:, None, : grid.shape[1]]  # (P, 1, W)
    table = np.ascontiguousarray(_signed(grid[None], signs))  # (P, E, W)
    return table.view(np.uint64 if grid.shape[1] == 8 else np.uint32).reshape(-1)


def _gather(kind: str, n_bits: int, ksigns: bool, keys: np.ndarray) -> np.ndarray:
    """(..., G) codebook keys → (..., G·W) 8-bit codes."""
    words: np.ndarray = _codebook(kind, n_bits, ksigns)[keys]
    return words.view(np.uint8)


@cache
def _iq3s_pairs() -> np.ndarray:
    """IQ3_S (grid entry, 4 sign bits) → its four 4-bit codes k + 8 as two ORT bytes (uint16).

    A value v = 2k + 1 gets code k + 8: |v| = 2h + 1 gives h + 8, and −|v| gives 7 − h.
    """
    half = _grid("IQ3_S")[None] >> 1  # (1, 512, 4)
    negative = _patterns(4, ksigns=False)[:, None, :4]  # (16, 1, 4)
    k = np.where(negative == 1, np.uint8(7) - half, half + np.uint8(8))  # (16, 512, 4)
    pairs = (k[..., 0::2] | (k[..., 1::2] << 4)).astype(np.uint8)  # (16, 512, 2)
    return np.ascontiguousarray(pairs).view(np.uint16).reshape(-1)


def _nibble_scales(packed: np.ndarray) -> np.ndarray:
    """Bytes of two 4-bit sub-block scales → (..., 2·n) float32, low nibble first."""
    return _nibbles(packed).astype(np.float32)


def _nibbles(packed: np.ndarray) -> np.ndarray:
    """(..., n) bytes → (..., 2n): each byte's low nibble, then its high nibble."""
    both = np.stack([packed & 0x0F, packed >> 4], axis=-1)
    return both.reshape(*packed.shape[:-1], -1)


def _quarter(d: np.ndarray, scale: np.ndarray, unit: float) -> np.ndarray:
    """IQ2/IQ3_XXS block scales d·(0.5 + s)·unit, in gguf-py's float32 order (all exact)."""
    out: np.ndarray = d[..., None] * (np.float32(0.5) + scale) * np.float32(unit)
    return out


# ---------------------------------------------------------------- per-type unpackers


def iq2_xxs(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    """66 bytes: d, then 8 × (4 grid bytes, a word of 4 sign indices and a 4-bit scale)."""
    r, nb = b.shape[:2]
    groups = b[..., 2:66].reshape(r, nb, 8, 8)
    aux = _u32(groups[..., 4:8])  # (R, nb, 8)
    sign_index = ((aux[..., None] >> _SIGN_SHIFTS) & 127).astype(np.uint16)  # (R, nb, 8, 4)
    codes = _gather("IQ2_XXS", 7, True, groups[..., 0:4] | (sign_index << 8))
    scales = _quarter(_f16(b, 0), (aux >> 28).astype(np.float32), 0.25)
    return codes.reshape(r, nb * 8, 32), scales.reshape(r, -1), None


def iq2_xs(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    """74 bytes: d, 32 uint16 (9-bit grid index, 7-bit sign index), 16 4-bit scales."""
    r, nb = b.shape[:2]
    qs = np.ascontiguousarray(b[..., 2:66]).view("<u2")  # (R, nb, 32): already the key
    codes = _gather("IQ2_XS", 7, True, qs)
    scales = _quarter(_f16(b, 0), _nibble_scales(b[..., 66:74]), 0.25)
    return codes.reshape(r, nb * 16, 16), scales.reshape(r, -1), None


def iq2_s(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    """82 bytes: d, 32 low index bytes, 32 sign bytes, 8 bytes of 2-bit index tops, scales."""
    r, nb = b.shape[:2]
    qh = b[..., 66:74, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)  # (R, nb, 8, 4)
    index = b[..., 2:34].astype(np.uint32) | ((qh & 3).astype(np.uint32) << 8).reshape(r, nb, 32)
    codes = _gather("IQ2_S", 8, False, index | (b[..., 34:66].astype(np.uint32) << 10))
    scales = _quarter(_f16(b, 0), _nibble_scales(b[..., 74:82]), 0.25)
    return codes.reshape(r, nb * 16, 16), scales.reshape(r, -1), None


def iq3_xxs(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    """98 bytes: d, 64 grid bytes (4 values each), 8 words of 4 sign indices + 4-bit scale."""
    r, nb = b.shape[:2]
    aux = _u32(b[..., 66:98].reshape(r, nb, 8, 4))  # (R, nb, 8)
    sign_bytes = _ksign_bytes()[(aux[..., None] >> _SIGN_SHIFTS) & 127]  # (R, nb, 8, 4)
    nibbles = _nibbles(sign_bytes).astype(np.uint16).reshape(r, nb, 64)  # one per grid entry
    codes = _gather("IQ3_XXS", 4, False, b[..., 2:66] | (nibbles << 8))
    scales = _quarter(_f16(b, 0), (aux >> 28).astype(np.float32), 0.5)
    return codes.reshape(r, nb * 8, 32), scales.reshape(r, -1), None


def iq3_s(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """110 bytes: d, 64 low index bytes, 8 bytes of index tops, 32 sign bytes, 8 scales.

    Values are odd, v = 2k + 1 with k in −8..7: 4-bit codes k + 8, scale 2·db, offset db.
    """
    r, nb = b.shape[:2]
    top = np.unpackbits(b[..., 66:74], axis=-1, bitorder="little").astype(np.uint16)
    index = b[..., 2:66].astype(np.uint16) | (top << 8)  # (R, nb, 64)
    keys = index | (_nibbles(b[..., 74:106]).astype(np.uint16) << 9)
    codes = _iq3s_pairs()[keys].view(np.uint8).reshape(r, nb * 8, 16)
    db = _f16(b, 0)[..., None] * (np.float32(1) + np.float32(2) * _nibble_scales(b[..., 106:110]))
    return codes, (2 * db).reshape(r, -1), db.reshape(r, -1)


_MX_VALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.int16)
_MX_CODES = (_MX_VALUES + 128).astype(np.uint8)
# One byte of e2m1 nibbles → its two 8-bit codes (the low nibble's in the low byte).
_MX_PAIRS = _MX_CODES[np.arange(256) & 15].astype(np.uint16) | (
    _MX_CODES[np.arange(256) >> 4].astype(np.uint16) << 8
)


def mxfp4(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    """17 bytes: an e8m0 exponent, 16 bytes of e2m1 nibbles (element j low, j + 16 high)."""
    both = _MX_PAIRS[b[..., 1:17]].view(np.uint8)  # code(low j), code(high j) interleaved
    codes = np.concatenate([both[..., 0::2], both[..., 1::2]], axis=-1)
    return codes, _e8m0_half(b[..., 0]), None


def _e8m0_half(e: np.ndarray) -> np.ndarray:
    """2^(e − 128) as float32, exact (ggml's e8m0 → fp32 half: the values are stored ×2)."""
    e32 = e.astype(np.uint32)
    subnormal = np.uint32(0x00200000) << np.minimum(e32, np.uint32(1))
    bits = np.where(e32 < 2, subnormal, (e32 - np.uint32(1)) << np.uint32(23))
    return bits.view(np.float32)
