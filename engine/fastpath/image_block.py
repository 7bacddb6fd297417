"""Gemma's image tokens attend to each other both ways: one attention pass, causal mask off.

llama.cpp decodes a Gemma 3 / Gemma 4 image's tokens in one batch with the causal mask off
(`mtmd_decode_use_non_causal`): each image token sees the whole prompt before it and every
token of its image, before and after it. The runner runs every image in a run of its own
(`engine.runners.image_rows.segments`), so "both ways inside the image" is "no causal mask in
this run". A graph of such an architecture therefore holds each layer's attention as an ``If``
on the ``image_block`` input:

- else (text): the layer's usual causal attention, as every other graph runs it (the kernel's
  HearthAttention where the native ops serve, else GroupQueryAttention);
- then (one image): the same attention with its causal mask off: it appends the image's K/V
  to the cache and attends over the prefix and the whole image in one pass, so an image run
  costs what a text run of its length costs. On sliding layers the keys at distance ``>=
  window`` before a query stay hidden (query ``p + i`` against key ``j``, ``p + i - j >=
  window``; an image key after its query is never hidden, as llama.cpp's mask over the image).
  The kernel's op does that itself (``causal=0``, over the graph's cache, float16 included);
  GroupQueryAttention takes no ``local_window_size`` without its causal mask, so there
  ``image_bias_local`` (-inf) hides them.

Both branches write the same cache buffers (the If's outputs are the layer's ``present_*``,
bound to its ``past_*`` buffers: ONNX Runtime hands a branch its If's output buffers, so the
append stays in place). The runner fills ``image_block`` and the bias
(`engine.runners.image_rows.block_inputs`); a text run binds False and a one-element dummy.
Owns only this piece; the layer is `engine.fastpath.graph`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.arch.hparams import HParams
from engine.fastpath.builder import MS, GraphBuilder

BIDIRECTIONAL_ARCHS = frozenset({"gemma3", "gemma4"})  # mtmd's non-causal projector families


def has_image_block(hp: HParams) -> bool:
    """Whether ``hp``'s graph runs an image's tokens both ways (the If of this module)."""
    return hp.spec.name in BIDIRECTIONAL_ARCHS


def image_block_inputs(hp: HParams) -> list[Any]:
    """The graph inputs an image run reads (see the module docstring)."""
    from onnx import TensorProto, helper

    return [
        helper.make_tensor_value_info("image_block", TensorProto.BOOL, []),
        helper.make_tensor_value_info(
            "image_bias_local", TensorProto.FLOAT, [1, 1, "seq", "image_keys"]
        ),
    ]


def both_ways_attention(
    g: GraphBuilder,
    i: int,
    causal_inputs: list[str],
    image_inputs: list[str],
    outputs: list[str],
    attrs: dict[str, Any],
    kernel_node: Callable[[list[str], bool], Any] | None = None,
) -> Any:
    """Layer ``i``'s attention node for a graph with image blocks: an ``If`` on
    ``image_block`` whose outputs are ``outputs`` (attention, present key, present value).

    ``causal_inputs``: the text run's GroupQueryAttention inputs (padded as the layer pads a
    1-token step); ``image_inputs``: the image run's (unpadded query/key/value, the same
    cache, lengths and rotary tables); ``attrs``: the layer's GroupQueryAttention attributes;
    ``kernel_node``: where given, both branches' node for given output names and causal mask
    instead (the kernel's HearthAttention, `engine.fastpath.attention_op`; the inputs unread).
    """
    from onnx import TensorProto, helper

    local = "local_window_size" in attrs
    both = {k: v for k, v in attrs.items() if k != "local_window_size"}  # the bias has it
    extra = ["", "image_bias_local" if local else ""]  # position_ids, attention_bias
    sinks = image_inputs[9:]  # gpt-oss head sinks; Gemma has none
    inputs = [*image_inputs[:9], *extra, *sinks[2:]]
    while inputs and not inputs[-1]:  # no trailing empty optional inputs
        inputs.pop()

    cache = TensorProto.FLOAT16 if g.kv_half else TensorProto.FLOAT  # the op's cache type

    def branch(kind: str, node_inputs: list[str], node_attrs: dict[str, Any]) -> Any:
        names = [g.name(f"{kind}_{part}.{i}") for part in ("attn", "key", "value")]
        if kernel_node is not None:
            node = kernel_node(names, kind == "text")
        else:
            node = helper.make_node("GroupQueryAttention", node_inputs, names, domain=MS,
                                    **node_attrs)  # fmt: skip
        types = [TensorProto.FLOAT, cache, cache]
        return helper.make_graph(
            [node], f"{kind}_block_{i}", [],
            [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, types, strict=True)],
        )  # fmt: skip

    return helper.make_node(
        "If",
        ["image_block"],
        outputs,
        name=g.name(f"attention.{i}"),
        then_branch=branch("image", inputs, {**both, "causal": 0}),
        else_branch=branch("text", causal_inputs, attrs),
    )
