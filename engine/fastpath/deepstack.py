"""Qwen3-VL's deepstack in the fast-path graph: image features added after the first layers.

A Qwen3-VL vision projector outputs, per image token, the row that replaces the token's
embedding followed by one more row per *deepstack* layer (features taken from inside the
vision encoder). The language model adds the k-th of those rows to the hidden state after its
layer k (k < ``{arch}.n_deepstack_layers``), as llama.cpp's qwen3vl graph and transformers'
``_deepstack_process`` do; a text token adds nothing. The graph takes them as one input,
``deepstack`` (batch, rows, n_deepstack x hidden), zeros for text (the runner binds it).

Owns the input's declaration and the per-layer add. Does not own encoding images
(`engine.vision`) or filling the input (`engine.runners.onnx_runner`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath.builder import GraphBuilder

INPUT = "deepstack"


def deepstack_input(hp: HParams) -> Any:
    """The graph input holding a run's deepstack rows, or None where the model has none."""
    from onnx import TensorProto, helper

    if hp.deepstack_layers <= 0:
        return None
    width = hp.deepstack_layers * hp.hidden
    return helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["batch", "seq", width])


def add_deepstack(g: GraphBuilder, hp: HParams, i: int, pending: str) -> str:
    """Layer ``i``'s output not yet added to the residual stream, plus its deepstack rows.

    Added to the pending output rather than to the sum: the next layer's norm adds the two
    (`GraphBuilder.add_norm`), so the stream is hidden + (layer output + deepstack row)."""
    if i >= hp.deepstack_layers:
        return pending
    start = g.const("ds_start", np.array([i * hp.hidden]))
    end = g.const("ds_end", np.array([(i + 1) * hp.hidden]))
    axis = g.const("ds_axis", np.array([2]))
    rows = g.op("Slice", [INPUT, start, end, axis], f"l{i}.deepstack")
    return g.op("Add", [pending, rows])
