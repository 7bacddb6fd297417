"""A large dense file's MLPs as the expert op over the GGUF's own mapped blocks.

Owns the choice and the pieces that run each layer's feed-forward matrices (``ffn_gate``,
``ffn_up``, ``ffn_down``; phi3's fused ``ffn_up``: gate rows, then up rows) through
`engine.fastpath.expert_op`'s ``HearthExperts`` op as ONE expert chosen with weight 1 for every
row (ids (1, 1, 1) zero, weights (1, 1, 1) one: the op broadcasts them). Those matrices, ~88%
of a 7B's layer weights, are then never repacked, never written to ``weights.bin`` and never
prepacked by ONNX Runtime at a session's start, which is what a 7B's later open spent its
~39 s on; they cost their file size in memory, and 5-bit blocks (Q5_0: Qwen2.5's widths) are
read as 5-bit rather than expanded to MatMulNBits' 8-bit.

The pieces, in the order a model meets them:
- `dense_kernel_runs` / `mapped_dense_bytes` / `file_dense_bytes`: the policy (the kernel
  built, every FFN matrix type decoded by it, an architecture whose MLP is a plain
  SwiGLU/GeGLU, and a file of at least ``HEARTH_DENSE_KERNEL_MIN_BYTES``; ``HEARTH_DENSE_KERNEL``
  = 0/1 forces it) and what the mapped matrices then cost (memory and disk estimates).
- Conversion: `dense_key` (the file's op key, or None), `is_ffn_matrix` (what the repacking
  pipeline leaves out), `dense_mlp` (the layer's node, the MLP of `engine.fastpath.graph`) and
  `write_dense_layout` (``experts.json`` in expert_op's format: one E=1 entry per matrix).
- Opening needs nothing of its own: `engine.fastpath.expert_op.attach_experts` maps what the
  layout names.

Below the threshold it does not pay: one op call costs ~45 us of Python, and a small model's
weights sit partly in this machine's 480 MB L3, where ONNX Runtime's kernels are quicker.
Does not own the op, its registry or the kernel (`engine.fastpath.expert_op`,
`engine.kernels`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.cache_folders import gguf_cache_key
from engine.fastpath.expert_op import DOMAIN, LAYOUT_FILE, OP_TYPE
from engine.fastpath.plan import file_dense_bytes

if TYPE_CHECKING:
    from engine.fastpath.builder import GraphBuilder

# ------------------------------------------------------------------------ conversion


def dense_key(source: Path) -> str | None:
    """The op's key for this file's MLPs (its content's identity), or None: MatMulNBits."""
    if not file_dense_bytes(source):
        return None

    return f"{source.stem}-{gguf_cache_key(source)}"


def dense_mlp(g: GraphBuilder, i: int, x: str) -> str:
    """Layer ``i``'s MLP as one ``HearthExperts`` node on x (…, H) under ``g.dense_key``."""
    from onnx import helper

    ids = g.const("expert", np.zeros((1, 1, 1), np.int64))  # every row: expert 0, weight 1
    weights = g.const("weight", np.ones((1, 1, 1), np.float32))
    out = g.name(f"l{i}.mlp")
    exact = int(g.accuracy == 0)  # float activations: the float reference, for parity tests
    attrs: dict[str, Any] = {"key": g.dense_key, "layer": i, "exact": exact}
    g.nodes.append(helper.make_node(OP_TYPE, [x, ids, weights], [out], domain=DOMAIN, **attrs))
    return out


def write_dense_layout(folder: Path, key: str, reader: Any, hp: Any) -> None:
    """``folder``/experts.json (`engine.fastpath.expert_op`'s layout): per layer, where its
    FFN matrices lie in the file, each as a set of one expert."""

    tensors = {t.name: t for t in reader.tensors}
    kinds = {"gate_up": "up", "down": "down"} if hp.spec.fused_gate_up else {
        "gate": "gate", "up": "up", "down": "down"}  # fmt: skip
    layers = {
        str(i): {kind: _one_expert(tensors[f"blk.{i}.ffn_{name}.weight"])
                 for kind, name in kinds.items()}
        for i in range(hp.n_layers)
    }  # fmt: skip
    text = json.dumps({"key": key, "activation": hp.spec.activation, "layers": layers})
    (folder / LAYOUT_FILE).write_text(text, encoding="utf-8")


def _one_expert(t: Any) -> dict[str, int]:
    cols, rows = (int(s) for s in t.shape)  # ggml order: the row length first
    return {"offset": int(t.data_offset), "type": int(t.tensor_type), "bytes": int(t.n_bytes),
            "rows": rows, "cols": cols, "experts": 1}  # fmt: skip
