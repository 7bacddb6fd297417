"""The token mixers of hybrid architectures (qwen35): Gated DeltaNet or gated full attention.

Owns, for `engine.fastpath.graph`'s one builder, what a hybrid layer puts where llama has its
attention: `mixer` (a DeltaNet layer, `engine.fastpath.deltanet`, for the layers
`HParams.is_recurrent` names; otherwise Qwen3.5's gated attention — ``attn_q`` rows hold each
head's query then its output gate, q/k RMSNorm, partial neox rotary, GroupQueryAttention with
the KV cache, ``attn · sigmoid(gate)``, ``attn_output``) and `state_io`, the graph inputs and
outputs of each layer's cache: K/V for attention layers, the conv and delta-rule states for
recurrent ones (and their ``tail_*`` states a few tokens before a prefill's end, which the
runner keeps as a checkpoint). Qwen3.5's multimodal rope reduces to plain rope for text (one
position per token in every section), which is what GroupQueryAttention applies.
Does not own the runner's buffers (`engine.runners.onnx_runner`) or the MLP.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.arch.hparams import HParams, attention_scale
from engine.fastpath.attention_op import attention_node, takes
from engine.fastpath.builder import one_row_pad
from engine.fastpath.deltanet import delta_net, state_shapes


def mixer(g: Any, hp: HParams, i: int, x: str) -> str:
    """Layer ``i``'s token mixer over x (1, T, hidden), output projection included."""
    if hp.is_recurrent(i):
        return delta_net(g, hp, i, x)
    return _gated_attention(g, hp, i, x)


def state_io(hp: HParams, i: int, kv_type: int | None = None) -> tuple[list[Any], list[Any]]:
    """(graph inputs, graph outputs) holding layer ``i``'s cache (K/V of ``kv_type``, an
    ONNX element type: float32 unless given; recurrent states float32)."""
    from onnx import TensorProto, helper

    f32 = TensorProto.FLOAT
    kind = kv_type if kv_type is not None and not hp.is_recurrent(i) else f32
    pairs: list[tuple[str, list[str | int]]]
    if hp.is_recurrent(i):
        conv, ssm = state_shapes(hp)
        pairs = [("conv", list(conv)), ("ssm", list(ssm))]
    else:
        kv: list[str | int] = [1, hp.n_kv_heads, "cache_len", hp.head_dim]
        pairs = [("key", kv), ("value", kv)]
    ins = [helper.make_tensor_value_info(f"past_{n}.{i}", kind, s) for n, s in pairs]
    outs = [helper.make_tensor_value_info(f"present_{n}.{i}", kind, s) for n, s in pairs]
    if hp.is_recurrent(i):  # the states TAIL tokens before a prefill's end (a checkpoint)
        outs += [helper.make_tensor_value_info(f"tail_{n}.{i}", f32, None) for n, _ in pairs]
    return ins, outs


def _gated_attention(g: Any, hp: HParams, i: int, x: str) -> str:
    from onnx import helper

    p, hd = f"blk.{i}.", hp.head_dim
    q_dim, kv_dim = hp.n_heads * hd, hp.n_kv_heads * hd
    qkv = g.projection(x, [p + f"attn_{n}.weight" for n in "qkv"], f"l{i}.qkv")
    sizes = g.const("split", np.array([2 * q_dim, kv_dim, kv_dim]))
    q_gate, k, v = g.ops("Split", [qkv, sizes], 3, axis=-1)
    heads = g.op("Reshape", [q_gate, g.const("shape", np.array([1, -1, hp.n_heads, 2 * hd]))])
    q, gate = g.ops("Split", [heads, g.const("split", np.array([hd, hd]))], 2, axis=-1)
    flat = g.const("shape", np.array([1, -1, q_dim]))
    q = g.op("Reshape", [g.rms_norm(q, p + "attn_q_norm.weight", hp.rms_eps), flat])
    k_heads = g.op("Reshape", [k, g.const("shape", np.array([1, -1, hp.n_kv_heads, hd]))])
    k_flat = g.const("shape", np.array([1, -1, kv_dim]))
    k = g.op("Reshape", [g.rms_norm(k_heads, p + "attn_k_norm.weight", hp.rms_eps), k_flat])
    out = g.name("attn")
    # A 1-token step's attention as row 0 of a 2-row run (`one_row_pad`), as every graph's:
    # so it rounds as the same row of a verify run (a speculative draft, `engine.mtp`).
    # The kernel's op rounds every row alike by itself (`engine.fastpath.attention_op`).
    seqlens, total, qkv = "seqlens_k", "total_sequence_length", [q, k, v]
    if g.attention_op and takes(hp.n_heads, hp.n_kv_heads, hd):
        cache = [f"past_key.{i}", f"past_value.{i}"]
        outputs = [out, f"present_key.{i}", f"present_value.{i}"]
        attrs = {"num_heads": hp.n_heads, "kv_num_heads": hp.n_kv_heads, "do_rotary": 1,
                 "rotary_interleaved": 0, "scale": attention_scale(hp)}  # fmt: skip
        rope = ("cos_cache", "sin_cache")
        g.nodes.append(attention_node(g, qkv, cache, outputs, attrs, rope, None))
        gated = g.op("Mul", [out, g.op("Sigmoid", [g.op("Reshape", [gate, flat])])])
        return str(g.projection(gated, [p + "attn_output.weight"], f"l{i}.o"))
    if g.pads_one_row:
        reps, seqlens, total, rows = one_row_pad(g)
        qkv = [g.op("Tile", [t, reps]) for t in qkv]
    g.nodes.append(
        helper.make_node(
            "GroupQueryAttention",
            [*qkv, f"past_key.{i}", f"past_value.{i}", seqlens, total, "cos_cache", "sin_cache"],
            [out, f"present_key.{i}", f"present_value.{i}"],
            domain="com.microsoft", num_heads=hp.n_heads, kv_num_heads=hp.n_kv_heads,
            do_rotary=1, rotary_interleaved=0, scale=attention_scale(hp),
        )
    )  # fmt: skip
    if g.pads_one_row:
        out = g.op("Slice", [out, g.const("start", np.array([0])), rows,
                             g.const("axis", np.array([1]))])  # fmt: skip
    gated = g.op("Mul", [out, g.op("Sigmoid", [g.op("Reshape", [gate, flat])])])
    return str(g.projection(gated, [p + "attn_output.weight"], f"l{i}.o"))
