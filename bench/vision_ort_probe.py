"""Probe for the fast path: Qwen3-VL's vision blocks as one ONNX Runtime graph, against numpy.

``python -m bench.vision_ort_probe MMPROJ.gguf [--threads 2]`` builds the tower's blocks
(LayerNorm, fused qkv, vision M-RoPE from precomputed cos/sin inputs, com.microsoft
MultiHeadAttention without a mask, GELU-tanh MLP) with float32 initializers dequantised from the
file, runs them on a 1024 x 768 picture's patches, and prints the session build time, the
blocks' time, the numpy encoder's whole time and the largest difference of the final rows (the
patch embedding, positions and merger are numpy on both sides).

A measurement, not the product: it answers "is an ORT graph faster here than numpy" before the
real builder (`engine.fastpath.builder`) is extended for vision (docs/vision.md). Float32
initializers are the tower's float32 copy the product must avoid.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np


class _Graph:
    """Nodes and float32 initializers with the names given."""

    def __init__(self) -> None:
        self.nodes: list[object] = []
        self.inits: list[object] = []

    def const(self, name: str, arr: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def op(self, kind: str, ins: list[str], out: str, domain: str = "", **attrs: object) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(kind, ins, [out], domain=domain, **attrs))  # type: ignore[arg-type]
        return out

    def split(self, x: str, sizes: list[int], axis: int, outs: list[str]) -> list[str]:
        from onnx import helper

        name = self.const(f"{outs[0]}.sizes", np.array(sizes, np.int64))
        self.nodes.append(helper.make_node("Split", [x, name], outs, axis=axis))
        return outs


def _rope(g: _Graph, t: str) -> str:
    r = g.op("Reshape", [t, "shape4"], f"{t}.r")
    a, b = g.split(r, [1, 1], 2, [f"{t}.a", f"{t}.b"])
    lo = g.op(
        "Sub", [g.op("Mul", [a, "cos"], f"{t}.ac"), g.op("Mul", [b, "sin"], f"{t}.bs")], f"{t}.lo"
    )
    hi = g.op(
        "Add", [g.op("Mul", [a, "sin"], f"{t}.as"), g.op("Mul", [b, "cos"], f"{t}.bc")], f"{t}.hi"
    )
    return g.op("Reshape", [g.op("Concat", [lo, hi], f"{t}.cat", axis=2), "shape3"], f"{t}.3")


def _linear(g: _Graph, mm: object, x: str, stem: str) -> str:
    w = mm.weight(f"{stem}.weight")  # type: ignore[attr-defined]
    b = mm.weight(f"{stem}.bias")  # type: ignore[attr-defined]
    y = g.op("MatMul", [x, g.const(f"{stem}.wT", w.T.astype(np.float32))], f"{stem}.mm")
    return g.op("Add", [y, g.const(f"{stem}.b", b)], f"{stem}.y")


def build_blocks(mm: object) -> bytes:
    """The serialized ONNX model of ``mm``'s (qwen3vl) transformer blocks."""
    from onnx import TensorProto, helper

    p = mm.params  # type: ignore[attr-defined]
    d, g, x = p.d_head, _Graph(), "x"
    g.const("shape4", np.array([0, p.n_head, 2, d // 2], np.int64))
    g.const("shape3", np.array([1, -1, p.n_embd], np.int64))
    g.const("shape2", np.array([-1, p.n_embd], np.int64))
    for i in range(p.n_layer):
        b = f"v.blk.{i}"

        def norm(src: str, which: str, b: str = b) -> str:
            w, bias = mm.weight(f"{b}.{which}.weight"), mm.weight(f"{b}.{which}.bias")  # type: ignore[attr-defined]
            return g.op("LayerNormalization", [src, g.const(f"{b}.{which}.w", w),
                        g.const(f"{b}.{which}.b", bias)], f"{b}.{which}.y", axis=-1,
                        epsilon=p.eps)  # fmt: skip

        qkv = _linear(g, mm, norm(x, "ln1"), f"{b}.attn_qkv")
        q, k, v = g.split(qkv, [p.n_embd] * 3, -1, [f"{b}.q", f"{b}.k", f"{b}.v"])
        v3 = g.op("Reshape", [v, "shape3"], f"{b}.v3")
        scale = 1.0 / math.sqrt(d)
        att = g.op("MultiHeadAttention", [_rope(g, q), _rope(g, k), v3], f"{b}.att",
                   domain="com.microsoft", num_heads=p.n_head, scale=scale)  # fmt: skip
        o = g.op("Reshape", [_linear(g, mm, att, f"{b}.attn_out"), "shape2"], f"{b}.o")
        x = g.op("Add", [x, o], f"{b}.x1")
        up = _linear(g, mm, norm(x, "ln2"), f"{b}.ffn_up")
        down = _linear(g, mm, g.op("Gelu", [up], f"{b}.gelu", approximate="tanh"), f"{b}.ffn_down")
        x = g.op("Add", [x, down], f"{b}.x2")
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        g.nodes, "qwen3vl_blocks",  # type: ignore[arg-type]
        [helper.make_tensor_value_info("x", f, ["T", p.n_embd]),
         helper.make_tensor_value_info("cos", f, ["T", 1, 1, d // 2]),
         helper.make_tensor_value_info("sin", f, ["T", 1, 1, d // 2])],
        [helper.make_tensor_value_info(x, f, ["T", p.n_embd])], g.inits,  # type: ignore[arg-type]
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 10
    return bytes(model.SerializeToString())


def main(argv: list[str] | None = None) -> int:
    import onnxruntime as ort

    from bench.vision_reference import synthetic_image
    from engine.vision import encoders as enc
    from engine.vision.mmproj import open_mmproj
    from engine.vision.ops import gelu, layer_norm, powers
    from engine.vision.preprocess import prepare

    parser = argparse.ArgumentParser(prog="python -m bench.vision_ort_probe", description=__doc__)
    parser.add_argument("mmproj", type=Path, help="a qwen3vl_merger mmproj")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    mm = open_mmproj(args.mmproj)
    p = mm.params
    prep = prepare(synthetic_image(768, 1024), p, mm.projector)
    rows, cols = prep.grid
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    start = time.perf_counter()
    session = ort.InferenceSession(build_blocks(mm), options, providers=["CPUExecutionProvider"])
    built = time.perf_counter() - start
    w = enc._Weights(mm)
    order = enc._merge_order(rows, cols, p.merge)
    x = w.patches(prep.pixels, "v.patch_embd.weight") + w.patches(
        prep.pixels, "v.patch_embd.weight.1"
    )
    x = (
        x[order]
        + w("v.patch_embd.bias")
        + enc._resize_positions(w("v.position_embd.weight"), rows, cols)[order]
    )
    theta = powers(10000.0, p.d_head // 2, p.d_head // 4)
    ys, xs = (order // cols).astype(np.float32), (order % cols).astype(np.float32)
    angles = np.concatenate([ys[:, None] * theta, xs[:, None] * theta], 1)[:, None, None, :]
    feed = {"x": x, "cos": np.cos(angles), "sin": np.sin(angles)}
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        out = session.run(None, feed)[0]
        best = min(best, time.perf_counter() - start)
    start = time.perf_counter()
    full = enc.encode(mm, prep)
    numpy_s = time.perf_counter() - start
    merged = layer_norm(out, w("v.post_ln.weight"), w("v.post_ln.bias"), p.eps)
    rows_ort = w.linear(gelu(w.linear(merged.reshape(-1, 4 * p.n_embd), "mm.0")), "mm.2")
    print(f"{prep.n_tokens} tokens ({x.shape[0]} patches): ORT session {built:.2f} s, ORT blocks "
          f"{best:.2f} s, numpy whole encode {numpy_s:.2f} s, "
          f"max|diff| {np.abs(rows_ort - full).max():.2g}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
