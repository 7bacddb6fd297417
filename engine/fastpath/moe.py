"""Mixture-of-experts feed-forward blocks (qwen3moe, gpt-oss, qwen35moe) for the fast path.

Owns `moe_ffn`: the router (top-k over the router logits, softmax over the k chosen; this is
qwen3moe's softmax-then-top-k with ``norm_topk_prob``, which llama.cpp applies to every
qwen3moe file, and gpt-oss's routing as it is) and one ``If`` node per expert whose branch runs
that expert's SwiGLU on the rows routed to it. An expert that no row chose is skipped without
touching its weights, so a decode step reads only the k routed experts: decode time follows the
active parameters, not the total. Each expert's weights are the GGUF's own blocks repacked for
`MatMulNBits` by the dense path's `GraphBuilder.linear`, per-block minima (Q4_K, Q5_K, Q2_K)
included, so every quant type the dense path runs is exact here too. qwen35moe adds a shared
expert beside the routed ones (`_shared_expert`: a dense SwiGLU on every row, scaled by a
per-row sigmoid gate); its routing is qwen3moe's (softmax, top-k, renormalised). Experts stored
as one ``ffn_gate_up_exps`` (gate rows, then up rows; newer converters) run as split ones do.

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
    conds, rows, scales, rows_all = _route(g, hp, logits)
    empty = g.const("none", np.zeros((1, 0, hp.hidden), np.float32))
    ys = [
        _expert_branch(g, hp, (i, e), x, (conds[e], rows[e], scales[e]), empty)
        for e in range(hp.n_experts)
    ]
    routed = _combine(g, hp, ys, rows_all)
    shared = _shared_expert(g, i, x)
    return routed if shared is None else g.op("Add", [routed, shared])


def _shared_expert(g: GraphBuilder, i: int, x: str) -> str | None:
    """qwen35moe: a dense SwiGLU every row runs, times σ(x · ffn_gate_inp_shexp); or None.

    The gate is one logit per row (llama.cpp and transformers alike), so it is a float MatMul
    against the (H,) vector the file stores; the shared MLP's width comes from its tensors.
    """
    p = f"blk.{i}."
    if not g.has(p + "ffn_up_shexp.weight"):
        return None
    width = int(g._tensors[p + "ffn_up_shexp.weight"].shape[-1])  # ggml (H, F): F rows
    names = [p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight"]
    gate, up = g.ops(
        "Split", [g.projection(x, names, f"l{i}.sh.gu"), g.const("split", np.array([width] * 2))],
        2, axis=-1,
    )  # fmt: skip
    y = g.linear(_swiglu(g, gate, up), g.packed(p + "ffn_down_shexp.weight"), f"l{i}.sh.down")
    if not g.has(gate_name := p + "ffn_gate_inp_shexp.weight"):
        return y
    column = g.const("shexp_gate", g.vector(gate_name).reshape(-1, 1))  # (H, 1)
    return g.op("Mul", [y, g.op("Sigmoid", [g.op("MatMul", [x, column])])])


def _route(g: GraphBuilder, hp: HParams, logits: str) -> tuple[list[str], ...]:
    """Per expert: (chosen (1,) bool, its rows (R,), their weights (R,)); and all rows (S·k,).

    Each row's weights are the softmax over its top-k logits. The (expert, row) pairs come
    from one NonZero over the selections, expert-major, and are split per expert by count, so
    a decode step runs a handful of nodes per layer besides the k chosen experts' own.
    """
    n_exp = hp.n_experts
    k = g.const("k", np.array([hp.n_experts_used], dtype=np.int64))
    top, index = g.ops("TopK", [logits, k], 2, "topk", axis=-1)  # (1, S, k) each
    probs = g.op("Softmax", [top], axis=-1)
    zero = g.const("zero", np.array(0.0, np.float32))
    zeros = g.op("Mul", [logits, zero])
    ones = g.op("Add", [g.op("Mul", [probs, zero]), g.const("one", np.array(1.0, np.float32))])
    flat = g.const("shape", np.array([-1, n_exp], dtype=np.int64))

    def by_expert(values: str) -> str:  # (1, S, E) → (E, S)
        return g.op("Transpose", [g.op("Reshape", [values, flat])], perm=[1, 0])

    picked = by_expert(g.op("ScatterElements", [zeros, index, ones], axis=-1))  # 0/1
    weights = by_expert(g.op("ScatterElements", [zeros, index, probs], axis=-1))
    pairs = g.op("NonZero", [picked])  # (2, S·k): expert, row; expert-major
    rows_all = g.op("Reshape", [g.op("Gather", [pairs, g.const("one", np.array(1))], axis=0),
                                _flat(g)])  # fmt: skip
    weight_all = g.op("GatherND", [weights, g.op("Transpose", [pairs], perm=[1, 0])])
    counts = g.op("ReduceSum", [picked, g.const("axes", np.array([1]))], keepdims=0)
    counts = g.op("Cast", [counts], to=7)  # int64 (E,)
    rows = g.ops("Split", [rows_all, counts], n_exp, "rows", axis=0)
    scales = g.ops("Split", [weight_all, counts], n_exp, "scales", axis=0)
    chosen = g.op("Greater", [counts, g.const("none", np.array(0, dtype=np.int64))])
    conds = g.ops("Split", [chosen, g.const("split", np.ones(n_exp, np.int64))], n_exp, "cond")
    return conds, rows, scales, [rows_all]


def _expert_branch(
    g: GraphBuilder,
    hp: HParams,
    at: tuple[int, int],
    x: str,
    route: tuple[str, str, str],
    empty: str,
) -> str:
    """If expert ``e`` of layer ``i`` (``at``) is chosen by any row: its weighted output on
    its rows (1, R, H); else an empty output, and its weights are not read."""
    from onnx import TensorProto, helper

    (i, e), (cond, rows, scale) = at, route
    saved = g.nodes, g.inits, g._bsums
    g.nodes, g.inits, g._bsums = [], [], {}
    try:
        y = _expert(g, hp, (i, e), x, rows, scale)
        then_nodes, then_inits = g.nodes, g.inits
    finally:
        g.nodes, g.inits, g._bsums = saved
    # The branch's weights live in the main graph: ONNX Runtime prepacks them from there and
    # frees the originals, which it keeps beside the packed copy for a subgraph's own
    # initializers (measured: +0.8x the weights' size).
    g.inits.extend(then_inits)
    out = g.name(f"l{i}.e{e}.y")
    f32 = TensorProto.FLOAT
    then_graph = helper.make_graph(
        [*then_nodes, helper.make_node("Identity", [y], [out + "t"])], f"l{i}_e{e}_then", [],
        [helper.make_tensor_value_info(out + "t", f32, [1, "R", hp.hidden])],
    )  # fmt: skip
    else_graph = helper.make_graph(
        [helper.make_node("Identity", [empty], [out + "f"])], f"l{i}_e{e}_else", [],
        [helper.make_tensor_value_info(out + "f", f32, [1, 0, hp.hidden])],
    )  # fmt: skip
    g.nodes.append(
        helper.make_node("If", [cond], [out], then_branch=then_graph, else_branch=else_graph)
    )
    return out


def _expert(
    g: GraphBuilder, hp: HParams, at: tuple[int, int], x: str, rows: str, scale: str
) -> str:
    """Expert ``e``'s SwiGLU over ``rows`` of ``x``, scaled by their routing weights."""
    i, e = at
    xr = g.op("Gather", [x, rows], axis=1)  # (1, R, H)
    if g.has(f"blk.{i}.ffn_gate_up_exps.weight"):  # newer converters: gate rows, then up
        parts = [_expert_weight(g, i, e, "gate_up")]
    else:
        parts = [_expert_weight(g, i, e, "gate"), _expert_weight(g, i, e, "up")]
    fused = parts[0] if len(parts) == 1 else concat_rows(parts)
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
    scale = g.op("Unsqueeze", [scale, g.const("axes", np.array([0, 2]))])  # (1, R, 1)
    return g.op("Mul", [y, scale])


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


def _combine(g: GraphBuilder, hp: HParams, ys: list[str], rows_all: list[str]) -> str:
    """Sum each row's k expert outputs: (1, S·k, H) in expert order → (1, S, H).

    The outputs are put in row order (TopK ascending over their row indices, k = S·k) and
    summed k at a time, rather than scattered with ScatterND's "add" reduction: no concurrent
    writes to one row.
    """
    y = g.op("Concat", ys, axis=1)  # (1, S·k, H), the order of rows_all
    (row,) = rows_all
    n = g.op("Shape", [row])
    _, order = g.ops("TopK", [row, n], 2, "sort", axis=0, largest=0, sorted=1)
    y = g.op("Gather", [y, order], axis=1)
    grouped = g.op(
        "Reshape", [y, g.const("shape", np.array([1, -1, hp.n_experts_used, hp.hidden]))]
    )  # (1, S, k, H)
    return g.op("ReduceSum", [grouped, g.const("axes", np.array([2]))], keepdims=0)
