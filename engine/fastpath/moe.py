"""Mixture-of-experts feed-forward blocks (qwen3moe, gpt-oss, qwen35moe) for the fast path.

Where the expert op runs (`engine.fastpath.expert_op`: the C kernel built, onnxruntime-
extensions installed, not ``HEARTH_EXPERT_KERNEL=0``), `routed_experts` is the router's TopK and
Softmax and then ONE ``HearthExperts`` node per layer, computing the routed experts from the
GGUF's own blocks, mapped (`_expert_op`): no expert is repacked. Otherwise, and in the rest
of this docstring, the nested-``If`` graph of MatMulNBits experts.

Owns `moe_ffn`: the router (top-k over the router logits, softmax over the k chosen; this is
qwen3moe's softmax-then-top-k with ``norm_topk_prob``, which llama.cpp applies to every qwen3moe
file, and gpt-oss's routing as it is) and `routed_experts`: one ``If`` node per group of about
sqrt(E/k) experts, whose branch holds one ``If`` per member running that expert's SwiGLU on the
rows routed to it, and one MatMul that weights and sums each row's k outputs. A group no row
chose costs one ``If`` and touches no weights; in a chosen group, an unchosen member costs one
``If`` too; so a decode step runs E/G + k·G ``If`` nodes and k experts' nodes and reads only the
k routed experts' weights: decode time follows the active parameters, not the total. (One
``If`` per expert cost a 128-expert qwen3moe layer ~0.6 ms of routing machinery on one core;
flat groups of 8 whose unchosen members ran on zero rows, ~12 nodes each, cost 0.25-0.4 ms
more per layer than these nested groups of 4.) The member ``If`` nodes are nested one level:
ONNX Runtime prepacks a weight only from its node's scope or the one above (two levels up it
ran MatMulNBits unpacked, ~100x slower), so a group's weights are its branch's initializers,
mapped from the weight file like the main graph's. Each expert's weights are the
GGUF's own blocks repacked for `MatMulNBits` by the dense path's `GraphBuilder.linear`, per-
block minima (Q4_K, Q5_K, Q2_K) included, so every quant type the dense path runs is exact here
too. qwen35moe adds a shared expert beside the routed ones (`_shared_expert`: a dense SwiGLU on
every row, scaled by a per-row sigmoid gate); its routing is qwen3moe's (softmax, top-k,
renormalised). Experts stored as one ``ffn_gate_up_exps`` (gate rows, then up rows; newer
converters) run as split ones do.

Gemma 4's experts (`engine.fastpath.gemma4_moe`) run through `routed_experts` too, with their
own expert body. Why not ONNX Runtime's ``QMoE`` contrib op: on this CPU it
decodes about twice as fast as this graph (one 30B-A3B-shaped layer, 128 experts top-8, 4-bit:
0.63 ms against 1.27 ms; a dense MatMulNBits of the same active size takes 1.41 ms), but it has
no place for per-block float minima (its zero points are integers) and takes only interleaved
gate/up rows, so Q4_K_M files (Q4_K gate/up/down) would not be the file's values. Does not own
attention, norms or the residual stream (`engine.fastpath.graph`), or the per-architecture flags
(`engine.arch`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.builder import GraphBuilder, concat_rows
from engine.fastpath.expert_op import DOMAIN, OP_TYPE
from engine.fastpath.matmul_op import kernel_projection
from engine.gguf.repack import repack

SWIGLU_LIMIT, SWIGLU_ALPHA = 7.0, 1.702  # gpt-oss (llama.cpp's swiglu_oai uses the same)


def moe_ffn(g: GraphBuilder, hp: HParams, i: int, x: str) -> str:
    """The MoE block of layer ``i`` on ``x`` (1, S, H) → (1, S, H)."""
    p = f"blk.{i}."
    logits = g.linear(x, g.packed(p + "ffn_gate_inp.weight"), f"l{i}.router")  # (1, S, E)
    if g.has(p + "ffn_gate_inp.bias"):
        logits = g.op("Add", [logits, g.const("bias", g.vector(p + "ffn_gate_inp.bias"))])
    routed = routed_experts(g, hp, (i, x), logits, lambda e, xr: _expert(g, hp, (i, e), xr))
    shared = _shared_expert(g, i, x)
    return routed if shared is None else g.op("Add", [routed, shared])


def routed_experts(
    g: GraphBuilder,
    hp: HParams,
    at: tuple[int, str],
    logits: str,
    expert: Callable[[int, str], str],
) -> str:
    """Σ over each row's top-k experts of softmax-over-k weight · ``expert(e, rows of x)``,
    for ``at`` = (layer, x).

    With the expert op (``g.expert_key`` set: `engine.fastpath.expert_op`), one node computes
    the sum from the file's mapped blocks and ``expert`` is not used.

    ``expert(e, xr)`` builds expert ``e``'s output (1, R, H) on its rows ``xr`` (1, R, H)
    inside an ``If`` branch (the caller's nodes land there; its weights go to the branch of
    the group ``If`` around it). One ``If`` covers a group of experts (`group_size`) and one
    nested ``If`` each member: a group or member no row chose is skipped without touching
    its weights. A decode step so runs E/G + k·G ``If`` nodes rather than E, and no node of
    an unchosen expert.
    """
    i, x = at
    if g.expert_key is not None:
        return _expert_op(g, hp, i, x, logits)
    route = _plan(g, hp, logits)
    size = group_size(hp.n_experts, hp.n_experts_used)
    empty = g.const("none", np.zeros((1, 0, hp.hidden), np.float32))
    ys = _group_branches(g, x, route, (hp.n_experts, size), expert, empty)
    return _weighted_sum(g, hp, ys, route)


def _expert_op(g: GraphBuilder, hp: HParams, i: int, x: str, logits: str) -> str:
    """The routing (top-k logits, softmax over the k) and one ``HearthExperts`` node: (1, S, H).

    The op takes any leading shape (batched decode, prefill), so x goes in as it is."""
    from onnx import helper

    k = g.const("k", np.array([hp.n_experts_used], dtype=np.int64))
    top, index = g.ops("TopK", [logits, k], 2, "topk", axis=-1)  # (1, S, k) each
    probs = g.op("Softmax", [top], axis=-1)
    out = g.name(f"l{i}.experts")
    exact = int(g.accuracy == 0)  # float activations: the float reference, for parity tests
    attrs: dict[str, Any] = {"key": g.expert_key, "layer": i, "exact": exact}
    g.nodes.append(helper.make_node(OP_TYPE, [x, index, probs], [out], domain=DOMAIN, **attrs))
    return out


def group_size(n_experts: int, k: int) -> int:
    """Experts per group ``If``: about sqrt(E/k), which balances the group ``If`` nodes a
    decode step runs (E/G) against the member ``If`` nodes of the k groups it chooses (k·G),
    each costing about the same (one core, CPU ms per 128-expert top-6 layer, different
    experts each step: G=4 1.77-1.79, G=8 1.88-1.90; the former flat groups of 8, whose
    unchosen members ran on zero rows, 2.15-2.20; the dense MLP of its active size 0.47).
    A divisor of E."""
    want = max(1, round(float(np.sqrt(n_experts / max(k, 1)))))
    return min((d for d in range(1, n_experts + 1) if n_experts % d == 0),
               key=lambda d: (abs(d - want), d))  # fmt: skip


def _plan(g: GraphBuilder, hp: HParams, logits: str) -> dict[str, str]:
    """The routing of every row: its (expert, row) pairs expert-major and their weights.

    Returns ``counts`` (E,) rows per expert, ``rows`` (S·k,) and ``weights`` (S·k,) in
    expert-major order, and ``order`` (S·k,), which puts those pairs in row order.
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

    # A chosen pair is marked by a one, not by its weight: a weight may underflow to 0.
    picked = by_expert(g.op("ScatterElements", [zeros, index, ones], axis=-1))
    weights = by_expert(g.op("ScatterElements", [zeros, index, probs], axis=-1))
    pairs = g.op("NonZero", [picked])  # (2, S·k): expert, row; expert-major
    rows = g.op("Reshape", [g.op("Gather", [pairs, g.const("one", np.array(1))], axis=0),
                            _flat(g)])  # fmt: skip
    weight_all = g.op("GatherND", [weights, g.op("Transpose", [pairs], perm=[1, 0])])
    counts = g.op("ReduceSum", [picked, g.const("axes", np.array([1]))], keepdims=0)
    counts = g.op("Cast", [counts], to=7)  # int64 (E,)
    n = g.op("Shape", [rows])
    _, order = g.ops("TopK", [rows, n], 2, "sort", axis=0, largest=0, sorted=1)
    return {"counts": counts, "rows": rows, "weights": weight_all, "order": order}


