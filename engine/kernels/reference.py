"""A float reference for `engine.kernels.experts.routed_ffn`: gguf-py's dequantize, numpy math.

Owns the oracle the C kernel is tested against (and the fallback used until it is built):
slow, since it dequantizes every routed expert per call, and float32 throughout; the C
kernel quantizes activations to 8 bits the way llama.cpp does, so compare within tolerance.
"""

from __future__ import annotations

import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import dequantize

from engine.kernels.experts import ExpertSet, QuantMatrix

SQRT_2_OVER_PI = 0.7978845608028654


def expert_matrix(m: QuantMatrix, e: int) -> np.ndarray:
    """Expert ``e`` of ``m`` as float32 (rows, cols)."""
    flat = dequantize(np.asarray(m.data[e]), GGMLQuantizationType(m.qtype))
    return np.asarray(flat, np.float32).reshape(m.rows, m.cols)


def _sigmoid(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * v))  # no overflow, unlike 1/(1+e^-v)
    return out


def glu(gate: np.ndarray, up: np.ndarray, kind: str) -> np.ndarray:
    """A gated MLP's act(gate) · up, as the kernel's ``activate`` computes it."""
    out: np.ndarray
    if kind == "silu":
        out = gate * _sigmoid(gate) * up
    elif kind == "swiglu_oai":
        g = np.minimum(gate, 7.0)
        u = np.clip(up, -7.0, 7.0)
        out = g * _sigmoid(1.702 * g) * (u + 1.0)
    else:
        inner = SQRT_2_OVER_PI * (gate + 0.044715 * gate**3)
        out = 0.5 * gate * (1.0 + np.tanh(inner)) * up
    return out


def routed_ffn_reference(
    x: np.ndarray, ids: np.ndarray, weights: np.ndarray, ex: ExpertSet
) -> np.ndarray:
    out = np.zeros_like(x, dtype=np.float32)
    for t in range(x.shape[0]):
        for e, w in zip(ids[t].tolist(), weights[t].tolist(), strict=True):
            if ex.gate_up is not None:
                gu = expert_matrix(ex.gate_up, e) @ x[t]
                gate, up = np.split(gu, 2)
            else:
                assert ex.gate is not None and ex.up is not None
                gate = expert_matrix(ex.gate, e) @ x[t]
                up = expert_matrix(ex.up, e) @ x[t]
            if ex.gate_bias is not None:
                gate = gate + ex.gate_bias[e]
            if ex.up_bias is not None:
                up = up + ex.up_bias[e]
            y = expert_matrix(ex.down, e) @ glu(gate, up, ex.activation)
            if ex.down_bias is not None:
                y = y + ex.down_bias[e]
            if ex.out_scale is not None:
                y = y * ex.out_scale[e]
            out[t] += w * y
    return out
