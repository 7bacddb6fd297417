"""A Gated DeltaNet layer's decode step, paired step and, on the native ops, prefill.

Owns the forms a DeltaNet layer takes for one token and, where the kernel's native ops serve
an int8 graph (``g.delta_op``), for any number: `recurrent_step`, the one-token delta rule in
ONNX ops (the then-branch of `engine.fastpath.deltanet`'s rule If); `fused_or_ops`, the If one
level up that runs a single token's whole middle, conv to gated norm, as one ``HearthDeltaNet``
op (`engine/kernels/deltastep.h`), two tokens (a speculative verify of one drafted token,
`engine.mtp`) as that op once per token, rounding as two decode steps, with the state after the
first as the tail (the rollback point), and more (a prefill) as one ``HearthDeltaRun``, which
equals its decode steps bit for bit; and the per-graph T == 1 / T == 2 tests every layer's
If reads (and `dense`, a small tensor as float32, which `engine.fastpath.deltanet` reads
too). Does not own the layer's projections, its conv / heads / gated norm in ONNX ops or the
chunked prefill rule of graphs without the native ops (`engine.fastpath.deltanet`, which calls
in here), nor the runner's state buffers (`engine.runners.onnx_runner`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.expert_op import DOMAIN


def fused_or_ops(g: Any, hp: HParams, i: int, x: str, proj: str, gates: str, before: int) -> str:
    """The layer's middle behind an If: one token takes ``HearthDeltaNet``
    (`engine/kernels/deltastep.h`, the native op computing what `deltanet._middle` does for
    T = 1), more take `_pair_or_run` (a prefill's tail states ``before`` tokens before its end).
    The If writes the layer's four states (the one-token branch's tail states are placeholders,
    as `recurrent_step`'s). The ops read the two projections whole."""
    from onnx import TensorProto, helper

    names = [f"present_conv.{i}", f"present_ssm.{i}", f"tail_conv.{i}", f"tail_ssm.{i}"]
    two = _two_tokens(g, x)  # in the outer graph: every layer's inner If reads it
    branches = []
    for one_token in (True, False):
        outer, g.nodes = g.nodes, []
        if one_token:
            outs = [g.name("delta_out"), g.name("conv_state"), g.name("ssm_state")]
            consts = _op_consts(g, hp, i)
            inputs = [proj, gates, f"past_conv.{i}", f"past_ssm.{i}", *consts]
            g.nodes.append(helper.make_node("HearthDeltaNet", inputs, outs, domain=DOMAIN))
            none = g.const("none", np.zeros(1, np.float32))
            outs += [g.op("Identity", [none]), g.op("Identity", [none])]
        else:
            outs = _pair_or_run(g, hp, i, two, proj, gates, before)
        nodes, g.nodes = g.nodes, outer
        values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs]
        branches.append(helper.make_graph(nodes, g.name(f"delta_net_{i}"), [], values))
    flat = g.name("delta_flat")
    g.nodes.append(
        helper.make_node(
            "If", [_one_token(g, x)], [flat, *names], then_branch=branches[0],
            else_branch=branches[1],
        )
    )  # fmt: skip
    return str(flat)


def _pair_or_run(
    g: Any, hp: HParams, i: int, two: str, proj: str, gates: str, before: int
) -> list[str]:
    """More than one token: two take ``HearthDeltaNet`` once per token, as two decode steps
    would, and give the state after the first as the tail (a speculative verify's rollback
    point, `engine.mtp`); more take `_run`. (out, conv, ssm, tail conv, tail ssm)."""
    from onnx import TensorProto, helper

    branches = []
    for pair in (True, False):
        outer, g.nodes = g.nodes, []
        if pair:
            consts = _op_consts(g, hp, i)
            axis = g.const("axis", np.array([1]))
            conv, ssm, rows = f"past_conv.{i}", f"past_ssm.{i}", []
            for t in range(2):
                bounds = [g.const("start", np.array([t])), g.const("end", np.array([t + 1]))]
                row = [g.op("Slice", [m, *bounds, axis]) for m in (proj, gates)]
                step = [g.name("delta_out"), g.name("conv_state"), g.name("ssm_state")]
                node = helper.make_node("HearthDeltaNet", [*row, conv, ssm, *consts], step,
                                        domain=DOMAIN)  # fmt: skip
                g.nodes.append(node)
                if t == 0:
                    tail = [g.op("Identity", [step[1]]), g.op("Identity", [step[2]])]
                rows.append(step[0])
                conv, ssm = step[1], step[2]
            outs = [g.op("Concat", rows, axis=1), conv, ssm, *tail]
        else:
            outs = _run(g, hp, i, proj, gates, before)
        nodes, g.nodes = g.nodes, outer
        values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs]
        branches.append(helper.make_graph(nodes, g.name(f"delta_pair_{i}"), [], values))
    results = [g.name(n) for n in ("delta_flat", "conv", "ssm", "tail_conv", "tail_ssm")]
    g.nodes.append(
        helper.make_node(
            "If", [two], results, then_branch=branches[0],
            else_branch=branches[1],
        )
    )  # fmt: skip
    return results


