"""GGUF weight bytes → the arrays ONNX Runtime's `MatMulNBits` reads, value for value.

Owns one table, `_RECIPES`, from a GGUF tensor type to its exact repacking: how each GGUF
block becomes ``codes``/``scales``/``offsets`` such that, for row n and K-block b,

    w[n, b·block + i] = scales[n, b] · (code[n, b, i] − zp) + offsets[n, b]

with ``zp = 2^(bits−1)`` (the zero point `MatMulNBits` assumes without a zero_points input), or
a per-block zero point (0 or 8) through an explicit zero_points input for Q4_1 and Q4_K (below).
A graph computes ``x·Wᵀ = MatMulNBits(x) + blocksum(x)·offsetsᵀ`` when offsets exist. Also owns
`dequantize_rows` (the embedding lookup: gguf-py's dequantize of just the rows asked for).
It does not read files (`gguf.GGUFReader` does) nor build graphs (`engine.fastpath.graph`).

Layout: 4-bit codes are (N, K/block, block/2) with element 2j in the low nibble of byte j and
2j+1 in the high nibble; 8-bit codes are (N, K/block, block). Types whose values do not fit
4 bits with zero point 8 (5- and 6-bit codes, IQ4 lookup values, the codebook types of
`engine.gguf.repack_iq`: IQ2_*, IQ3_XXS, MXFP4) use 8 bits.

Exactness: every scale and offset below is an exact float32 (f16 × small integer), so `decode`
equals gguf-py's dequantize bit for bit for every type. Q4_1 and Q4_K keep their raw 0..15
codes; each block reads them around zero point 8 with offset ``m + 8·d`` where that sum is a
float32 (in real files nearly every block), else around zero point 0 with the minimum ``m`` as
its offset (d and m far apart, where the sum would round). Centred codes matter for int8
activations: MatMulNBits multiplies each activation's rounding error by ``d·(q − zp)``, which is
the weight itself around 8 but ``w − m`` (about twice as large) around 0, so raw codes doubled
the int8 error against llama.cpp's Q8 activations (one Q4_1 matrix: 1.09 % against 0.54 %).
The explicit zero_points input cost nothing measurable in ORT 1.32 here.
Byte order is little-endian throughout, as in GGUF files and on the CPUs the fast path runs on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.errors import CorruptModelError, UnsupportedModelError
from engine.gguf import repack_blocks as kq
from engine.gguf import repack_iq as iq

QK_K = 256  # elements per K-quant / IQ4_XS super-block
CHUNK_BYTES = 1 << 20  # GGUF bytes repacked per step: keeps temporaries in cache
# ONNX Runtime's int8-activation MatMulNBits (accuracy level 4) prepacks each block with a
# float32 sum beside its float32 scale (MLAS's BlkSum): measured 8 bytes per block beyond the
# codes for 4- and 8-bit weights of block 16 and 32 in ORT 1.32.
BLOCK_SUM_BYTES = 4

Unpack = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray | None]]


class UnsupportedQuantError(UnsupportedModelError):
    """A weight's GGUF type (or shape) has no exact `MatMulNBits` repacking."""


