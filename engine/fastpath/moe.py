"""Mixture-of-experts feed-forward blocks (qwen3moe, gpt-oss) for the fast path's graph.

Owns `moe_ffn`: the router (top-k over the router logits, softmax over the k chosen; this is
qwen3moe's softmax-then-top-k with ``norm_topk_prob``, which llama.cpp applies to every
qwen3moe file, and gpt-oss's routing as it is) and one ``If`` node per expert whose branch runs
that expert's SwiGLU on the rows routed to it. An expert that no row chose is skipped without
touching its weights, so a decode step reads only the k routed experts: decode time follows the
active parameters, not the total. Each expert's weights are the GGUF's own blocks repacked for
`MatMulNBits` by the dense path's `GraphBuilder.linear`, per-block minima (Q4_K, Q5_K, Q2_K)
included, so every quant type the dense path runs is exact here too.

Why not ONNX Runtime's ``QMoE`` contrib op: on this CPU it decodes about twice as fast as this
graph (one 30B-A3B-shaped layer, 128 experts top-8, 4-bit: 0.63 ms against 1.27 ms; a dense
MatMulNBits of the same active size takes 1.41 ms), but it has no place for per-block float
minima (its zero points are integers) and takes only interleaved gate/up rows, so Q4_K_M
files (Q4_K gate/up/down) would not be the file's values. Does not own attention, norms or the
residual stream (`engine.fastpath.graph`), or the per-architecture flags (`engine.arch`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.graph import GraphBuilder, concat_rows

SWIGLU_LIMIT, SWIGLU_ALPHA = 7.0, 1.702  # gpt-oss (llama.cpp's swiglu_oai uses the same)


def moe_ffn(g: GraphBuilder, hp: HParams, i: int, x: str) -> str:
    """The MoE block of layer ``i`` on ``x`` (1, S, H) → (1, S, H)."""
    p = f"blk.{i}."
    logits = g.linear(x, g.packed(p + "ffn_gate_inp.weight"), f"l{i}.router")  # (1, S, E)
    if g.has(p + "ffn_gate_inp.bias"):
        logits = g.op("Add", [logits, g.const("bias", g.vector(p + "ffn_gate_inp.bias"))])
    routing, chosen = _route(g, hp, logits)
    empties = _empties(g, hp)
    parts = [
        _expert_branch(g, hp, (i, e), x, (routing, chosen), empties) for e in range(hp.n_experts)
    ]
    ys, rows = zip(*parts, strict=True)
    return _combine(g, hp, list(ys), list(rows))


def _route(g: GraphBuilder, hp: HParams, logits: str) -> tuple[str, str]:
    """(routing (2, S, E), chosen (E,) bool) for router ``logits`` (1, S, E).

    Routing row 0 holds each row's selections as 0/1 (a weight may underflow to 0 and still
    be chosen), row 1 the weights: softmax over the row's top-k logits, 0 elsewhere.
    """
    k = g.const("k", np.array([hp.n_experts_used], dtype=np.int64))
    top, index = g.ops("TopK", [logits, k], 2, "topk", axis=-1)  # (1, S, k) each
    probs = g.op("Softmax", [top], axis=-1)
    zero = g.const("zero", np.array(0.0, np.float32))
    zeros = g.op("Mul", [logits, zero])
    ones = g.op("Add", [g.op("Mul", [probs, zero]), g.const("one", np.array(1.0, np.float32))])
    picked = g.op("ScatterElements", [zeros, index, ones], axis=-1)  # (1, S, E)
    weights = g.op("ScatterElements", [zeros, index, probs], axis=-1)  # (1, S, E)
    count = g.op("ReduceMax", [picked, g.const("axes", np.array([0, 1]))], keepdims=0)
    chosen = g.op("Greater", [count, zero])  # (E,)
    return g.op("Concat", [picked, weights], axis=0), chosen


def _expert_branch(
    g: GraphBuilder,
    hp: HParams,
    at: tuple[int, int],
    x: str,
    route: tuple[str, str],
    empties: tuple[str, str],
) -> tuple[str, str]:
    """If expert ``e`` of layer ``i`` (``at``) is chosen by any row: (its weighted output
    (1, R, H), its rows (R,)); else empty outputs, and its weights are not read."""
    from onnx import TensorProto, helper

    (i, e), (routing, chosen) = at, route

    cond = g.op("Gather", [chosen, g.const("e", np.array(e))], axis=0)  # () bool
    saved = g.nodes, g.inits, g._bsums
    g.nodes, g.inits, g._bsums = [], [], {}
    try:
        y, rows = _expert(g, hp, i, e, x, routing)
        then_nodes, then_inits = g.nodes, g.inits
    finally:
        g.nodes, g.inits, g._bsums = saved
    # The branch's weights live in the main graph: ONNX Runtime prepacks them from there and
    # frees the originals, which it keeps beside the packed copy for a subgraph's own
    # initializers (measured: +0.8x the weights' size).
    g.inits.extend(then_inits)
    outs = [g.name(f"l{i}.e{e}.y"), g.name(f"l{i}.e{e}.rows")]
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    then_graph = helper.make_graph(
        [*then_nodes, helper.make_node("Identity", [y], [outs[0] + "t"]),
         helper.make_node("Identity", [rows], [outs[1] + "t"])],
        f"l{i}_e{e}_then", [],
        [helper.make_tensor_value_info(outs[0] + "t", f32, [1, "R", hp.hidden]),
         helper.make_tensor_value_info(outs[1] + "t", i64, ["R"])],
    )  # fmt: skip
    empty_y, empty_rows = empties
    else_graph = helper.make_graph(
        [helper.make_node("Identity", [empty_y], [outs[0] + "f"]),
         helper.make_node("Identity", [empty_rows], [outs[1] + "f"])],
        f"l{i}_e{e}_else", [],
        [helper.make_tensor_value_info(outs[0] + "f", f32, [1, 0, hp.hidden]),
         helper.make_tensor_value_info(outs[1] + "f", i64, [0])],
    )  # fmt: skip
    g.nodes.append(
        helper.make_node("If", [cond], outs, then_branch=then_graph, else_branch=else_graph)
    )
    return outs[0], outs[1]


def _expert(g: GraphBuilder, hp: HParams, i: int, e: int, x: str, routing: str) -> tuple[str, str]:
    """Expert ``e``'s SwiGLU over the rows that chose it, scaled by their routing weights."""
    column = g.op("Gather", [routing, g.const("e", np.array(e))], axis=-1)  # (2, S)
    picked, weight = g.ops("Split", [column, g.const("split", np.array([1, 1]))], 2, axis=0)
    mask = g.op("Greater", [picked, g.const("zero", np.array(0.0, np.float32))])  # (1, S)
    rows = g.op("Reshape", [g.op("NonZero", [g.op("Reshape", [mask, _flat(g)])]), _flat(g)])
    xr = g.op("Gather", [x, rows], axis=1)  # (1, R, H)
    parts = [_expert_weight(g, i, e, "gate"), _expert_weight(g, i, e, "up")]
    fused = concat_rows(parts)
    if fused is not None:
        h = g.linear(xr, fused, f"l{i}.e{e}.gu")  # (1, R, 2F)
    else:  # gate and up in different types (a custom mix)
        halves = [g.linear(xr, w, f"l{i}.e{e}.gu{j}") for j, w in enumerate(parts)]
        h = g.op("Concat", halves, axis=-1)
    h = _plus_bias(g, h, [_expert_bias(g, i, e, "gate"), _expert_bias(g, i, e, "up")])
    gate, up = g.ops("Split", [h, g.const("split", np.array([hp.expert_ffn] * 2))], 2, axis=-1)
    act = _swiglu_oai(g, gate, up) if hp.spec.activation == "swiglu_oai" else _swiglu(g, gate, up)
    y = g.linear(act, _expert_weight(g, i, e, "down"), f"l{i}.e{e}.down")  # (1, R, H)
    y = _plus_bias(g, y, [_expert_bias(g, i, e, "down")])
    scale = g.op("Gather", [g.op("Reshape", [weight, _flat(g)]), rows])  # (R,)
    scale = g.op("Unsqueeze", [scale, g.const("axes", np.array([0, 2]))])  # (1, R, 1)
    return g.op("Mul", [y, scale]), rows