def _group_branches(
    g: GraphBuilder,
    x: str,
    route: dict[str, str],
    shape: tuple[int, int],
    expert: Callable[[int, str], str],
    empty: str,
) -> str:
    """Every chosen expert's output on its rows, (1, S·k, H) in expert-major order."""
    n_exp, size = shape
    n_groups = n_exp // size
    by_group = g.op("Reshape", [route["counts"], g.const("shape", np.array([n_groups, size]))])
    totals = g.op("ReduceSum", [by_group, g.const("axes", np.array([1]))], keepdims=0)
    rows = _split(g, route["rows"], totals, n_groups, "grows")
    counts = _split(g, by_group, g.const("split", np.ones(n_groups, np.int64)), n_groups, "gc")
    conds = _conditions(g, totals, n_groups)
    members = [range(j * size, (j + 1) * size) for j in range(n_groups)]
    ys = [
        _if(g, conds[j], f"g{j}", empty,
            lambda j=j: _group(g, x, rows[j], counts[j], members[j], expert, empty),  # type: ignore[misc]
            own_weights=size > 1)
        for j in range(n_groups)
    ]  # fmt: skip
    return ys[0] if n_groups == 1 else g.op("Concat", ys, axis=1)


def _group(
    g: GraphBuilder,
    x: str,
    rows: str,
    counts: str,
    members: range,
    expert: Callable[[int, str], str],
    empty: str,
) -> str:
    """The experts of one group on their shares of ``rows``: (1, R, H), expert-major.

    Each member is an ``If`` of its own inside the group's branch, so a member no row chose
    costs one ``If`` and none of its nodes. Its weights are the group branch's initializers:
    ONNX Runtime prepacks a weight from its node's scope or the one above, not from further up.
    """
    if len(members) == 1:
        return expert(members[0], g.op("Gather", [x, rows], axis=1))
    counts = g.op("Reshape", [counts, _flat(g)])  # (1, G) → (G,)
    parts = _split(g, rows, counts, len(members), "rows")
    conds = _conditions(g, counts, len(members))
    ys = [
        _if(g, c, f"e{e}", empty, lambda e=e, r=r: expert(e, g.op("Gather", [x, r], axis=1)))  # type: ignore[misc]
        for e, r, c in zip(members, parts, conds, strict=True)
    ]  # fmt: skip
    return g.op("Concat", ys, axis=1)


