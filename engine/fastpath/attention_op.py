"""A layer's attention as the kernel's ``HearthAttention`` node, where the native ops serve.

Owns `attention_node`: the node that takes GroupQueryAttention's place in a text graph
(its inputs, with a fixed count, and its attributes; `engine.kernels.attention_op.h`
computes it) and `cache_half`, whether a graph's K/V cache is float16. Does not own when a
graph uses it (`engine.fastpath.plan.attention_op_on`), the projections and norms around it
(`engine.fastpath.graph`, `.hybrid`), or where Gemma's image runs branch off
(`engine.fastpath.image_block`; they run this op with its causal mask off).

The cache: float16 (``HearthAttentionHalf``) where every attention layer of the graph is this
op's, as llama.cpp's default cache. At depth a decode step streams the whole cache once per
layer: on the synthetic qwen3moe file (28 layers of 8 KV heads) at 2,000 tokens that was
459 MB a step in float32, twice llama.cpp's. The saved
chats' caches and the batch's buffers take the graph's type (the runner reads it).

Why: GroupQueryAttention weighs a decode step's query rows with MLAS's SGEMM, which first
packs the whole cached K and V of the layer, and it scores a sliding layer's whole past before
masking it. At a 2,000-token context on a 0.5B qwen2 that was 339 us of a layer's step where
the op takes ~80 us; a chat with a document decodes at that depth. The op computes every
query row alone (its bits do not depend on how many rows a run has), so a 1-token step needs
no second padded row (`builder.one_row_pad`) to round as a verified draft does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.builder import GraphBuilder

CONTRIB = "ai.onnx.contrib"
MAX_GROUP = 32  # query heads per KV head the op takes (its ATTN_QUERIES)


def takes(heads: int, kv_heads: int, head_dim: int) -> bool:
    """Whether the op takes a layer of these sizes (else GroupQueryAttention runs it)."""
    return (
        heads % kv_heads == 0
        and heads // kv_heads <= MAX_GROUP
        and head_dim % 16 == 0
        and head_dim <= 512
    )


def cache_half(hp: HParams) -> bool:
    """Whether a graph of ``hp`` whose plan asks for a float16 K/V cache
    (`engine.fastpath.plan.KernelPlan.kv_half`: the op on, ``HEARTH_KV_HALF`` not 0) can keep
    one: every attention layer is one the op takes. A graph holds one cache type: a layer left
    to GroupQueryAttention (float32 here) keeps the whole graph's cache float32."""
    layers = [i for i in range(hp.n_layers) if not hp.is_recurrent(i)]
    return all(takes(hp.n_heads, hp.kv_heads_at(i), hp.head_dim_at(i)) for i in layers)


def attention_node(
    g: GraphBuilder,
    qkv: list[str],
    cache: list[str],
    outputs: list[str],
    attrs: dict[str, Any],
    rope: tuple[str, str],
    sinks: str | None,
    *,
    causal: bool = True,
) -> Any:
    """The ``HearthAttention`` node for GroupQueryAttention's ``qkv`` (three names, or a
    packed one and two empty), ``cache`` (past key, value), ``outputs`` (attention, present
    key, value) and ``attrs`` (num_heads, kv_num_heads, do_rotary, rotary_interleaved, scale,
    and softcap / local_window_size where the layer has them). Over a float16 cache where the
    graph's is (``g.kv_half``); ``causal`` False: every row sees every key of its sequence but
    those a sliding window hides before it (an image's tokens, `engine.fastpath.image_block`)."""
    from onnx import helper

    packed = not qkv[1]
    inputs = [qkv[0]] * 3 if packed else list(qkv)
    none = g.const("no_sinks", np.zeros(0, np.float32))
    names = [*inputs, *cache, "seqlens_k", "total_sequence_length", *rope, sinks or none]
    full = {"softcap": 0.0, "local_window_size": -1, "rotary_interleaved": 0, **attrs}
    full["softcap"] = float(full["softcap"])
    full["scale"] = float(full["scale"])
    op = "HearthAttentionHalf" if g.kv_half else "HearthAttention"
    return helper.make_node(op, names, outputs, domain=CONTRIB, packed=int(packed),
                            causal=int(causal), **full)  # fmt: skip