def _expert_weight(g: GraphBuilder, i: int, e: int, kind: str) -> Any:
    """Expert ``e``'s slice of ``blk.i.ffn_{kind}_exps.weight``, repacked (rows = outputs)."""
    from engine.gguf.repack import repack

    name = f"blk.{i}.ffn_{kind}_exps.weight"
    t = g._tensors[name]
    k, n, n_experts = (int(s) for s in t.shape)
    data = np.asarray(t.data).reshape(n_experts, -1)[e]  # this expert's bytes only
    return repack(t.tensor_type, data, n, k, f"{name}[{e}]")


def _expert_bias(g: GraphBuilder, i: int, e: int, kind: str) -> np.ndarray | None:
    """Expert ``e``'s row of ``blk.i.ffn_{kind}_exps.bias`` (gpt-oss), or None."""
    name = f"blk.{i}.ffn_{kind}_exps.bias"
    if not g.has(name):
        return None
    t = g._tensors[name]
    rows: np.ndarray = np.asarray(t.data, dtype=np.float32).reshape(int(t.shape[-1]), -1)
    row: np.ndarray = rows[e]  # (E, rows) in numpy order: ggml's (rows, E)
    return row


def _plus_bias(g: GraphBuilder, x: str, biases: list[np.ndarray | None]) -> str:
    if any(b is None for b in biases):
        return x
    return g.op("Add", [x, g.const("bias", np.concatenate([b for b in biases if b is not None]))])


