"""The vision towers and projectors: a prepared image in, one row per image token out.

Owns the graph of each supported projector type, following llama.cpp's `tools/mtmd` builders
step by step so the rows equal libmtmd's (`tests/engine/vision` pins them):

- `encode_gemma3`: SigLIP (patch conv + bias + learned positions, pre-norm LayerNorm blocks with
  biased q/k/v/out and a GELU MLP, post LayerNorm), k x k average pooling, the soft-embedding
  RMS norm and the input projection;
- `encode_qwen3vl`: two patch kernels summed, patches ordered by 2 x 2 merge window, learned
  positions (bilinearly resized to the grid), blocks with fused qkv and vision M-RoPE (rows on
  the first quarter of each head's pairs, columns on the second), deepstack mergers where the
  file has them (concatenated after the main merger's output), the 2 x 2 merger MLP;
- `encode_gemma4v`: pixels to [-1, 1], an unbiased patch conv, x/y position tables, RMS-norm
  blocks with per-head q/k norms, an unweighted v norm, 2-D rope (columns on the first half of
  each head, rows on the second, base 100) and unscaled attention, post norms, a gated GELU
  MLP, clamped linears, 3 x 3 pooling times sqrt(width), optional standardisation, an RMS norm
  and the projection.

Weights are read from the file one matrix at a time (`Mmproj.weight`). Numpy first, for
correctness; the fast path's ONNX Runtime graph is the next step (see docs/vision.md).
Does not own reading the file, pre-processing or caching.
"""

from __future__ import annotations

import math

import numpy as np

from engine.errors import InvalidImageError
from engine.vision.mmproj import Mmproj
from engine.vision.ops import (
    F32,
    attention,
    avg_pool,
    gelu,
    layer_norm,
    linear,
    powers,
    rms_norm,
    rope_halves,
    round_activations,
)
from engine.vision.preprocess import Prepared


def encode(mm: Mmproj, image: Prepared) -> np.ndarray:
    """(n_tokens, mm.out_width) float32: the image's rows for the language model."""
    run = {"gemma3": encode_gemma3, "gemma4v": encode_gemma4v, "qwen3vl_merger": encode_qwen3vl}
    out = run[mm.params.projector](mm, image)
    assert out.shape == (image.n_tokens, mm.out_width), (out.shape, image.n_tokens)
    return out


