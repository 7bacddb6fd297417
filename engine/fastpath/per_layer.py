"""Gemma 4's per-layer pieces for the one graph builder: per-layer embeddings, output scales.

Owns `per_layer_inputs`, which declares the graph input ``per_layer_embeds`` (1, S, L·P) —
the runner's lookup of each token's row of ``per_layer_token_embd``, already scaled by
sqrt(P) — and combines it with the projection of the token embeddings into (1, S, L, P), as
transformers' ``get_per_layer_inputs`` + ``project_per_layer_inputs`` and llama.cpp's
``project_per_layer_inputs`` do; and `finish_layer`, the end of each gemma4 decoder block: the
per-layer embedding residual (gate, GELU, times this layer's slice, projection, RMSNorm) and
the block's ``layer_output_scale``, which scales the whole residual stream.
Does not own the attention or MLP of the block (`engine.fastpath.graph`) or the lookup of
embedding rows (`engine.runners.onnx_runner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.meta import EmbeddingSource

if TYPE_CHECKING:
    from engine.fastpath.builder import GraphBuilder

PER_LAYER_INPUT = "per_layer_embeds"
PER_LAYER_TABLE = "per_layer_token_embd.weight"


def per_layer_inputs(g: GraphBuilder, hp: HParams, inputs: list[Any]) -> str:
    """Declare ``per_layer_embeds``; return the combined per-layer inputs (1, S, L, P)."""
    from onnx import TensorProto, helper

    n, width = hp.n_layers, hp.per_layer_dim
    inputs.append(
        helper.make_tensor_value_info(PER_LAYER_INPUT, TensorProto.FLOAT, [1, "seq", n * width])
    )
    proj = g.projection("inputs_embeds", ["per_layer_model_proj.weight"], "ple.proj")
    proj = g.op("Mul", [proj, g.const("scale", np.array(hp.hidden**-0.5, np.float32))])
    shape = g.const("shape", np.array([1, -1, n, width]))
    proj = g.rms_norm(g.op("Reshape", [proj, shape]), "per_layer_proj_norm.weight", hp.rms_eps)
    summed = g.op("Add", [proj, g.op("Reshape", [PER_LAYER_INPUT, shape])])  # (1, S, L, P)
    return g.op("Mul", [summed, g.const("scale", np.array(2**-0.5, np.float32))])


def finish_layer(
    g: GraphBuilder, hp: HParams, i: int, hidden: str, pending: str, per_layer: str | None
) -> tuple[str, None]:
    """The residual stream after block ``i``'s per-layer embedding and output scale."""
    p = f"blk.{i}."
    h = g.op("Add", [hidden, pending])
    if per_layer is not None:
        gate = g.projection(h, [p + "inp_gate.weight"], f"l{i}.ple_gate")  # (1, S, P)
        this = g.op("Gather", [per_layer, g.const("layer", np.array(i, np.int64))], axis=2)
        mixed = g.op("Mul", [g.op("FastGelu", [gate]), this])
        out = g.projection(mixed, [p + "proj.weight"], f"l{i}.ple_proj")
        h = g.op("Add", [h, g.rms_norm(out, p + "post_norm.weight", hp.rms_eps)])
    if g.has(p + "layer_output_scale.weight"):
        scale = g.const("scale", g.vector(p + "layer_output_scale.weight"))
        h = g.op("Mul", [h, scale])
    return h, None


def per_layer_source(reader: Any, hp: HParams) -> dict[str, Any] | None:
    """Where the runner reads per-layer embedding rows (`EmbeddingSource` JSON), or None."""
    if not hp.per_layer_dim:
        return None

    table = next(t for t in reader.tensors if t.name == PER_LAYER_TABLE)
    return EmbeddingSource(
        offset=int(table.data_offset),
        ggml_type=int(table.tensor_type),
        rows=int(table.shape[1]),
        cols=int(table.shape[0]),
        scale=float(np.float32(hp.per_layer_dim) ** np.float32(0.5)),
    ).to_json()