def _swiglu(g: GraphBuilder, gate: str, up: str) -> str:
    return g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])


def _swiglu_oai(g: GraphBuilder, gate: str, up: str) -> str:
    """gpt-oss: gate clamped above at 7, up to ±7; gate·σ(1.702·gate)·(up + 1)."""
    limit = g.const("limit", np.array(SWIGLU_LIMIT, np.float32))
    gate = g.op("Min", [gate, limit])
    up = g.op("Clip", [up, g.const("low", np.array(-SWIGLU_LIMIT, np.float32)), limit])
    sig = g.op(
        "Sigmoid", [g.op("Mul", [gate, g.const("alpha", np.array(SWIGLU_ALPHA, np.float32))])]
    )
    one = g.const("one", np.array(1.0, np.float32))
    return g.op("Mul", [g.op("Mul", [gate, sig]), g.op("Add", [up, one])])


def _flat(g: GraphBuilder) -> str:
    return g.const("shape", np.array([-1], dtype=np.int64))


def _empties(g: GraphBuilder, hp: HParams) -> tuple[str, str]:
    """Outer-scope empty outputs of a skipped expert: (1, 0, H) float32 and (0,) int64."""
    return (
        g.const("none", np.zeros((1, 0, hp.hidden), np.float32)),
        g.const("none", np.zeros((0,), np.int64)),
    )


def _combine(g: GraphBuilder, hp: HParams, ys: list[str], rows: list[str]) -> str:
    """Sum each row's k expert outputs: (1, S·k, H) in expert order → (1, S, H).

    The rows are sorted (TopK ascending over the row indices, k = S·k) and summed k at a time,
    rather than scattered with ScatterND's "add" reduction: no concurrent writes to one row.
    """
    y = g.op("Concat", ys, axis=1)  # (1, S·k, H)
    row = g.op("Concat", rows, axis=0)  # (S·k,)
    n = g.op("Shape", [row])
    _, order = g.ops("TopK", [row, n], 2, "sort", axis=0, largest=0, sorted=1)
    y = g.op("Gather", [y, order], axis=1)
    grouped = g.op(
        "Reshape", [y, g.const("shape", np.array([1, -1, hp.n_experts_used, hp.hidden]))]
    )  # (1, S, k, H)
    return g.op("ReduceSum", [grouped, g.const("axes", np.array([2]))], keepdims=0)