def _run(g: Any, hp: HParams, i: int, proj: str, gates: str, before: int) -> list[str]:
    """Three tokens or more (a prefill) as one ``HearthDeltaRun``: the decode step's op over
    the whole run, equal to its decode steps bit for bit, with the states ``before`` tokens
    before the end as the tail (in a run no longer than that, a speculative verify's, those
    after its first token: a draft rejected from its first id rolls back to them). It
    replaced `engine.fastpath.deltanet`'s chunked rule here
    (~60 small ONNX ops a layer: ~37 ms of a 512-token Qwen3.5-0.8B layer on two threads,
    against ~10-15). (out, conv, ssm, tail conv, tail ssm)."""
    from onnx import helper

    outs = [g.name(n) for n in ("delta_out", "conv_state", "ssm_state", "tail_conv", "tail_ssm")]
    inputs = [proj, gates, f"past_conv.{i}", f"past_ssm.{i}", *_op_consts(g, hp, i)]
    g.nodes.append(helper.make_node("HearthDeltaRun", inputs, outs, domain=DOMAIN, tail=before))
    return outs


def _two_tokens(g: Any, x: str) -> str:
    """A (1,) bool, whether x (1, T, ·) holds two tokens (made once per graph)."""
    if g.two_tokens is None:
        total = g.op("Shape", [x], start=1, end=2)
        g.two_tokens = g.op("Equal", [total, g.const("two", np.array([2]))])
    return str(g.two_tokens)


def _one_token(g: Any, x: str) -> str:
    """A (1,) bool, whether x (1, T, ·) holds one token: made once, every layer's If reads it."""
    if g.one_token is None:
        total = g.op("Shape", [x], start=1, end=2)
        g.one_token = g.op("Equal", [total, g.const("one", np.array([1]))])
    return str(g.one_token)


def _op_consts(g: Any, hp: HParams, i: int) -> list[str]:
    """``HearthDeltaNet``'s (and ``HearthDeltaRun``'s) weights: conv taps, dt bias, A, norm
    weight, epsilon."""
    p, taps = f"blk.{i}.", hp.ssm_conv_kernel
    return [
        g.const("conv", dense(g, p + "ssm_conv1d.weight").reshape(-1, taps)),
        g.const("dt", dense(g, p + "ssm_dt.bias")),
        g.const("a", dense(g, p + "ssm_a")),
        g.const("norm", dense(g, p + "ssm_norm.weight")),
        g.const("eps", np.array([hp.rms_eps], np.float32)),
    ]


def recurrent_step(
    g: Any, hp: HParams, i: int, q: str, k: str, v: str, beta: str, decay: str, total: str
) -> tuple[str, str, str]:
    """One token: S = S·exp(g); S += kᵀ·(β·(v − k·S)); o = q·S. Returns (out, state, a
    one-number placeholder for the tail state)."""
    nv, d = hp.ssm_v_heads, hp.ssm_head_dim
    placeholder = g.op("Identity", [g.const("none", np.zeros(1, np.float32))])
    row = g.const("shape", np.array([1, nv, 1, d]))  # T = 1: (1, 1, nv, d) is (1, nv, 1, d)
    per_head = g.const("shape", np.array([1, nv, 1, 1]))
    q_row, k_row, v_row = (g.op("Reshape", [t, row]) for t in (q, k, v))
    k_col = g.op("Reshape", [k, g.const("shape", np.array([1, nv, d, 1]))])
    kept = g.op("Mul", [f"past_ssm.{i}", g.op("Reshape", [g.op("Exp", [decay]), per_head])])
    recalled = g.op("MatMul", [k_row, kept])  # (1, nv, 1, d)
    delta = g.op("Mul", [g.op("Sub", [v_row, recalled]), g.op("Reshape", [beta, per_head])])
    state = g.op("Add", [kept, g.op("MatMul", [k_col, delta])])
    out = g.op(
        "Reshape", [g.op("MatMul", [q_row, state]), g.const("shape", np.array([1, 1, nv, d]))]
    )
    return str(out), str(state), str(placeholder)


def dense(g: Any, name: str) -> np.ndarray:
    """A small tensor as float32, whatever type the file keeps it in."""
    from gguf.quants import dequantize

    t = g.tensors[name]
    return np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
