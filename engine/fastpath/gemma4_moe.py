"""Gemma 4's mixture-of-experts block (26B-A4B) for the fast path: experts beside the dense MLP.

Owns `mlp_and_experts`, the feed-forward part of a gemma4 block whose file has experts, as
transformers' ``Gemma4TextDecoderLayer`` and llama.cpp's ``gemma4-iswa.cpp`` run it::

    dense  = post_ffw_norm_1(MLP(ffn_norm(h)))                  # the usual GeGLU MLP
    router = rms_norm(h) · ffn_gate_inp.scale / sqrt(hidden) · ffn_gate_inpᵀ   (no weight norm)
    k experts by softmax over all logits, renormalised over the k (= softmax over the top-k)
    moe    = post_ffw_norm_2(Σ_k w_k · s_e · GeGLU_e(pre_ffw_norm_2(h)))   s_e: ffn_down_exps.scale
    return dense + moe                                          # post_ffw_norm follows (graph)

where ``h`` is the residual stream after attention. The routing and the combination of the
experts' rows are `engine.fastpath.moe`'s (`_route`, `_combine`); what differs is here: the
router's own normalised input, the experts' GeGLU on one fused ``ffn_gate_up_exps``, and the
per-expert output scale, applied inside each expert's ``If`` branch so that only the k routed
experts pay for it. An expert no row chose is skipped without touching its weights.
Does not own attention, the dense MLP or the residual stream (`engine.fastpath.graph`).
"""

from __future__ import annotations

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.graph import GraphBuilder
from engine.fastpath.moe import _combine, _expert_weight, _route


def mlp_and_experts(g: GraphBuilder, hp: HParams, i: int, h: str, dense: str) -> str:
    """Block ``i``'s dense MLP output ``dense`` (1, S, H) combined with its experts on ``h``."""
    p = f"blk.{i}."
    dense = g.rms_norm(dense, p + "post_ffw_norm_1.weight", hp.rms_eps)
    x = g.rms_norm(h, p + "pre_ffw_norm_2.weight", hp.rms_eps)
    conds, rows, weights, rows_all = _route(g, hp, _router_logits(g, hp, i, h))
    scales = g.vector(p + "ffn_down_exps.scale") if g.has(p + "ffn_down_exps.scale") else None
    empty = g.const("none", np.zeros((1, 0, hp.hidden), np.float32))
    ys = [
        _branch(g, hp, (i, e), x, (conds[e], rows[e], weights[e]), empty, scales)
        for e in range(hp.n_experts)
    ]
    moe = g.rms_norm(_combine(g, hp, ys, rows_all), p + "post_ffw_norm_2.weight", hp.rms_eps)
    return g.op("Add", [dense, moe])


def _router_logits(g: GraphBuilder, hp: HParams, i: int, h: str) -> str:
    """rms_norm(h) · scale / sqrt(hidden), projected to one logit per expert: (1, S, E).

    The norm has no weight of its own, so the router's scale and 1/sqrt(hidden) are its gamma.
    """
    p = f"blk.{i}."
    gamma = np.full(hp.hidden, np.float32(hp.hidden) ** np.float32(-0.5), np.float32)
    if g.has(p + "ffn_gate_inp.scale"):
        gamma = gamma * g.vector(p + "ffn_gate_inp.scale")
    normed = g.op(
        "SimplifiedLayerNormalization", [h, g.const("router_norm", gamma)], axis=-1,
        epsilon=hp.rms_eps,
    )  # fmt: skip
    return g.linear(normed, g.packed(p + "ffn_gate_inp.weight"), f"l{i}.router")


def _branch(
    g: GraphBuilder,
    hp: HParams,
    at: tuple[int, int],
    x: str,
    route: tuple[str, str, str],
    empty: str,
    scales: np.ndarray | None,
) -> str:
    """If expert ``e`` of layer ``i`` is chosen by any row: its weighted output on its rows
    (1, R, H); else an empty output, and its weights are not read (as `moe._expert_branch`)."""
    from onnx import TensorProto, helper

    (i, e), (cond, rows, weight) = at, route
    saved = g.nodes, g.inits, g._bsums
    g.nodes, g.inits, g._bsums = [], [], {}
    try:
        scale = None if scales is None else float(scales[e])
        y = _expert(g, hp, (i, e), x, rows, weight, scale)
        then_nodes, then_inits = g.nodes, g.inits
    finally:
        g.nodes, g.inits, g._bsums = saved
    g.inits.extend(then_inits)  # in the main graph: ONNX Runtime prepacks and frees them there
    out, f32 = g.name(f"l{i}.e{e}.y"), TensorProto.FLOAT
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
    g: GraphBuilder,
    hp: HParams,
    at: tuple[int, int],
    x: str,
    rows: str,
    weight: str,
    scale: float | None,
) -> str:
    """Expert ``e``'s GeGLU over ``rows`` of ``x``, times routing weight and expert scale."""
    i, e = at
    xr = g.op("Gather", [x, rows], axis=1)  # (1, R, H)
    if g.has(f"blk.{i}.ffn_gate_up_exps.weight"):  # Gemma 4's converter: gate rows, then up
        h = g.linear(xr, _expert_weight(g, i, e, "gate_up"), f"l{i}.e{e}.gu")  # (1, R, 2F)
        gate, up = g.ops("Split", [h, g.const("split", np.array([hp.expert_ffn] * 2))], 2, axis=-1)
    else:
        gate = g.linear(xr, _expert_weight(g, i, e, "gate"), f"l{i}.e{e}.g")
        up = g.linear(xr, _expert_weight(g, i, e, "up"), f"l{i}.e{e}.u")
    act = g.op("Mul", [g.op("FastGelu", [gate]), up])
    y = g.linear(act, _expert_weight(g, i, e, "down"), f"l{i}.e{e}.down")  # (1, R, H)
    if scale is not None:
        weight = g.op("Mul", [weight, g.const("expert_scale", np.array(scale, np.float32))])
    weight = g.op("Unsqueeze", [weight, g.const("axes", np.array([0, 2]))])  # (1, R, 1)
    return g.op("Mul", [y, weight])
