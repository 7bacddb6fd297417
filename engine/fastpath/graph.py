"""One ONNX graph builder for every GGUF architecture the fast path runs.

Owns turning a GGUF file (through `gguf.GGUFReader`) into an ONNX Runtime graph: per layer an
RMSNorm, the Q/K/V projections (fused when their quantisations match), GroupQueryAttention or,
where the kernel's native ops serve, its HearthAttention (rotation inside, KV cache in/out,
sliding window and soft-capping where the architecture has them), the output projection,
and a SwiGLU/GeGLU MLP; then the final norm and the head. What
differs between architectures comes from `engine.arch.ArchSpec` flags and `HParams`, never
from a copied builder. Weights are `engine.gguf.repack.Packed` arrays streamed into the
external-data file (`engine.fastpath.weights`). Does not run the graph
(`engine.runners.onnx_runner`), look up token embeddings (the runner does that from the GGUF
itself), or decide when the fast path is used (`engine.fastpath.cache`).

Exactness: a repacked weight is ``w = scale·(code − zp) + offset`` per block, equal to gguf-py's
dequantisation; MatMulNBits computes the first term, and the per-block offsets (Q4_1, Q4_K,
Q5_1, Q5_K, Q2_K minima) are added as ``blocksum(x)·offsetsᵀ``. Activations are quantised to
int8 per block inside the kernel (``accuracy_level=4``), as llama.cpp does with its Q8
activations; the float-activation kernels are far slower on CPUs like this one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.arch import ArchSpec
from engine.arch.hparams import HParams
from engine.fastpath.attention_op import CONTRIB, attention_node, cache_half, takes
from engine.fastpath.builder import ACCURACY_INT8, MS, GraphBuilder, one_row_pad
from engine.fastpath.deepstack import add_deepstack, deepstack_input
from engine.fastpath.dense_op import dense_mlp
from engine.fastpath.gemma4_moe import mlp_and_experts
from engine.fastpath.head import output_head
from engine.fastpath.hybrid import mixer, state_io
from engine.fastpath.image_block import both_ways_attention, has_image_block, image_block_inputs
from engine.fastpath.matmul_op import kernel_projection
from engine.fastpath.moe import moe_ffn
from engine.fastpath.per_layer import finish_layer, per_layer_inputs
from engine.fastpath.weights import WeightFile

EXACT_PAIRS = "hearth_exact_pairs"  # model property: a 2-token run equals two 1-token runs
# model property: text layers attend with HearthAttention, whose rows round alike in any run
KERNEL_ATTENTION = "hearth_kernel_attention"

GRAPH_VERSION = 27  # bump when the graph layout changes: converted caches are rebuilt


# 7: Q4_1/Q4_K blocks centred on zero point 8 (engine.gguf.repack): half the int8 error.
# 8: Q5_1/Q5_K/Q2_K codes centred likewise.
# 9: MoE experts as If nodes nested in their group's If (engine.fastpath.moe).
# 10: a hybrid prefill's DeltaNet states 16 tokens before its end as graph outputs (tail_*).
# 11: the head in row slices of at most HEAD_SLICE_BYTES codes (`engine.fastpath.head`).
# 12: every matrix on HearthMatMul in files past `matmul_op.every_min_bytes`.
# 13: a DeltaNet layer's decode step as one HearthDeltaNet op (`engine.fastpath.deltanet_step`).
# 14: ffn_down's HearthMatMul joins the MLP's gate | up itself (its ``glu`` attribute).
# 15: HearthDeltaNet reads the two input projections whole (no Splits before it).
# 21: gemma3/gemma4 pad a 1-token step's attention as every other graph (`_one_row_pad`).
# 22: qwen35 graphs step a 2-token run's DeltaNets per token (EXACT_PAIRS) and output the
#     residual stream ("hidden") where the file has an MTP block (`engine.mtp`).
# 18: gemma3/gemma4 graphs run an image's tokens both ways (`engine.fastpath.image_block`).
# 23: ... in one GroupQueryAttention pass with its causal mask off (was a second pass).
# 24: a file with only matrices on the kernel op keys them by the file, not "None".
# 26: text layers on HearthAttention (`engine.fastpath.attention_op`), Gemma's text branch
#     included; the cache folder's name also says so ("t"), so that HEARTH_ATTENTION_OP=0 and
#     float-reference graphs keep their own folders.
# 27: HearthAttention's causal attribute; Gemma's image branch on the op too (causal 0), and a
#     float16 K/V cache where every attention layer is the op's (the folder's "h").
# 16, 17: a dense hybrid's ssm_out on the kernel with int8 activations (MoE files: float).
# MoE experts as one op over the GGUF's mapped blocks (`engine.fastpath.expert_op`) are
# marked in the cache folder's name instead ("x"), so dense graphs are not rebuilt.
# 3: the batch dimension is symbolic ("batch"), so one session also runs batched decode steps
# (engine.runners.batched); Reshapes copy it (0) instead of fixing it to 1.
def build_model(
    reader: Any,
    hp: HParams,
    weights: WeightFile,
    progress: Callable[[float], None] | None = None,
    accuracy: int = ACCURACY_INT8,
    expert_key: str | None = None,
    dense_key: str | None = None,
    matrices: tuple[str, frozenset[str]] | None = None,
    delta_op: bool = False,
    attention_op: bool = False,
    kv_half: bool = False,
) -> Any:
    """The whole ONNX model for ``reader``'s GGUF (see the module docstring). ``expert_key``:
    MoE layers run their experts as `engine.fastpath.expert_op`'s op under that key;
    ``dense_key``: dense MLPs run as that op too (`engine.fastpath.dense_op`);
    ``attention_op``: text layers attend with the kernel's op (`engine.fastpath.attention_op`);
    ``kv_half``: over a float16 K/V cache, where every attention layer can (`cache_half`)."""
    from onnx import TensorProto, helper

    spec = hp.spec
    g = GraphBuilder(weights, reader, accuracy)
    g.pads_one_row = True  # this graph has the pad_one_row input (the embedding graph has not)
    g.expert_key = expert_key
    g.dense_key = dense_key
    if matrices is not None:  # (key, names): projections on the kernel op (fastpath.matmul_op)
        g.matrix_key, g.matrix_names_on = matrices
    g.delta_op = delta_op  # DeltaNet decode steps as one native op (fastpath.kernel_ops)
    f32 = TensorProto.FLOAT
    half, half_local = hp.rope_dim // 2, (hp.rope_dim_swa or hp.rope_dim) // 2
    inputs = [
        helper.make_tensor_value_info("inputs_embeds", f32, ["batch", "seq", hp.hidden]),
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch"]),
        helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
        helper.make_tensor_value_info("logits_start", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("pad_one_row", TensorProto.BOOL, [1]),  # _one_row_pad
        helper.make_tensor_value_info("cos_cache", f32, ["window", half]),
        helper.make_tensor_value_info("sin_cache", f32, ["window", half]),
    ]
    if hp.has_local_rope:
        inputs += [
            helper.make_tensor_value_info(n, f32, ["window", half_local])
            for n in ("cos_cache_local", "sin_cache_local")
        ]
    if (deepstack := deepstack_input(hp)) is not None:  # Qwen3-VL: image features per layer
        inputs.append(deepstack)
    if has_image_block(hp):  # Gemma: an image's tokens see each other both ways
        inputs += image_block_inputs(hp)
        g.image_block = True
    g.attention_op = attention_op  # image runs too, causal mask off (fastpath.image_block)
    g.kv_half = kv_half and attention_op and cache_half(hp)
    kv_type = TensorProto.FLOAT16 if g.kv_half else f32
    outputs = [helper.make_tensor_value_info("logits", f32, ["batch", "out_seq", hp.vocab])]
    hidden, pending = "inputs_embeds", None
    per_layer = per_layer_inputs(g, hp, inputs) if hp.per_layer_dim else None
    for i in range(hp.n_layers):
        if spec.hybrid:  # K/V or recurrent states, per layer kind (engine.fastpath.hybrid)
            layer_in, layer_out = state_io(hp, i, kv_type)
            inputs, outputs = inputs + layer_in, outputs + layer_out
        src = hp.kv_source(i)  # a KV-sharing layer (gemma4) writes only into its source's
        cache_shape: list[str | int | None] = ["batch", hp.kv_heads_at(src), "cache_len"]
        cache_shape.append(hp.head_dim_at(src))
        for kind in ("key", "value") if not spec.hybrid else ():
            if src == i:
                past = helper.make_tensor_value_info(f"past_{kind}.{i}", kv_type, cache_shape)
                inputs.append(past)
            outputs.append(
                helper.make_tensor_value_info(f"present_{kind}.{i}", kv_type, cache_shape)
            )
        hidden, pending = decoder_layer(g, hp, spec, i, hidden, pending)
        pending = add_deepstack(g, hp, i, pending)
        if spec.name == "gemma4":  # per-layer embeddings and the layer's output scale
            hidden, pending = finish_layer(g, hp, i, hidden, pending, per_layer)
        if progress:
            progress((i + 1) / hp.n_layers)
    if has_mtp_block(g, hp):  # every row's residual stream, the MTP drafter's input
        whole = g.op("Add", [hidden, pending]) if pending else hidden
        g.nodes.append(helper.make_node("Identity", [whole], ["hidden"]))
        outputs.append(helper.make_tensor_value_info("hidden", f32, ["batch", "seq", hp.hidden]))
    g.nodes.append(helper.make_node("Identity", [output_head(g, hp, hidden, pending)], ["logits"]))
    graph = helper.make_graph(g.nodes, f"hearth_{hp.arch}", inputs, outputs, g.inits)
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)]
    if expert_key is not None or dense_key is not None or g.matrix_names_used or g.attention_op:
        opsets.append(helper.make_opsetid(CONTRIB, 1))  # engine.fastpath.expert_op and others
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)
    props = {}
    if spec.hybrid and delta_op:  # a 2-token run steps its DeltaNets as two decode steps do
        props[EXACT_PAIRS] = "1"
    if g.attention_op:
        props[KERNEL_ATTENTION] = "1"
    if props:
        helper.set_model_props(model, props)
    return model


def has_mtp_block(g: GraphBuilder, hp: HParams) -> bool:
    """Whether the file appends a multi-token-prediction block (Qwen3.5) after its layers."""
    return hp.spec.hybrid and g.has(f"blk.{hp.n_layers}.nextn.eh_proj.weight")


def decoder_layer(
    g: GraphBuilder, hp: HParams, spec: ArchSpec, i: int, hidden: str, pending: str | None
) -> tuple[str, str]:
    """One decoder block; returns (residual stream, the block's last output not yet added)."""

    def w(n: str) -> str:
        return f"blk.{i}.{n}.weight"

    hidden, normed = g.add_norm(hidden, pending, w("attn_norm"), hp.rms_eps)
    if spec.hybrid:  # qwen35: Gated DeltaNet or gated attention, output projection included
        pending = mixer(g, hp, i, normed)
    else:
        attn = _attention(g, hp, spec, i, normed)
        pending = g.projection(attn, [w("attn_output")], f"l{i}.o")
        if g.has(o_bias := f"blk.{i}.attn_output.bias"):  # gpt-oss
            pending = g.op("Add", [pending, g.const("bias", g.vector(o_bias))])
    if spec.post_norms:
        pending = g.rms_norm(pending, w("post_attention_norm"), hp.rms_eps)
    pending = _residual_scaled(g, hp, pending)
    hidden, normed = g.add_norm(hidden, pending, w(spec.ffn_norm), hp.rms_eps)
    # routed experts, or the plain MLP
    pending = moe_ffn(g, hp, i, normed) if spec.moe else _mlp(g, hp, spec, i, normed)
    if spec.experts_beside_mlp and hp.n_experts:  # gemma4 26B-A4B (engine.fastpath.gemma4_moe)
        pending = mlp_and_experts(g, hp, i, hidden, pending)
    if spec.post_norms:
        pending = g.rms_norm(pending, w("post_ffw_norm"), hp.rms_eps)
    return hidden, _residual_scaled(g, hp, pending)


def _residual_scaled(g: GraphBuilder, hp: HParams, x: str) -> str:
    """granite: each block's output is scaled before the residual add."""
    if not hp.residual_scale:
        return x
    return g.op("Mul", [x, g.const("scale", np.array(hp.residual_scale, np.float32))])


def _attention(g: GraphBuilder, hp: HParams, spec: ArchSpec, i: int, x: str) -> str:
    from onnx import helper

    heads, kv_heads, head_dim = hp.n_heads, hp.kv_heads_at(i), hp.head_dim_at(i)
    src = hp.kv_source(i)
    qkv_inputs = _qkv(g, hp, spec, i, x) if src == i else _shared_qkv(g, hp, i, x, src)
    local = hp.sliding_window > 0 and hp.is_sliding(i)
    cos, sin = ("cos_cache_local", "sin_cache_local") if local and hp.has_local_rope else (
        "cos_cache", "sin_cache"
    )  # fmt: skip
    attrs: dict[str, Any] = {
        "num_heads": heads, "kv_num_heads": kv_heads, "do_rotary": int(hp.has_rope(i)),
        "rotary_interleaved": int(spec.rope_interleaved),
        "scale": hp.attn_scale or 1.0 / float(np.sqrt(head_dim)),
    }  # fmt: skip
    if hp.attn_softcap:
        attrs["softcap"] = hp.attn_softcap
    if local:
        attrs["local_window_size"] = hp.sliding_window  # keys at distance < window, as in HF
    out, sinks = f"attn.{i}", _sinks(g, i)
    cache = [f"past_key.{src}", f"past_value.{src}"]
    outputs = [out, f"present_key.{i}", f"present_value.{i}"]
    if g.attention_op and takes(heads, kv_heads, head_dim):  # the kernel's (fastpath.attention_op)
        sink = sinks[-1] if sinks else None

        def kernel(names: list[str], causal: bool = True) -> Any:
            return attention_node(g, qkv_inputs, cache, names, attrs, (cos, sin), sink,
                                  causal=causal)  # fmt: skip

        if g.image_block:  # Gemma: image runs attend both ways (the op, causal mask off)
            g.nodes.append(both_ways_attention(g, i, [], [], outputs, attrs, kernel))
        else:
            g.nodes.append(kernel(outputs))
        return out
    pad = one_row_pad(g) if g.pads_one_row else None
    seqlens, total, attn_in = "seqlens_k", "total_sequence_length", qkv_inputs
    if pad is not None:
        reps, seqlens, total, rows = pad
        attn_in = [g.op("Tile", [x, reps]) if x else "" for x in qkv_inputs]
    causal = [*attn_in, *cache, seqlens, total, cos, sin, *sinks]
    if g.image_block:  # Gemma: an image run (unpadded) attends both ways, in one pass
        image = [*qkv_inputs, *cache, "seqlens_k", "total_sequence_length", cos, sin, *sinks]
        g.nodes.append(both_ways_attention(g, i, causal, image, outputs, attrs))
    else:
        g.nodes.append(helper.make_node("GroupQueryAttention", causal, outputs, domain=MS, **attrs))
    if pad is not None:
        zero, axis = g.const("start", np.array([0])), g.const("axis", np.array([1]))
        out = g.op("Slice", [out, zero, rows, axis])
    return out


_one_row_pad = one_row_pad  # moved to the builder core (hybrid and DeltaNet layers use it too)


def _qkv(g: GraphBuilder, hp: HParams, spec: ArchSpec, i: int, x: str) -> list[str]:
    """GroupQueryAttention's query/key/value inputs (packed, or three when normed)."""
    p, head_dim = f"blk.{i}.", hp.head_dim_at(i)
    heads, kv_heads = hp.n_heads, hp.kv_heads_at(i)
    has_v = not spec.v_norm or g.has(p + "attn_v.weight")  # gemma4 31B global: V is K
    names = [p + "attn_qkv.weight"] if spec.fused_qkv else [p + f"attn_{n}.weight" for n in "qkv"]
    qkv = g.projection(x, names if has_v else names[:2], f"l{i}.qkv")
    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    if spec.qkv_bias:
        bias = np.concatenate([g.vector(p + f"attn_{n}.bias") for n in "qkv"])
        qkv = g.op("Add", [qkv, g.const("bias", bias)])
    if not spec.qk_norm:
        return [qkv, "", ""]
    sizes = g.const("split", np.array([q_dim, kv_dim, kv_dim][: 3 if has_v else 2]))
    q, k, *rest = g.ops("Split", [qkv, sizes], 3 if has_v else 2, axis=-1)
    v = rest[0] if has_v else k
    q = _head_norm(g, hp, q, p + "attn_q_norm.weight", heads, head_dim)
    k = _head_norm(g, hp, k, p + "attn_k_norm.weight", kv_heads, head_dim)
    if spec.v_norm:
        v = _head_norm(g, hp, v, "", kv_heads, head_dim)
    g.layer_kv[i] = (k, v)
    return [q, k, v]


def _shared_qkv(g: GraphBuilder, hp: HParams, i: int, x: str, src: int) -> list[str]:
    """gemma4 KV sharing: this layer's query, with the source layer's new keys and values.

    GroupQueryAttention appends them to the source's cache again (the same values at the
    same positions: the runner binds both layers' outputs to one buffer), then attends.
    """
    p, head_dim = f"blk.{i}.", hp.head_dim_at(i)
    q = g.projection(x, [p + "attn_q.weight"], f"l{i}.q")
    q = _head_norm(g, hp, q, p + "attn_q_norm.weight", hp.n_heads, head_dim)
    k, v = g.layer_kv[src]
    return [q, k, v]


def _sinks(g: GraphBuilder, i: int) -> list[str]:
    """gpt-oss: per-head sink logits join each softmax's denominator (GQA's head_sink)."""
    name = f"blk.{i}.attn_sinks.weight"
    return ["", "", g.const("sinks", g.vector(name))] if g.has(name) else []


def _head_norm(
    g: GraphBuilder, hp: HParams, x: str, weight: str, heads: int, head_dim: int = 0
) -> str:
    """RMSNorm over each head's vector (qwen3, gemma3 Q/K norms; no ``weight``: gemma4's V)."""
    head_dim = head_dim or hp.head_dim
    split = g.op("Reshape", [x, g.const("shape", np.array([0, -1, heads, head_dim]))])
    if weight:
        normed = g.rms_norm(split, weight, hp.rms_eps)
    else:
        ones = g.const("norm", np.ones(head_dim, np.float32))
        normed = g.op("SimplifiedLayerNormalization", [split, ones], axis=-1, epsilon=hp.rms_eps)
    return g.op("Reshape", [normed, g.const("shape", np.array([0, -1, heads * head_dim]))])


def _mlp(g: GraphBuilder, hp: HParams, spec: ArchSpec, i: int, x: str) -> str:
    if g.dense_key is not None:  # the GGUF's own blocks, mapped (engine.fastpath.dense_op)
        return dense_mlp(g, i, x)
    p = f"blk.{i}."
    names = (
        [p + "ffn_up.weight"]
        if spec.fused_gate_up
        else [p + "ffn_gate.weight", p + "ffn_up.weight"]
    )
    gate_up = g.projection(x, names, f"l{i}.gu")
    if spec.activation in ("silu", "gelu_tanh"):  # the kernel op joins the halves itself
        down = [p + "ffn_down.weight"]
        fused = kernel_projection(g, gate_up, down, f"l{i}.down", glu=spec.activation)
        if fused is not None:
            return fused
    sizes = g.const("split", np.array([hp.ffn_at(i), hp.ffn_at(i)]))
    gate, up = g.ops("Split", [gate_up, sizes], 2, axis=-1)
    if spec.activation == "gelu_tanh":
        act = g.op("FastGelu", [gate])
    else:
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])])
    return g.projection(g.op("Mul", [act, up]), [p + "ffn_down.weight"], f"l{i}.down")
