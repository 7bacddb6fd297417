"""Gemma's image tokens attend to each other both ways: the graph's second attention pass.

llama.cpp decodes a Gemma 3 / Gemma 4 image's tokens in one batch with the causal mask off
(`mtmd_decode_use_non_causal`): each image token sees the whole prompt before it and every
token of its image, before and after it. GroupQueryAttention is causal only, so a graph of
such an architecture runs, under an ``If`` on the ``image_block`` input, a second pass of the
same layer's attention when a run is one image:

1. the layer's usual GroupQueryAttention appends the image's K/V to the cache (its output,
   causal, is then unused);
2. a second GroupQueryAttention reads that cache (prefix + the whole image) as its past and
   appends the image's K/V once more after it, so query ``i`` sits at index ``p + n + i`` and
   causally sees everything of the image; ``image_bias`` (-inf) hides the appended copies, and
   on sliding layers ``image_bias_local`` also hides keys outside the window by true position
   (the window of GroupQueryAttention counts indices, which the copies shift).
   ``image_cos`` / ``image_sin`` hold at rows ``p + n + i`` the rotation of position ``p + i``
   (GroupQueryAttention rotates by index; its ``position_ids`` are ignored on the CPU).

The runner fills these inputs (`engine.runners.image_rows`); a text run binds
``image_block`` False and one-element dummies, and the If runs nothing more. The second
pass's present K/V are dropped (the cache already holds the image from pass 1). Owns only
this piece; the layer is `engine.fastpath.graph`'s.
"""

from __future__ import annotations

from typing import Any

from engine.arch.hparams import HParams
from engine.fastpath.builder import MS, GraphBuilder

BIDIRECTIONAL_ARCHS = frozenset({"gemma3", "gemma4"})  # mtmd's non-causal projector families


def has_image_block(hp: HParams) -> bool:
    """Whether ``hp``'s graph runs an image's tokens with the second, bidirectional pass."""
    return hp.spec.name in BIDIRECTIONAL_ARCHS


def image_block_inputs(hp: HParams) -> list[Any]:
    """The graph inputs the second pass reads (see the module docstring)."""
    from onnx import TensorProto, helper

    f32 = TensorProto.FLOAT
    half, half_local = hp.rope_dim // 2, (hp.rope_dim_swa or hp.rope_dim) // 2
    names = [("image_cos", half), ("image_sin", half)]
    if hp.has_local_rope:
        names += [("image_cos_local", half_local), ("image_sin_local", half_local)]
    inputs = [helper.make_tensor_value_info("image_block", TensorProto.BOOL, [])]
    inputs += [helper.make_tensor_value_info(n, f32, ["image_window", h]) for n, h in names]
    inputs += [
        helper.make_tensor_value_info("image_seqlens_k", TensorProto.INT32, [1]),
        helper.make_tensor_value_info("image_total", TensorProto.INT32, []),
    ]
    inputs += [
        helper.make_tensor_value_info(n, f32, [1, 1, "seq", "image_keys"])
        for n in ("image_bias", "image_bias_local")
    ]
    return inputs


def bidirectional_attention(
    g: GraphBuilder,
    hp: HParams,
    i: int,
    qkv: list[str],
    sinks: list[str],
    attrs: dict[str, Any],
    causal_out: str,
) -> str:
    """Layer ``i``'s attention output: ``causal_out`` for a text run, the second pass's for an
    image run (``image_block``). ``qkv`` and ``attrs`` are the first pass's."""
    from onnx import TensorProto, helper

    local = "local_window_size" in attrs
    suffix = "_local" if local and hp.has_local_rope else ""
    second = {k: v for k, v in attrs.items() if k != "local_window_size"}  # the bias has it
    out = g.name(f"attn_image.{i}")
    node = helper.make_node(
        "GroupQueryAttention",
        [*qkv, f"present_key.{i}", f"present_value.{i}", "image_seqlens_k", "image_total",
         f"image_cos{suffix}", f"image_sin{suffix}", "",
         "image_bias_local" if local else "image_bias", *sinks[2:]],
        [out, g.name("image_key"), g.name("image_value")],
        domain=MS, **second,
    )  # fmt: skip
    then_branch = helper.make_graph(
        [node],
        f"image_block_{i}",
        [],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
    )
    same = g.name(f"attn_text.{i}")
    else_branch = helper.make_graph(
        [helper.make_node("Identity", [causal_out], [same])],
        f"text_block_{i}",
        [],
        [helper.make_tensor_value_info(same, TensorProto.FLOAT, None)],
    )
    return g.op("If", ["image_block"], then_branch=then_branch, else_branch=else_branch)
