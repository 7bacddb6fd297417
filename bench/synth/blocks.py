"""Random quantised GGUF blocks with sane scales: the weights of synthetic test models.

Owns making the bytes of one tensor in any GGML type gguf-py can dequantise (Q4_0..Q8_0,
Q2_K..Q6_K, IQ2_XXS..IQ3_S, IQ4_NL, IQ4_XS, MXFP4, F16, BF16, F32): random codes, with every
block's f16 scale (and min; MXFP4: its e8m0 exponent) set so the dequantised weights have mean ~0
and the requested std, like a trained model's. Random codebook bytes are valid blocks: any grid
index, sign index and 4-bit sub-scale is one llama.cpp can write.
The reference float weights are `gguf.quants.dequantize` of these very bytes, so a model built
from them is exactly what the file holds. Does not own which type a tensor gets (see
`synth_plans`) nor writing files (see `synth`).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize, quantize

Q = GGMLQuantizationType
FLOAT_TYPES = (Q.F32, Q.F16, Q.BF16)
# Byte offsets of a block's f16 scale `d` and, where it has one, its f16 min/offset field.
SCALE_FIELDS: dict[GGMLQuantizationType, tuple[int, int | None]] = {
    Q.Q4_0: (0, None),
    Q.Q4_1: (0, 2),
    Q.Q5_0: (0, None),
    Q.Q5_1: (0, 2),
    Q.Q8_0: (0, None),
    Q.Q2_K: (80, 82),
    Q.Q3_K: (108, None),
    Q.Q4_K: (0, 2),
    Q.Q5_K: (0, 2),
    Q.Q6_K: (208, None),
    Q.IQ4_NL: (0, None),
    Q.IQ4_XS: (0, None),
    Q.IQ2_XXS: (0, None),
    Q.IQ2_XS: (0, None),
    Q.IQ2_S: (0, None),
    Q.IQ3_XXS: (0, None),
    Q.IQ3_S: (0, None),
    Q.MXFP4: (0, None),  # not f16: one e8m0 byte, the power of two 2^(e - 128)
}
SUPPORTED = (*FLOAT_TYPES, *SCALE_FIELDS)


def row_bytes(qtype: GGMLQuantizationType, cols: int) -> int:
    """Bytes of one row of ``cols`` weights in ``qtype``."""
    block, type_size = GGML_QUANT_SIZES[qtype]
    if cols % block:
        raise ValueError(f"a {qtype.name} row needs a multiple of {block} weights, got {cols}")
    return cols // block * type_size


def random_blocks(
    rng: np.random.Generator, qtype: GGMLQuantizationType, rows: int, cols: int, std: float
) -> np.ndarray:
    """(rows, row_bytes) uint8: random ``qtype`` data whose weights have ~``std`` spread."""
    if qtype in FLOAT_TYPES:
        return quantize((rng.standard_normal((rows, cols)) * std).astype(np.float32), qtype)
    if qtype not in SCALE_FIELDS:
        raise ValueError(f"cannot make random {qtype.name} blocks; use one of {_names()}")
    type_size = GGML_QUANT_SIZES[qtype][1]
    n_blocks = rows * row_bytes(qtype, cols) // type_size
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    d_unit, min_unit = _unit_scales(qtype)
    jitter = rng.uniform(0.5, 1.5, n_blocks)  # a reader that mixes up blocks must show it
    _set_scales(raw, qtype, d_unit * std * jitter, min_unit * std * jitter)
    return raw.reshape(rows, -1)


def reference_weights(data: np.ndarray, qtype: GGMLQuantizationType) -> np.ndarray:
    """The float32 weights a GGUF reader sees in ``data`` (as written to the file)."""
    return np.asarray(dequantize(data, qtype), dtype=np.float32)


def _names() -> str:
    return ", ".join(t.name for t in SUPPORTED)


def _set_scales(
    raw: np.ndarray, qtype: GGMLQuantizationType, d: np.ndarray, dmin: np.ndarray
) -> None:
    d_off, min_off = SCALE_FIELDS[qtype]
    if qtype == Q.MXFP4:  # the nearest power of two (jitter still moves it by up to one step)
        exponent = np.rint(np.log2(np.maximum(d, 2.0**-126))) + 128
        raw[:, d_off] = np.clip(exponent, 2, 254).astype(np.uint8)
        return
    raw[:, d_off : d_off + 2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    if min_off is not None:
        raw[:, min_off : min_off + 2] = dmin.astype(np.float16).view(np.uint8).reshape(-1, 2)


@cache
def _unit_scales(qtype: GGMLQuantizationType) -> tuple[float, float]:
    """(d, min) per unit of std that make random codes of ``qtype`` zero-mean with std 1.

    Dequantisation is linear in d and min (w = d*A + min*B with random A, B), so two probes
    measure E[A], E[B] and the std; a fixed seed keeps the result (and files) reproducible.
    """
    type_size = GGML_QUANT_SIZES[qtype][1]
    raw = np.random.default_rng(1234).integers(0, 256, size=(4096, type_size), dtype=np.uint8)

    def probe(d: float, dmin: float) -> np.ndarray:
        blocks = raw.copy()
        _set_scales(blocks, qtype, np.full(len(blocks), d), np.full(len(blocks), dmin))
        return reference_weights(blocks, qtype)

    has_min = SCALE_FIELDS[qtype][1] is not None
    ratio = -float(probe(1.0, 0.0).mean() / probe(0.0, 1.0).mean()) if has_min else 0.0
    spread = float(probe(1.0, ratio).std())
    return 1.0 / spread, ratio / spread
