"""The per-block unpackers of the legacy and K-quant GGUF types (and IQ4_NL / IQ4_XS).

Owns, for each of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K … Q6_K, IQ4_NL and IQ4_XS, the function
that turns a (rows, blocks, type_size) uint8 view of GGUF blocks into MatMulNBits ``codes``,
``scales`` and (where the type has minima) ``offsets``, exactly: the value layout and the
exactness rules are `engine.gguf.repack`'s (its module docstring), which owns the table that
picks these functions, block sizes, zero points and everything around them. The codebook types
(IQ2_*, IQ3_*, MXFP4) are `engine.gguf.repack_iq`'s; the bit-twiddling helpers are
`engine.gguf.blockbits`'s.
"""

from __future__ import annotations

import numpy as np

from engine.gguf.blockbits import as_bytes as _as_bytes
from engine.gguf.blockbits import byte_splat as _bytes
from engine.gguf.blockbits import f16 as _f16
from engine.gguf.blockbits import nibbles_to_ort as _nibbles_to_ort
from engine.gguf.blockbits import pack_planes as _pack_planes
from engine.gguf.blockbits import shifted as _shifted
from engine.gguf.blockbits import split_nibbles as _split_nibbles
from engine.gguf.blockbits import u64 as _u64
from engine.gguf.blockbits import words as _words

IQ4_KVALUES = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


