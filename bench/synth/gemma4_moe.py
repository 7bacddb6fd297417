"""The mixture-of-experts part of synthetic Gemma 4 files (26B-A4B), as llama.cpp lays it out.

Owns what a Gemma 4 MoE block adds beside the dense MLP in the GGUF (llama.cpp's
``gemma4-iswa.cpp`` and its loader): the router ``ffn_gate_inp`` (float32, as llama-quantize
leaves it) with its input scale ``ffn_gate_inp.scale`` (transformers' ``router.scale``), the
experts as one ``ffn_gate_up_exps`` (gate rows, then up rows) and ``ffn_down_exps`` with the
per-expert output scale ``ffn_down_exps.scale`` (``router.per_expert_scale``), the three extra
norms (``post_ffw_norm_1`` after the dense MLP, ``pre_ffw_norm_2`` / ``post_ffw_norm_2`` around
the experts), the ``expert_*`` keys, and the map to transformers' names. Routers are drawn
wide (`ROUTER_STD`), so each token's top-k is decisive: random routers otherwise meet
near-ties, where float rounding alone picks a different expert. The dense parts of the file
are `bench.synth.gemma4`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter

from bench.synth.blocks import random_blocks, reference_weights
from bench.synth.configs import TOKENIZER_VOCAB

# The router sees rms_norm(x)·scale/sqrt(hidden) (a vector of norm ~1), so logits spread ~4.
ROUTER_STD = 4.0
TINY_STD = 0.05
_S, _F = "sliding_attention", "full_attention"

# 26B-A4B's features at tiny size: experts beside a dense MLP in every layer, global heads twice
# as wide with their own KV-head count and V = K, no per-layer embeddings, no KV sharing.
# Expert width 256 so Q4_K_M really stores them in Q4_K (with its minima).
TINY_GEMMA4_MOE: dict[str, Any] = {
    "vocab_size": TOKENIZER_VOCAB,
    "vocab_size_per_layer_input": TOKENIZER_VOCAB,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 6,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "global_head_dim": 128,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": True,
    "layer_types": [_S, _S, _F, _S, _S, _F],
    "sliding_window": 8,
    "num_kv_shared_layers": 0,
    "use_double_wide_mlp": False,
    "hidden_size_per_layer_input": 0,
    "final_logit_softcapping": 30.0,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "enable_moe_block": True,
    "num_experts": 8,
    "top_k_experts": 3,
    "moe_intermediate_size": 256,
    "rope_parameters": {
        _S: {"rope_type": "default", "rope_theta": 10000.0},
        _F: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6},
    },
}
# google/gemma-4-26B-A4B's text shapes as third-party copies of its config.json give them
# (NOT checked against the Hugging Face repo: no access from here): 30 layers (5 sliding :
# 1 global), hidden 2816, dense MLP 2112, 128 experts of 704, 8 routed, 16 heads, 8 KV heads
# (global: 2, V = K), heads 256 (global 512), window 1024, a 262k vocabulary.
A4B_GEMMA4: dict[str, Any] = {
    **TINY_GEMMA4_MOE,
    "vocab_size": 262144,
    "vocab_size_per_layer_input": 262144,
    "hidden_size": 2816,
    "intermediate_size": 2112,
    "num_hidden_layers": 30,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 256,
    "global_head_dim": 512,
    "num_global_key_value_heads": 2,
    "layer_types": ([_S] * 5 + [_F]) * 5,
    "sliding_window": 1024,
    "num_experts": 128,
    "top_k_experts": 8,
    "moe_intermediate_size": 704,
    "max_position_embeddings": 262144,
}
# The benchmark row's file: 6 of those 30 layers (one sliding/global period; ~3.5 GB in Q4_K_M
# instead of ~15), so the file and its converted graph fit this machine's disk beside the others.
BENCH_GEMMA4_MOE: dict[str, Any] = {
    **A4B_GEMMA4,
    "num_hidden_layers": 6,
    "layer_types": [_S] * 5 + [_F],
}


def moe_specs(c: Any, p: str) -> list[tuple[str, tuple[int, ...], str]]:
    """Block ``p``'s MoE tensors (GGUF name, numpy shape, kind), or [] for a dense model."""
    if not getattr(c, "enable_moe_block", False):
        return []
    h, n_exp, width = c.hidden_size, c.num_experts, c.moe_intermediate_size
    return [
        (p + "post_ffw_norm_1.weight", (h,), "norm"),
        (p + "pre_ffw_norm_2.weight", (h,), "norm"),
        (p + "post_ffw_norm_2.weight", (h,), "norm"),
        (p + "ffn_gate_inp.weight", (n_exp, h), "router"),
        (p + "ffn_gate_inp.scale", (h,), "norm"),
        (p + "ffn_gate_up_exps.weight", (n_exp, 2 * width, h), "experts"),
        (p + "ffn_down_exps.weight", (n_exp, h, width), "experts"),
        (p + "ffn_down_exps.scale", (n_exp,), "scale"),
    ]


def router_types(
    specs: list[tuple[str, tuple[int, ...], str]], types: dict[str, GGMLQuantizationType]
) -> None:
    """Routers stay float32 (llama-quantize never quantises ``ffn_gate_inp``)."""
    types.update({n: GGMLQuantizationType.F32 for n, _, kind in specs if kind == "router"})


def moe_data(
    rng: np.random.Generator, shape: tuple[int, ...], kind: str, qtype: Any, std: float = TINY_STD
) -> np.ndarray | None:
    """The file data of a MoE tensor of ``kind``, or None when ``kind`` is not one of them."""
    if kind == "router":
        return (rng.standard_normal(shape) * ROUTER_STD).astype(np.float32)
    if kind == "experts":
        n_exp, rows, cols = shape
        return np.asarray(random_blocks(rng, qtype, n_exp * rows, cols, std)).reshape(
            n_exp, rows, -1
        )
    return None


def add_moe_keys(writer: GGUFWriter, c: Any) -> None:
    if getattr(c, "enable_moe_block", False):
        writer.add_expert_count(c.num_experts)
        writer.add_expert_used_count(c.top_k_experts)
        writer.add_expert_feed_forward_length(c.moe_intermediate_size)


def moe_hf_names(n_layers: int) -> dict[str, str]:
    """GGUF name -> transformers name for the MoE tensors gguf-py's TensorNameMap lacks."""
    out = {}
    for i in range(n_layers):
        p, hf = f"blk.{i}.", f"model.layers.{i}."
        out[p + "ffn_gate_inp.scale"] = hf + "router.scale"
        out[p + "ffn_down_exps.scale"] = hf + "router.per_expert_scale"
        out[p + "ffn_gate_up_exps.weight"] = hf + "experts.gate_up_proj"
        out[p + "ffn_down_exps.weight"] = hf + "experts.down_proj"
    return out


def reference_experts(data: np.ndarray, qtype: GGMLQuantizationType) -> np.ndarray:
    """(E, rows, row bytes) expert blocks -> (E, rows, cols) float32, as a reader sees them."""
    n_exp, rows = data.shape[:2]
    return reference_weights(data.reshape(n_exp * rows, -1), qtype).reshape(n_exp, rows, -1)
