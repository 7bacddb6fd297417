"""The vision encoders' arithmetic in numpy, rounded where ggml's CPU backend rounds.

Owns the pieces every ViT here is made of: `linear` (a matrix in the file's type, dequantised
for the product; the activations rounded to the type ggml's dot product takes them in: f16 for
F16 weights, bf16 for BF16, Q8_0 blocks for Q8_0, so results match libmtmd to float32 noise,
not to the weights' rounding), LayerNorm and RMSNorm, GELU (ggml's tanh form, looked up through
f16 as its table does), softmax attention over heads, 2-D average pooling, and the rotary
embeddings of Qwen's vision M-RoPE and Gemma 4's split x/y rope.

Does not own which pieces a projector uses (`engine.vision.encoders`) nor reading weights.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def round_activations(x: np.ndarray, qtype: str) -> np.ndarray:
    """``x`` as the dot product with a ``qtype`` matrix sees it (ggml's vec_dot_type)."""
    if qtype == "F16":
        return x.astype(np.float16).astype(F32)
    if qtype == "BF16":
        bits = np.ascontiguousarray(x, F32).view(np.uint32)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # nearest even
        return rounded.astype(np.uint32).view(F32)
    if qtype in ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        return _q8_blocks(x)
    if qtype in ("Q4_K", "Q6_K"):
        return _q8_blocks(x)  # Q8_K: per 256, but 32-blocks are within f32 noise of it
    return x


def _q8_blocks(x: np.ndarray) -> np.ndarray:
    shape = x.shape
    blocks = x.reshape(-1, 32)
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    d = (amax / F32(127)).astype(F32)
    inv = np.where(amax > 0, F32(127) / np.where(amax > 0, amax, 1), 0).astype(F32)
    q = np.rint(blocks * inv)
    return np.asarray(q * d.astype(np.float16).astype(F32), F32).reshape(shape)


def linear(x: np.ndarray, w: np.ndarray, qtype: str, bias: np.ndarray | None = None) -> np.ndarray:
    """x (T, in) @ w (out, in).T (+ bias), with ``x`` rounded as ggml rounds it for ``qtype``."""
    y = round_activations(x, qtype) @ w.T  # (T, out)
    if bias is not None:
        y += bias
    return np.asarray(y, F32)


def layer_norm(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float64)
    centred = (x - mean).astype(F32)
    var = (centred.astype(np.float64) ** 2).mean(axis=-1, keepdims=True)
    y = (centred * (1.0 / np.sqrt(var + eps)).astype(F32)).astype(F32)
    if w is not None:
        y *= w
    if b is not None:
        y += b
    return np.asarray(y, F32)


def rms_norm(x: np.ndarray, w: np.ndarray | None, eps: float) -> np.ndarray:
    ms = (x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True)
    y = (x * (1.0 / np.sqrt(ms + eps)).astype(F32)).astype(F32)
    return np.asarray(y * w if w is not None else y, F32)


def gelu(x: np.ndarray) -> np.ndarray:
    """ggml's GELU (tanh form) as its CPU backend computes it: through an f16 table."""
    h = x.astype(np.float16).astype(F32)
    c = F32(0.7978845608028654)  # sqrt(2/pi)
    y = (F32(0.5) * h * (F32(1) + np.tanh(c * h * (F32(1) + F32(0.044715) * h * h)))).astype(F32)
    y = y.astype(np.float16).astype(F32)
    return np.where(x <= -10, F32(0), np.where(x >= 10, x, y)).astype(F32)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """Bidirectional softmax attention; q, k, v (T, H, D) -> (T, H*D)."""
    t, h, d = q.shape
    qh, kh, vh = (np.ascontiguousarray(x.transpose(1, 0, 2)) for x in (q, k, v))  # (H, T, D)
    out = np.empty((h, t, d), F32)
    for i in range(h):  # one head at a time keeps the (T, T) scores to one copy
        s = qh[i] @ kh[i].T  # (T, T)
        s *= F32(scale)
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        np.matmul(s, vh[i], out=out[i])
    return out.transpose(1, 0, 2).reshape(t, h * d)


def avg_pool(x: np.ndarray, grid: tuple[int, int], k: int) -> np.ndarray:
    """(rows*cols, E) in raster order -> (rows/k * cols/k, E), k x k means, raster order."""
    rows, cols = grid
    e = x.shape[-1]
    blocks = x.reshape(rows // k, k, cols // k, k, e)
    return np.asarray(blocks.mean(axis=(1, 3), dtype=F32), F32).reshape(-1, e)


def rope_halves(x: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotate pairs (i, i + n/2) of x (T, H, n) by angles (T, n/2): the NEOX layout."""
    half = x.shape[-1] // 2
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1).astype(F32)


def powers(base: float, n_dims: int, count: int) -> np.ndarray:
    """theta_scale^i for i < count, theta_scale = base^(-2/n_dims), multiplied up in float32
    as ggml's rope cache does."""
    scale = F32(base ** (-2.0 / n_dims))
    out = np.empty(count, F32)
    acc = F32(1.0)
    for i in range(count):
        out[i] = acc
        acc = F32(acc * scale)
    return out
