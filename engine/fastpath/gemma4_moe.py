"""Gemma 4's mixture-of-experts block (26B-A4B) for the fast path: experts beside the dense MLP.

Owns `mlp_and_experts`, the feed-forward part of a gemma4 block whose file has experts, as
transformers' ``Gemma4TextDecoderLayer`` and llama.cpp's ``gemma4-iswa.cpp`` run it::

    dense  = post_ffw_norm_1(MLP(ffn_norm(h)))                  # the usual GeGLU MLP
    router = rms_norm(h) · ffn_gate_inp.scale / sqrt(hidden) · ffn_gate_inpᵀ   (no weight norm)
    k experts by softmax over all logits, renormalised over the k (= softmax over the top-k)
    moe    = post_ffw_norm_2(Σ_k w_k · s_e · GeGLU_e(pre_ffw_norm_2(h)))   s_e: ffn_down_exps.scale
    return dense + moe                                          # post_ffw_norm follows (graph)

where ``h`` is the residual stream after attention. The routing, the grouped ``If`` branches
and the weighted sum of each row's k outputs are `engine.fastpath.moe.routed_experts` (an
expert no row chose reads no weights); what differs is here: the router's own normalised
input, the experts' GeGLU on one fused ``ffn_gate_up_exps``, and the per-expert output scale,
a Mul inside the expert's branch, so only the routed experts pay for it. Where the expert op
runs (`engine.fastpath.expert_op`), `routed_experts` is one node instead and the GeGLU and
output scale are the kernel's (``gelu_tanh``, ``out_scale`` from ``ffn_down_exps.scale``).
Does not own attention, the dense MLP or the residual stream (`engine.fastpath.graph`).
"""

from __future__ import annotations

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.builder import GraphBuilder
from engine.fastpath.moe import expert_weight, routed_experts


def mlp_and_experts(g: GraphBuilder, hp: HParams, i: int, h: str, dense: str) -> str:
    """Block ``i``'s dense MLP output ``dense`` (1, S, H) combined with its experts on ``h``."""
    p = f"blk.{i}."
    dense = g.rms_norm(dense, p + "post_ffw_norm_1.weight", hp.rms_eps)
    x = g.rms_norm(h, p + "pre_ffw_norm_2.weight", hp.rms_eps)
    scales = g.vector(p + "ffn_down_exps.scale") if g.has(p + "ffn_down_exps.scale") else None
    routed = routed_experts(
        g, hp, (i, x), _router_logits(g, hp, i, h),
        lambda e, xr: _expert(g, hp, (i, e), xr, scales),
    )  # fmt: skip
    moe = g.rms_norm(routed, p + "post_ffw_norm_2.weight", hp.rms_eps)
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


def _expert(
    g: GraphBuilder, hp: HParams, at: tuple[int, int], xr: str, scales: np.ndarray | None
) -> str:
    """Expert ``e``'s GeGLU on its rows ``xr`` (1, R, H), times its output scale: (1, R, H)."""
    i, e = at
    if g.has(f"blk.{i}.ffn_gate_up_exps.weight"):  # Gemma 4's converter: gate rows, then up
        h = g.linear(xr, expert_weight(g, i, e, "gate_up"), f"l{i}.e{e}.gu")  # (1, R, 2F)
        gate, up = g.ops("Split", [h, g.const("split", np.array([hp.expert_ffn] * 2))], 2, axis=-1)
    else:
        gate = g.linear(xr, expert_weight(g, i, e, "gate"), f"l{i}.e{e}.g")
        up = g.linear(xr, expert_weight(g, i, e, "up"), f"l{i}.e{e}.u")
    act = g.op("Mul", [g.op("FastGelu", [gate]), up])
    y = g.linear(act, expert_weight(g, i, e, "down"), f"l{i}.e{e}.down")  # (1, R, H)
    if scales is None:
        return y
    return g.op("Mul", [y, g.const("expert_scale", np.array(scales[e], np.float32))])