@dataclass(frozen=True)
class Packed:
    """One repacked weight: `MatMulNBits` arrays, or a dense float32 matrix."""

    n: int
    k: int
    bits: int  # 0 = dense float32, else 4 or 8
    block: int  # 16 or 32 (0 for dense)
    codes: np.ndarray | None  # (N, K/block, block·bits/8) uint8
    scales: np.ndarray | None  # (N, K/block) float32
    offsets: np.ndarray | None  # (N, K/block) float32, or None
    dense: np.ndarray | None  # (N, K) float32
    # None: MatMulNBits' default zero point 2^(bits−1); 0: an explicit zero_points input
    # (Q4_1, Q4_K: raw GGUF codes), each block's in ``zero_points`` (0 where that is None).
    zero_point: int | None = None
    # (N, ceil(K/block·bits/8)) uint8 as MatMulNBits reads it (4 bits: even block in the low
    # nibble): each block's zero point, 2^(bits−1) where its offset absorbs it exactly.
    zero_points: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        arrays = (self.codes, self.scales, self.offsets, self.dense)
        return sum(a.nbytes for a in arrays if a is not None) + self.zero_point_bytes

    @property
    def resident_nbytes(self) -> int:
        """What this weight keeps in memory once ONNX Runtime has prepacked it: see
        `resident_nbytes` (the function)."""
        if self.bits == 0:
            return self.nbytes
        return self.nbytes + BLOCK_SUM_BYTES * self.n * (self.k // self.block)

    @property
    def zero_point_bytes(self) -> int:
        """Size of the explicit zero_points input: (N, ceil(blocks·bits/8)) uint8."""
        if self.zero_point is None or self.bits == 0:
            return 0
        return self.n * -(-(self.k // self.block) * self.bits // 8)


@dataclass(frozen=True)
class _Recipe:
    qk: int  # elements per GGUF block
    type_size: int  # bytes per GGUF block
    bits: int
    block: int  # MatMulNBits block size
    offsets: bool
    unpack: Unpack
    zero_point: int | None = None  # see `Packed.zero_point`
    centre: int = 0  # codes are q + 2^(bits−1): blocks shift them by this much (`_shifted_codes`)


def _centred(
    scales: np.ndarray, offsets: np.ndarray, bits: int, shift: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, zero points (R, nb) uint8) for raw codes: zero point 2^(bits−1) with the
    offset ``m + 2^(bits−1)·d`` in each block where that sum is exact in float32, else 0 and m.
    ``shift``: the offset takes ``m + shift·d`` instead (the zero points then say which did).

    Only blocks with d > 0 (all a quantizer writes): with d < 0 gguf-py's ``d·0 + (−0)`` is −0
    where the centred form gives +0, and decode must match it bit for bit."""
    mid = shift or 2 ** (bits - 1)
    folded = offsets.astype(np.float64) + mid * scales.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        exact = folded.astype(np.float32).astype(np.float64) == folded  # NaN/inf: False
    exact &= scales > 0
    centred = np.where(exact, folded, offsets).astype(np.float32)
    return centred, np.where(exact, mid, 0).astype(np.uint8)


def _shifted_codes(
    codes: np.ndarray, scales: np.ndarray, offsets: np.ndarray, shift: int, bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``q + 2^(bits−1)`` (read around the default zero point as ``d·q + m``) centred:
    ``q + 2^(bits−1) − shift`` with offset ``m + shift·d`` in each block where that sum is exact
    in float32 and d > 0 (see `_centred`), the block's own codes elsewhere. Q5_1, Q5_K: shift 16;
    Q2_K: 2 (both nibbles of a byte, which hold 8..11, so nothing borrows)."""
    offsets, moved = _centred(scales, offsets, bits, shift)
    step = shift if bits == 8 else shift * 0x11
    delta = (moved > 0).astype(np.uint8) * np.uint8(step)  # (R, blocks)
    blocks = codes.reshape(*scales.shape, -1)
    return (blocks - delta[..., None]).reshape(codes.shape), offsets


def pack_zero_points(values: np.ndarray, bits: int) -> np.ndarray:
    """Per-block zero points (R, nb) → MatMulNBits' zero_points rows (4 bits: two per byte)."""
    if bits == 8:
        return np.ascontiguousarray(values, dtype=np.uint8)
    r, nb = values.shape
    padded = np.zeros((r, nb + nb % 2), dtype=np.uint8)
    padded[:, :nb] = values
    out: np.ndarray = padded[:, 0::2] | (padded[:, 1::2] << 4)
    return out


def zero_points_input(p: Packed) -> np.ndarray | None:
    """The zero_points input MatMulNBits reads for ``p`` (None: its default zero point)."""
    if p.zero_point is None or p.bits == 0:
        return None
    if p.zero_points is not None:
        return p.zero_points
    fill = p.zero_point | (p.zero_point << 4) if p.bits == 4 else p.zero_point
    return np.full((p.n, p.zero_point_bytes // p.n), fill, dtype=np.uint8)


def _unpacked_zero_points(p: Packed) -> np.ndarray | int:
    """Each block's zero point (N, K/block, 1), or the one all blocks share."""
    if p.zero_point is None:
        return int(2 ** (p.bits - 1))
    if p.zero_points is None:
        return p.zero_point
    nb = p.k // p.block
    zp = p.zero_points
    if p.bits == 4:
        zp = np.stack([zp & 0x0F, zp >> 4], axis=-1).reshape(p.n, -1)
    return zp[:, :nb, None].astype(np.float64)


_RECIPES: dict[str, _Recipe] = {
    "Q4_0": _Recipe(32, 18, 4, 32, False, kq.q4_0),
    "Q4_1": _Recipe(32, 20, 4, 32, True, kq.q4_1, zero_point=0),
    "Q5_0": _Recipe(32, 22, 8, 32, False, kq.q5_0),
    "Q5_1": _Recipe(32, 24, 8, 32, True, kq.q5_1, centre=16),
    "Q8_0": _Recipe(32, 34, 8, 32, False, kq.q8_0),
    "Q2_K": _Recipe(QK_K, 84, 4, 16, True, kq.q2_k, centre=2),
    "Q3_K": _Recipe(QK_K, 110, 4, 16, False, kq.q3_k),
    "Q4_K": _Recipe(QK_K, 144, 4, 32, True, kq.q4_k, zero_point=0),
    "Q5_K": _Recipe(QK_K, 176, 8, 32, True, kq.q5_k, centre=16),
    "Q6_K": _Recipe(QK_K, 210, 8, 16, False, kq.q6_k),
    "IQ4_NL": _Recipe(32, 18, 8, 32, False, kq.iq4_nl),
    "IQ4_XS": _Recipe(QK_K, 136, 8, 32, False, kq.iq4_xs),
    # Codebook types (engine.gguf.repack_iq says why all but IQ3_S need 8-bit codes).
    "IQ2_XXS": _Recipe(QK_K, 66, 8, 32, False, iq.iq2_xxs),
    "IQ2_XS": _Recipe(QK_K, 74, 8, 16, False, iq.iq2_xs),
    "IQ2_S": _Recipe(QK_K, 82, 8, 16, False, iq.iq2_s),
    "IQ3_XXS": _Recipe(QK_K, 98, 8, 32, False, iq.iq3_xxs),
    "IQ3_S": _Recipe(QK_K, 110, 4, 32, True, iq.iq3_s),
    "MXFP4": _Recipe(32, 17, 8, 32, False, iq.mxfp4),
}
_DENSE = {"F32": 4, "F16": 2, "BF16": 2}  # bytes per element
SUPPORTED: frozenset[str] = frozenset(_RECIPES) | frozenset(_DENSE)


# ---------------------------------------------------------------- public API


def fast_path_supports(ggml_type: Any) -> bool:
    """Whether `repack` has an exact `MatMulNBits` (or dense) form for this GGUF type."""
    return _type_name(ggml_type) in SUPPORTED


def repack(ggml_type: Any, raw: np.ndarray, n: int, k: int, name: str = "") -> Packed:
    """A GGUF weight of N rows × K (its ne1 × ne0) in the layout `MatMulNBits` reads.

    `raw` is the tensor's bytes in any dtype/shape (a read-only memmap is fine; never written).
    Raises UnsupportedQuantError for types without an exact repacking or K off the block grid.
    """
    kind = _type_name(ggml_type)
    rows = _rows(kind, raw, n, k, name)  # (N, row bytes) uint8
    if kind in _DENSE:
        return Packed(n, k, 0, 0, None, None, None, _dense(kind, rows))
    recipe = _RECIPES[kind]
    nb = k // recipe.block
    codes = np.empty((n, nb, recipe.block * recipe.bits // 8), dtype=np.uint8)
    scales = np.empty((n, nb), dtype=np.float32)
    offsets = np.empty((n, nb), dtype=np.float32) if recipe.offsets else None
    explicit = recipe.zero_point is not None and offsets is not None
    zero_points = np.empty((n, -(-nb * recipe.bits // 8)), np.uint8) if explicit else None
    step = max(1, CHUNK_BYTES // rows.shape[1])
    for r0 in range(0, n, step):
        blocks = rows[r0 : r0 + step].reshape(-1, k // recipe.qk, recipe.type_size)
        c, s, o = recipe.unpack(blocks)
        if zero_points is not None and o is not None:  # raw codes: centre where exact
            o, zp = _centred(s.reshape(len(c), nb), o.reshape(len(c), nb), recipe.bits)
            zero_points[r0 : r0 + step] = pack_zero_points(zp, recipe.bits)
        elif recipe.centre and o is not None:  # d·q + m codes: centre where exact
            c, o = _shifted_codes(c, s.reshape(len(c), nb), o.reshape(len(c), nb), recipe.centre,
                                  recipe.bits)  # fmt: skip
        codes[r0 : r0 + step], scales[r0 : r0 + step] = c, s
        if offsets is not None:
            offsets[r0 : r0 + step] = o
    return Packed(
        n, k, recipe.bits, recipe.block, codes, scales, offsets, None, recipe.zero_point,
        zero_points,
    )  # fmt: skip


def decode(p: Packed) -> np.ndarray:
    """The weights a `Packed` stands for, (N, K) float32: scales·(codes − zp) + offsets.

    Evaluated in float64 (exact for these operands) and rounded once to float32, so it can be
    compared bit for bit with gguf-py's dequantize.
    """
    if p.bits == 0:
        assert p.dense is not None
        return p.dense.copy()
    assert p.codes is not None and p.scales is not None
    if p.bits == 4:
        codes = np.empty((p.n, p.k // p.block, p.block), dtype=np.uint8)
        codes[..., 0::2], codes[..., 1::2] = p.codes & 0x0F, p.codes >> 4
    else:
        codes = p.codes
    zp = _unpacked_zero_points(p)
    w = (codes.astype(np.float64) - zp) * p.scales[..., None].astype(np.float64)
    if p.offsets is not None:
        w += p.offsets[..., None]
    return w.astype(np.float32).reshape(p.n, p.k)


def dequantize_rows(
    ggml_type: Any, raw: np.ndarray, n: int, k: int, rows: np.ndarray, name: str = ""
) -> np.ndarray:
    """gguf-py's dequantize of just `rows` of an N × K tensor, (len(rows), K) float32.

    Reads only those rows' bytes (an embedding lookup on a memmap touches only their pages).
    Works for any type gguf-py can dequantize, not only the `SUPPORTED` ones.
    """
    import gguf

    kind = _type_name(ggml_type)
    qtype = gguf.GGMLQuantizationType[kind]
    qk, type_size = gguf.GGML_QUANT_SIZES[qtype]
    if k % qk:
        raise UnsupportedQuantError(_off_grid(name, kind, k, qk))
    flat = _flat_bytes(raw, n * (k // qk) * type_size, name)
    picked = np.ascontiguousarray(flat.reshape(n, -1)[np.asarray(rows, dtype=np.intp)])
    try:
        out = gguf.quants.dequantize(picked, qtype)
    except NotImplementedError as e:
        raise UnsupportedQuantError(f"{_label(name)} uses {kind}, which gguf-py cannot read") from e
    return np.asarray(out, dtype=np.float32).reshape(len(picked), k)


def packed_nbytes(ggml_type: Any, n: int, k: int, name: str = "") -> int:
    """The bytes `repack` would allocate for this weight, without repacking it."""
    kind = _type_name(ggml_type)
    if kind in _DENSE:
        return n * k * 4
    recipe = _recipe(kind, k, name)
    per_block = recipe.block * recipe.bits // 8 + 4 * (1 + recipe.offsets)
    zero_points = 0 if recipe.zero_point is None else n * -(-(k // recipe.block) * recipe.bits // 8)
    return n * (k // recipe.block) * per_block + zero_points


def resident_nbytes(ggml_type: Any, n: int, k: int, name: str = "") -> int:
    """The bytes this weight keeps in memory on the fast path: `packed_nbytes` plus the block
    sums ONNX Runtime adds when it prepacks it (`BLOCK_SUM_BYTES` per block). The scales it
    copies into its packed buffer stay mapped from ``weights.bin`` too, but the fast path
    has the kernel reclaim those pages after the open (`engine.fastpath.weights`), so they
    count once. Dense matrices: their float32 bytes."""
    kind = _type_name(ggml_type)
    if kind in _DENSE:
        return packed_nbytes(ggml_type, n, k, name)
    recipe = _recipe(kind, k, name)
    return packed_nbytes(ggml_type, n, k, name) + BLOCK_SUM_BYTES * n * (k // recipe.block)


# ---------------------------------------------------------------- checks and plumbing


def _type_name(ggml_type: Any) -> str:
    return str(getattr(ggml_type, "name", ggml_type))


def _label(name: str) -> str:
    return name or "this tensor"


def _off_grid(name: str, kind: str, k: int, qk: int) -> str:
    return f"{_label(name)} ({kind}) has rows of K={k}, not a multiple of its block size {qk}"


def _recipe(kind: str, k: int, name: str) -> _Recipe:
    recipe = _RECIPES.get(kind)
    if recipe is None:
        raise UnsupportedQuantError(
            f"{_label(name)} uses {kind}, which the fast path cannot run "
            f"(supported: {', '.join(sorted(SUPPORTED))})"
        )
    if k % recipe.qk:
        raise UnsupportedQuantError(_off_grid(name, kind, k, recipe.qk))
    return recipe


def _rows(kind: str, raw: np.ndarray, n: int, k: int, name: str) -> np.ndarray:
    """The raw bytes as (N, bytes per row) uint8, after checking type, shape and size."""
    if kind in _DENSE:
        row_bytes = k * _DENSE[kind]
    else:
        recipe = _recipe(kind, k, name)
        row_bytes = k // recipe.qk * recipe.type_size
    return _flat_bytes(raw, n * row_bytes, name).reshape(n, row_bytes)


def _flat_bytes(raw: np.ndarray, expected: int, name: str) -> np.ndarray:
    flat = np.asarray(raw).reshape(-1).view(np.uint8)
    if flat.size != expected:
        raise CorruptModelError(f"{_label(name)} holds {flat.size} bytes, expected {expected}")
    return flat


def _dense(kind: str, rows: np.ndarray) -> np.ndarray:
    if kind == "F32":
        return rows.view(np.float32).copy()
    if kind == "F16":
        return rows.view(np.float16).astype(np.float32)
    return (rows.view(np.uint16).astype(np.uint32) << 16).view(np.float32)  # BF16