def _scale_min_k4(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eight 6-bit scales and mins of a Q4_K/Q5_K super-block (12 bytes each)."""
    a, b, c = packed[..., 0:4], packed[..., 4:8], packed[..., 8:12]
    sc = np.concatenate([a & 63, (c & 0x0F) | ((a >> 2) & 0x30)], axis=-1)  # (R, nb, 8)
    mn = np.concatenate([b & 63, (c >> 4) | ((b >> 2) & 0x30)], axis=-1)
    return sc, mn


_KCODES = (np.array(IQ4_KVALUES, dtype=np.int16) + 128).astype(np.uint8)
# One byte of IQ4 nibbles → its two 8-bit codes (low nibble's in the low byte).
_KPAIRS = _KCODES[np.arange(256) & 0x0F].astype(np.uint16) | (
    _KCODES[np.arange(256) >> 4].astype(np.uint16) << 8
)


def _iq4_codes(qs: np.ndarray) -> np.ndarray:
    """IQ4 nibble groups (..., 16) → 8-bit codes (..., 32): kvalue + 128, low nibbles first."""
    both = _KPAIRS[qs].view(np.uint8)  # (..., 32): code(low j), code(high j) interleaved
    return np.concatenate([both[..., 0::2], both[..., 1::2]], axis=-1)


# ---------------------------------------------------------------- per-type recipes
# Each takes blocks (R, nb, type_size) uint8 and follows gguf-py's dequantize_blocks.


def q4_0(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    return _nibbles_to_ort(b[..., 2:18]), _f16(b, 0), None  # d·(q − 8)


def q4_1(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d, m = _f16(b, 0), _f16(b, 2)
    return _nibbles_to_ort(b[..., 4:20]), d, m  # d·q + m, with zero point 0


def _q5(b: np.ndarray, at: int, base: int) -> np.ndarray:
    """Q5_0/Q5_1 8-bit codes: q (5 bits, high bit from the 32-bit qh) + base."""
    high = np.unpackbits(b[..., at : at + 4], axis=-1, bitorder="little")  # (R, nb, 32)
    codes: np.ndarray = _split_nibbles(b[..., at + 4 : at + 20]) + (high << 4) + np.uint8(base)
    return codes


def q5_0(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    return _q5(b, 2, 112), _f16(b, 0), None  # d·(q − 16) = d·((q + 112) − 128)


def q5_1(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return _q5(b, 4, 128), _f16(b, 0), _f16(b, 2)  # d·q + m


def q8_0(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    return b[..., 2:34] ^ np.uint8(0x80), _f16(b, 0), None  # int8 q + 128


def q2_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sc, d, dmin = b[..., 0:16], _f16(b, 80), _f16(b, 82)
    r, nb = b.shape[:2]
    qs = _words(b[..., 16:80]).reshape(-1, 4)  # (R·nb·2 halves, 32 bytes)
    planes = [(qs >> np.uint64(2 * s)) & _bytes(0x03) for s in range(4)]  # element h·128+s·32+l
    codes = _pack_planes(planes) | np.uint8(0x88)  # q + 8 in both nibbles
    scales = d[..., None] * (sc & 0x0F)  # (R, nb, 16)
    offsets = -(dmin[..., None] * (sc >> 4))
    return codes.reshape(r, nb * 16, 8), scales.reshape(r, -1), offsets.reshape(r, -1)


def q3_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    packed, d = b[..., 96:108], _f16(b, 108)
    r, nb = b.shape[:2]
    hmask = _words(b[..., 0:32]).reshape(-1, 1, 4) >> _u64(0, 4)  # (R·nb, 2 halves, 4)
    hmask = hmask.reshape(-1, 4)  # bit s of half h's word: hmask bit h·4 + s
    qs = _words(b[..., 32:96]).reshape(-1, 4)  # (R·nb·2 halves, 32 bytes)
    planes = [
        (((qs >> np.uint64(2 * s)) & _bytes(0x03)) | (((hmask >> np.uint64(s)) & _bytes(1)) << 2))
        + _bytes(0x04)
        for s in range(4)
    ]  # q + 8 with q = low − 4·(1 − high), i.e. (low | high << 2) + 4
    codes = _pack_planes(planes).reshape(r, nb * 16, 8)
    lo = _split_nibbles(packed[..., 0:8])  # (R, nb, 16)
    hi = (_shifted(packed[..., 8:12], [0, 2, 4, 6]) & 3).reshape(r, nb, 16)
    scales = d[..., None] * ((lo | (hi << 4)).astype(np.int16) - 32)
    return codes, scales.reshape(r, -1), None


def q4_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _scale_min_k4(b[..., 4:16])
    r, nb = b.shape[:2]
    codes = _nibbles_to_ort(b[..., 16:144].reshape(r, nb, 4, 32)).reshape(r, nb * 8, 16)
    scales = d[..., None] * sc  # (R, nb, 8)
    offsets = -(dmin[..., None] * mn)  # d·q − m', with zero point 0
    return codes, scales.reshape(r, -1), offsets.reshape(r, -1)


def q5_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _scale_min_k4(b[..., 4:16])
    r, nb = b.shape[:2]
    qh = _words(b[..., 16:48]).reshape(r, nb, 1, 4)
    qs = _words(b[..., 48:176]).reshape(r, nb, 4, 1, 4)  # 4 × 32 bytes
    low = ((qs >> _u64(0, 4)) & _bytes(0x0F)).reshape(r, nb, 8, 4)  # sub-block 2c + s
    high = ((qh >> _u64(*range(8))) & _bytes(0x01)) << np.uint64(4)  # bit j of qh[l]
    codes = _as_bytes(low | high | _bytes(0x80)).reshape(r, nb * 8, 32)  # q + 128
    scales = d[..., None] * sc
    offsets = -(dmin[..., None] * mn)
    return codes, scales.reshape(r, -1), offsets.reshape(r, -1)


def q6_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    sc, d = b[..., 192:208].view(np.int8), _f16(b, 208)
    r, nb = b.shape[:2]
    ql = _words(b[..., 0:128]).reshape(r, nb, 2, 1, 8)  # 2 halves × 64 bytes
    qh = _words(b[..., 128:192]).reshape(r, nb, 2, 1, 4)  # 2 halves × 32 bytes
    low = ((ql >> _u64(0, 4)) & _bytes(0x0F)).reshape(r, nb, 2, 16)
    high = ((qh >> _u64(0, 2, 4, 6)) & _bytes(0x03)).reshape(r, nb, 2, 16)
    q = low | (high << np.uint64(4))  # 0..63 per byte
    codes = _as_bytes(q + _bytes(96)).reshape(r, nb * 16, 16)  # (q − 32) + 128
    scales = d[..., None] * sc
    return codes, scales.reshape(r, -1), None


def iq4_nl(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    return _iq4_codes(b[..., 2:18]), _f16(b, 0), None


def iq4_xs(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, None]:
    d, packed_l = _f16(b, 0), b[..., 4:8]
    r, nb = b.shape[:2]
    packed_h = b[..., 2].astype(np.uint16) | (b[..., 3].astype(np.uint16) << 8)  # (R, nb)
    lo = np.stack([packed_l & 0x0F, packed_l >> 4], axis=-1).reshape(r, nb, 8)
    hi = (packed_h[..., None] >> np.arange(0, 16, 2, dtype=np.uint16)) & 3  # (R, nb, 8)
    scales = d[..., None] * ((lo | (hi << 4)).astype(np.int16) - 32)
    codes = _iq4_codes(b[..., 8:136].reshape(r, nb, 8, 16)).reshape(r, nb * 8, 32)
    return codes, scales.reshape(r, -1), None