class _Weights:
    """Named access to one mmproj's tensors for one encode (dequantised on use)."""

    def __init__(self, mm: Mmproj) -> None:
        self.mm = mm

    def __call__(self, name: str) -> np.ndarray:
        return self.mm.weight(name)

    def opt(self, name: str) -> np.ndarray | None:
        return self.mm.weight(name) if self.mm.has(name) else None

    def linear(self, x: np.ndarray, stem: str, bias: bool = True) -> np.ndarray:
        name = f"{stem}.weight"
        b = self.opt(f"{stem}.bias") if bias else None
        clamp = self.mm.clamps.get(name)
        if clamp is not None:
            x = np.clip(x, clamp[0], clamp[1])
        y = linear(x, self(name), self.mm.qtype(name), b)
        return np.clip(y, clamp[2], clamp[3]) if clamp is not None else y

    def patches(self, pixels: np.ndarray, name: str) -> np.ndarray:
        """The patch conv as ggml's im2col does it: pixels rounded to the kernel's type."""
        p = self.mm.params.patch
        h, w, _ = pixels.shape
        cols = pixels.reshape(h // p, p, w // p, p, 3).transpose(0, 2, 4, 1, 3)
        cols = cols.reshape((h // p) * (w // p), 3 * p * p)  # (T, c*ky*kx), raster order
        kernel = self(name)  # (E, 3, P, P)
        qtype = self.mm.qtype(name)
        return linear(round_activations(cols, qtype), kernel.reshape(kernel.shape[0], -1), "F32")


def _mlp(w: _Weights, x: np.ndarray, stem: str, gelu_tanh: bool) -> np.ndarray:
    h = w.linear(x, f"{stem}.ffn_up")
    h = gelu(h) if gelu_tanh else (h * (1.0 / (1.0 + np.exp(-1.702 * h)))).astype(F32)
    return w.linear(h, f"{stem}.ffn_down")


def swapped(mm: Mmproj, i: int) -> bool:
    """Old converters wrote SigLIP's fc1/fc2 swapped; llama.cpp swaps them back when ffn_down's
    rows are the embedding width."""
    t = mm.tensor(f"v.blk.{i}.ffn_down.weight")
    return (
        t is not None and int(t.shape[0]) == mm.params.n_embd and mm.params.n_ff != mm.params.n_embd
    )


def gemma3_embed(mm: Mmproj, image: Prepared) -> np.ndarray:
    """The patches plus their learned positions (T, E), raster order."""
    w = _Weights(mm)
    x = w.patches(image.pixels, "v.patch_embd.weight") + w("v.patch_embd.bias")
    pos = w("v.position_embd.weight")
    if pos.shape[0] != x.shape[0]:
        raise InvalidImageError(
            f"{mm.path.name}: {x.shape[0]} patches but {pos.shape[0]} positions"
        )
    return np.asarray(x + pos, F32)


def gemma3_finish(mm: Mmproj, x: np.ndarray, image: Prepared) -> np.ndarray:
    """The blocks' output pooled, normed and projected into image tokens."""
    p, w = mm.params, _Weights(mm)
    x = layer_norm(x, w("v.post_ln.weight"), w("v.post_ln.bias"), p.eps)
    pooled = avg_pool(x, image.grid, p.merge)
    pooled = rms_norm(pooled, w("mm.soft_emb_norm.weight"), p.eps)
    proj = w("mm.input_projection.weight")  # (vision, text): llama.cpp transposes it
    return np.asarray(round_activations(pooled, mm.qtype("mm.input_projection.weight")) @ proj, F32)


def encode_gemma3(mm: Mmproj, image: Prepared) -> np.ndarray:
    p, w = mm.params, _Weights(mm)
    x = gemma3_embed(mm, image)
    d = p.d_head
    for i in range(p.n_layer):
        b = f"v.blk.{i}"
        h = layer_norm(x, w(f"{b}.ln1.weight"), w(f"{b}.ln1.bias"), p.eps)
        q, k, v = (w.linear(h, f"{b}.attn_{n}").reshape(-1, p.n_head, d) for n in "qkv")
        x = x + w.linear(attention(q, k, v, 1.0 / math.sqrt(d)), f"{b}.attn_out")
        h = layer_norm(x, w(f"{b}.ln2.weight"), w(f"{b}.ln2.bias"), p.eps)
        x = x + _mlp_maybe_swapped(mm, w, h, i)
    return gemma3_finish(mm, x, image)


def _mlp_maybe_swapped(mm: Mmproj, w: _Weights, h: np.ndarray, i: int) -> np.ndarray:
    b = f"v.blk.{i}"
    if not swapped(mm, i):
        return _mlp(w, h, b, mm.params.gelu)
    h = w.linear(h, f"{b}.ffn_down")
    h = gelu(h) if mm.params.gelu else (h / (1.0 + np.exp(-1.702 * h))).astype(F32)
    return w.linear(h, f"{b}.ffn_up")


def _merge_order(rows: int, cols: int, m: int) -> np.ndarray:
    """Raster patch indices in merge-window order: windows in raster, each m x m inside."""
    r = np.arange(rows).reshape(rows // m, m)[:, None, :, None]
    c = np.arange(cols).reshape(cols // m, m)[None, :, None, :]
    return (r * cols + c).reshape(-1)


def _resize_positions(table: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """ggml_interpolate (bilinear, corners aligned, as Qwen3-VL's linspace) of a square table."""
    n = round(math.sqrt(table.shape[0]))
    grid = table.reshape(n, n, -1)
    if (rows, cols) == (n, n):
        return table

    def axis(out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        step = F32(n - 1) / F32(out - 1) if out > 1 else F32(0)  # corners aligned
        pos = np.arange(out, dtype=F32) * step
        lo = np.clip(np.floor(pos).astype(np.int64), 0, n - 1)
        hi = np.clip(lo + 1, 0, n - 1)
        frac = np.clip(pos - lo.astype(F32), 0, 1).astype(F32)
        return lo, hi, frac

    y0, y1, dy = axis(rows)
    x0, x1, dx = axis(cols)
    dx3, dy3 = dx[None, :, None], dy[:, None, None]
    out = (
        grid[y0][:, x0] * (1 - dx3) * (1 - dy3)
        + grid[y0][:, x1] * dx3 * (1 - dy3)
        + grid[y1][:, x0] * (1 - dx3) * dy3
        + grid[y1][:, x1] * dx3 * dy3
    )
    return np.asarray(out, F32).reshape(rows * cols, -1)


def qwen3vl_embed(mm: Mmproj, image: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """The patches summed with their positions, in merge order, and the rope angles (T, d/2)."""
    p, w = mm.params, _Weights(mm)
    rows, cols = image.grid
    order = _merge_order(rows, cols, p.merge)
    x = w.patches(image.pixels, "v.patch_embd.weight")
    x = x + w.patches(image.pixels, "v.patch_embd.weight.1")
    x = x[order] + w("v.patch_embd.bias")
    x = x + _resize_positions(w("v.position_embd.weight"), rows, cols)[order]
    d, quarter = p.d_head, p.d_head // 4
    theta = powers(10000.0, d // 2, quarter)
    ys, xs = (order // cols).astype(F32), (order % cols).astype(F32)
    angles = np.concatenate([ys[:, None] * theta, xs[:, None] * theta], axis=1)  # (T, d/2)
    return np.asarray(x, F32), angles


def qwen3vl_finish(mm: Mmproj, x: np.ndarray, stack_inputs: list[np.ndarray]) -> np.ndarray:
    """The blocks' output (and the deepstack layers' outputs) merged into image tokens."""
    p, w = mm.params, _Weights(mm)
    group = p.merge * p.merge
    stacks = []
    for i, f in zip(mm.deepstack, stack_inputs, strict=True):
        s = f"v.deepstack.{i}"
        f = layer_norm(
            f.reshape(-1, group * p.n_embd), w(f"{s}.norm.weight"), w(f"{s}.norm.bias"), p.eps
        )
        stacks.append(w.linear(gelu(w.linear(f, f"{s}.fc1")), f"{s}.fc2"))
    x = layer_norm(x, w("v.post_ln.weight"), w("v.post_ln.bias"), p.eps)
    merged = x.reshape(-1, group * p.n_embd)
    out = w.linear(gelu(w.linear(merged, "mm.0")), "mm.2")
    return np.concatenate([out, *stacks], axis=1).astype(F32) if stacks else out


def encode_qwen3vl(mm: Mmproj, image: Prepared) -> np.ndarray:
    p, w = mm.params, _Weights(mm)
    x, angles = qwen3vl_embed(mm, image)
    d = p.d_head
    stack_inputs = []
    for i in range(p.n_layer):
        b = f"v.blk.{i}"
        h = layer_norm(x, w(f"{b}.ln1.weight"), w(f"{b}.ln1.bias"), p.eps)
        qkv = w.linear(h, f"{b}.attn_qkv").reshape(-1, 3, p.n_head, d)
        q, k = rope_halves(qkv[:, 0], angles), rope_halves(qkv[:, 1], angles)
        x = x + w.linear(attention(q, k, qkv[:, 2], 1.0 / math.sqrt(d)), f"{b}.attn_out")
        h = layer_norm(x, w(f"{b}.ln2.weight"), w(f"{b}.ln2.bias"), p.eps)
        x = x + _mlp(w, h, b, p.gelu)
        if i in mm.deepstack:
            stack_inputs.append(x)
    return qwen3vl_finish(mm, x, stack_inputs)


def gemma4v_embed(mm: Mmproj, image: Prepared) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The patches plus x/y positions (T, E), raster order, and the rope angles of columns
    and rows (T, d/4 each)."""
    p, w = mm.params, _Weights(mm)
    rows, cols = image.grid
    table = w("v.position_embd.weight")  # (2, n_pos, E): columns, then rows
    if max(rows, cols) > table.shape[1]:
        raise InvalidImageError(
            f"the image is {cols} x {rows} patches; {mm.path.name} has positions for "
            f"{table.shape[1]} a side (choose a smaller image budget)"
        )
    pixels = (image.pixels * F32(2) - F32(1)).astype(F32)
    x = w.patches(pixels, "v.patch_embd.weight")
    col = np.tile(np.arange(cols), rows)
    row = np.repeat(np.arange(rows), cols)
    x = x + table[0][col]
    x = x + table[1][row]
    d = p.d_head
    theta = powers(100.0, d // 2, d // 4)
    ax = col.astype(F32)[:, None] * theta  # (T, d/4)
    ay = row.astype(F32)[:, None] * theta
    return np.asarray(x, F32), ax, ay


def gemma4v_finish(mm: Mmproj, x: np.ndarray, image: Prepared) -> np.ndarray:
    """The blocks' output pooled, scaled, standardised, normed and projected."""
    p, w = mm.params, _Weights(mm)
    pooled = (avg_pool(x, image.grid, p.merge) * F32(math.sqrt(p.n_embd))).astype(F32)
    std_bias, std_scale = w.opt("v.std_bias"), w.opt("v.std_scale")
    if std_bias is not None and std_scale is not None:
        pooled = ((pooled - std_bias) * std_scale).astype(F32)
    pooled = rms_norm(pooled, None, p.eps)
    return w.linear(pooled, "mm.input_projection", bias=False)


def encode_gemma4v(mm: Mmproj, image: Prepared) -> np.ndarray:
    p, w = mm.params, _Weights(mm)
    x, ax, ay = gemma4v_embed(mm, image)
    d = p.d_head
    for i in range(p.n_layer):
        b = f"v.blk.{i}"
        h = rms_norm(x, w(f"{b}.ln1.weight"), p.eps)
        q, k, v = (w.linear(h, f"{b}.attn_{n}", bias=False).reshape(-1, p.n_head, d) for n in "qkv")
        q = rms_norm(q, w(f"{b}.attn_q_norm.weight"), p.eps)
        k = rms_norm(k, w(f"{b}.attn_k_norm.weight"), p.eps)
        half = d // 2
        q = np.concatenate([rope_halves(q[..., :half], ax), rope_halves(q[..., half:], ay)], -1)
        k = np.concatenate([rope_halves(k[..., :half], ax), rope_halves(k[..., half:], ay)], -1)
        v = rms_norm(v, None, p.eps)
        a = w.linear(attention(q, k, v, 1.0), f"{b}.attn_out", bias=False)
        x = x + rms_norm(a, w(f"{b}.attn_post_norm.weight"), p.eps)
        h = rms_norm(x, w(f"{b}.ln2.weight"), p.eps)
        g = w.linear(h, f"{b}.ffn_gate", bias=False)
        u = w.linear(h, f"{b}.ffn_up", bias=False)
        h = w.linear((gelu(g) * u).astype(F32), f"{b}.ffn_down", bias=False)
        x = x + rms_norm(h, w(f"{b}.ffn_post_norm.weight"), p.eps)
    return gemma4v_finish(mm, x, image)