def _split(g: GraphBuilder, x: str, sizes: str, n: int, hint: str) -> list[str]:
    return [x] if n == 1 else g.ops("Split", [x, sizes], n, hint, axis=0)


def _conditions(g: GraphBuilder, counts: str, n: int) -> list[str]:
    """One (1,) bool per entry of ``counts`` (n,): whether it is > 0."""
    chosen = g.op("Greater", [counts, g.const("none", np.array(0, dtype=np.int64))])
    return _split(g, chosen, g.const("split", np.ones(n, np.int64)), n, "cond")


def _if(
    g: GraphBuilder,
    cond: str,
    hint: str,
    empty: str,
    then: Callable[[], str],
    own_weights: bool = False,
) -> str:
    """``then()``'s nodes as the then-branch of an ``If`` on ``cond``; else ``empty``.

    Initializers made while building the branch stay in the enclosing graph unless
    ``own_weights``: then they are the branch's own, for the ``If`` nodes nested in it (ONNX
    Runtime prepacks a weight from its node's scope or the one just above). Either way they
    are mapped from the weight file, whose pages the runner hands back once prepacked.
    """
    from onnx import TensorProto, helper

    saved, saved_bsums, saved_inits = g.nodes, g.bsums, g.inits
    g.nodes, g.bsums = [], {}
    if own_weights:
        g.inits = []
    try:
        y = then()
        then_nodes, then_inits = g.nodes, g.inits if own_weights else []
    finally:
        g.nodes, g.bsums, g.inits = saved, saved_bsums, saved_inits
    out, f32 = g.name(hint + ".y"), TensorProto.FLOAT
    then_graph = helper.make_graph(
        then_nodes, out + "_then", [], [helper.make_tensor_value_info(y, f32, None)], then_inits
    )
    else_graph = helper.make_graph(
        [helper.make_node("Identity", [empty], [out + "f"])], out + "_else", [],
        [helper.make_tensor_value_info(out + "f", f32, None)],
    )  # fmt: skip
    g.nodes.append(
        helper.make_node("If", [cond], [out], then_branch=then_graph, else_branch=else_graph)
    )
    return out


def _weighted_sum(g: GraphBuilder, hp: HParams, ys: str, route: dict[str, str]) -> str:
    """Each row's k outputs (1, S·k, H), expert-major, weighted and summed: (1, S, H).

    The outputs and weights are put in row order and reduced k at a time by one MatMul
    ((1, S, 1, k) · (1, S, k, H)), rather than scaled per expert or scattered with
    ScatterND's "add": no concurrent writes to one row, and no per-expert nodes.
    """
    order, k, h = route["order"], hp.n_experts_used, hp.hidden
    y = g.op("Reshape", [g.op("Gather", [ys, order], axis=1),
                         g.const("shape", np.array([1, -1, k, h]))])  # fmt: skip
    w = g.op("Reshape", [g.op("Gather", [route["weights"], order], axis=0),
                         g.const("shape", np.array([1, -1, 1, k]))])  # fmt: skip
    return g.op("Reshape", [g.op("MatMul", [w, y]), g.const("shape", np.array([1, -1, h]))])


def _shared_expert(g: GraphBuilder, i: int, x: str) -> str | None:
    """qwen35moe: a dense SwiGLU every row runs, times σ(x · ffn_gate_inp_shexp); or None.

    The gate is one logit per row (llama.cpp and transformers alike), so it is a float MatMul
    against the (H,) vector the file stores; the shared MLP's width comes from its tensors.
    """
    p = f"blk.{i}."
    if not g.has(p + "ffn_up_shexp.weight"):
        return None
    width = int(g.tensors[p + "ffn_up_shexp.weight"].shape[-1])  # ggml (H, F): F rows

    names = [p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight"]
    gate_up, down = g.projection(x, names, f"l{i}.sh.gu"), [p + "ffn_down_shexp.weight"]
    y = kernel_projection(g, gate_up, down, f"l{i}.sh.down", glu="silu")  # joins the halves
    if y is None:
        split = g.const("split", np.array([width] * 2))
        gate, up = g.ops("Split", [gate_up, split], 2, axis=-1)
        y = g.projection(_swiglu(g, gate, up), down, f"l{i}.sh.down")
    if not g.has(gate_name := p + "ffn_gate_inp_shexp.weight"):
        return y
    column = g.const("shexp_gate", g.vector(gate_name).reshape(-1, 1))  # (H, 1)
    return g.op("Mul", [y, g.op("Sigmoid", [g.op("MatMul", [x, column])])])


def _expert(g: GraphBuilder, hp: HParams, at: tuple[int, int], xr: str) -> str:
    """Expert ``e`` of layer ``i``'s SwiGLU on its rows ``xr`` (1, R, H) → (1, R, H)."""
    i, e = at
    if g.has(f"blk.{i}.ffn_gate_up_exps.weight"):  # newer converters: gate rows, then up
        parts = [expert_weight(g, i, e, "gate_up")]
    else:
        parts = [expert_weight(g, i, e, "gate"), expert_weight(g, i, e, "up")]
    fused = parts[0] if len(parts) == 1 else concat_rows(parts)
    if fused is not None:
        h = g.linear(xr, fused, f"l{i}.e{e}.gu")  # (1, R, 2F)
    else:  # gate and up in different types (a custom mix)
        halves = [g.linear(xr, w, f"l{i}.e{e}.gu{j}") for j, w in enumerate(parts)]
        h = g.op("Concat", halves, axis=-1)
    h = _plus_bias(g, h, [_expert_bias(g, i, e, "gate"), _expert_bias(g, i, e, "up")])
    gate, up = g.ops("Split", [h, g.const("split", np.array([hp.expert_ffn] * 2))], 2, axis=-1)
    act = _swiglu_oai(g, gate, up) if hp.spec.activation == "swiglu_oai" else _swiglu(g, gate, up)
    y = g.linear(act, expert_weight(g, i, e, "down"), f"l{i}.e{e}.down")  # (1, R, H)
    return _plus_bias(g, y, [_expert_bias(g, i, e, "down")])


def expert_weight(g: GraphBuilder, i: int, e: int, kind: str) -> Any:
    """Expert ``e``'s slice of ``blk.i.ffn_{kind}_exps.weight``, repacked (rows = outputs)."""

    name = f"blk.{i}.ffn_{kind}_exps.weight"
    t = g.tensors[name]
    k, n, n_experts = (int(s) for s in t.shape)
    data = np.asarray(t.data).reshape(n_experts, -1)[e]  # this expert's bytes only
    return repack(t.tensor_type, data, n, k, f"{name}[{e}]")


def _expert_bias(g: GraphBuilder, i: int, e: int, kind: str) -> np.ndarray | None:
    """Expert ``e``'s row of ``blk.i.ffn_{kind}_exps.bias`` (gpt-oss), or None."""
    name = f"blk.{i}.ffn_{kind}_exps.bias"
    if not g.has(name):
        return None
    t = g.tensors[name]
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
