"""Synthetic mixture-of-experts GGUFs (qwen3moe) of random weights, as llama.cpp lays them out.

Owns the MoE part of a synthetic file: the per-layer router ``ffn_gate_inp`` (float32, as
llama-quantize leaves it) and the stacked expert tensors ``ffn_{gate,up,down}_exps``
(experts × rows × cols, one quant type for all experts of a tensor), the ``expert_*`` keys,
and the transformers twin (`Qwen3MoeForCausalLM`, fused ``gate_up_proj``/``down_proj``)
holding exactly the dequantised weights. Routers are drawn ``ROUTER_STD`` wide, several times a
trained matrix's spread, so each token's top-k is decisive: random routers otherwise meet
near-ties, where float rounding alone picks a different expert. `write_moe_model` writes a
tiny parity-test file (with its reference) or, with ``reference=False``, a benchmark-size
one. Attention, norms, embeddings and the tokenizer come from `engine.gguf.synth`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from gguf import GGMLQuantizationType, GGUFWriter

from engine.gguf import synth
from engine.gguf.synth_blocks import random_blocks, reference_weights
from engine.gguf.synth_configs import TOKENIZER_VOCAB
from engine.gguf.synth_plans import Quant, file_type, tensor_types

MOE_ARCHS = ("qwen3moe",)
ROUTER_STD = 0.25  # router logits spread ~4 on normalised inputs of width 256
EXPERT_KINDS = ("gate", "up", "down")
_TINY: dict[str, dict[str, Any]] = {
    # hidden and expert width 256, so Q4_K_M really uses Q4_K (with its minima) for experts;
    # layer 1's ffn_down_exps take Q6_K as llama.cpp's use_more_bits layers do.
    "qwen3moe": {
        "vocab_size": TOKENIZER_VOCAB,
        "hidden_size": 256,
        "intermediate_size": 512,
        "moe_intermediate_size": 256,
        "num_experts": 8,
        "num_experts_per_tok": 3,
        "norm_topk_prob": True,  # llama.cpp renormalises every qwen3moe file's top-k
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "tie_word_embeddings": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
}


def tiny_moe_config(arch: str, **overrides: Any) -> transformers.PretrainedConfig:
    """A tiny transformers config for ``arch`` (``overrides`` replace its fields)."""
    if arch not in MOE_ARCHS:
        raise ValueError(f"arch must be one of {MOE_ARCHS}, got {arch!r}")
    return transformers.Qwen3MoeConfig(**{**_TINY[arch], **overrides})


def moe_tensor_specs(arch: str, config: Any) -> list[synth.TensorSpec]:
    """Every tensor of a MoE ``arch`` GGUF: the dense layout with the MLP replaced by experts."""
    d = synth._dims(config)
    n_exp, width = config.num_experts, config.moe_intermediate_size
    specs = [synth.TensorSpec("token_embd.weight", (d.vocab, d.hidden), "matrix")]
    for i in range(d.layers):
        p = f"blk.{i}."
        dense = synth._block_specs("qwen3", d, p)
        specs += [s for s in dense if not s.name.startswith(p + "ffn_") or "norm" in s.name]
        specs.append(synth.TensorSpec(p + "ffn_gate_inp.weight", (n_exp, d.hidden), "router"))
        for kind in EXPERT_KINDS:
            rows, cols = (d.hidden, width) if kind == "down" else (width, d.hidden)
            specs.append(
                synth.TensorSpec(f"{p}ffn_{kind}_exps.weight", (n_exp, rows, cols), "experts")
            )
    specs.append(synth.TensorSpec("output_norm.weight", (d.hidden,), "norm"))
    if not config.tie_word_embeddings:
        specs.append(synth.TensorSpec("output.weight", (d.vocab, d.hidden), "matrix"))
    return specs


def write_moe_model(
    path: Path,
    arch: str,
    quant: Quant,
    config: Any | None = None,
    seed: int = 0,
    reference: bool = True,
) -> torch.nn.Module | None:
    """Write a random MoE ``arch`` GGUF to ``path``; return its float32 transformers twin.

    ``quant`` as `engine.gguf.synth.write_tiny_model` takes it; routers stay float32.
    ``reference=False`` skips the twin (a benchmark-size file: nothing float is kept).
    """
    config = config if config is not None else tiny_moe_config(arch)
    specs = moe_tensor_specs(arch, config)
    types = tensor_types([(s.name, s.shape) for s in specs], quant)
    types.update({s.name: GGMLQuantizationType.F32 for s in specs if s.kind == "router"})
    model, hf_names = None, {}
    if reference:
        torch.manual_seed(seed)
        auto: Any = transformers.AutoModelForCausalLM  # from_config is untyped
        model = auto.from_config(config, dtype=torch.float32, attn_implementation="eager").eval()
        hf_names = synth._hf_names(model, arch, config.num_hidden_layers)
    rng, state = np.random.default_rng(seed), {}
    writer = _moe_writer(path, arch, config, file_type(quant))
    for spec in specs:
        qtype = types[spec.name]
        data = _data(rng, spec, qtype)
        writer.add_tensor(spec.name, data, raw_dtype=qtype)
        if model is not None:
            state.update(_hf_state(spec, data, qtype, hf_names))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    if model is not None:
        synth._load_state(model, _fuse_gate_up(state))
    return model


def _moe_writer(path: Path, arch: str, config: Any, ftype: int) -> GGUFWriter:
    writer = synth._writer(path, arch, config, ftype, "tiny")
    writer.add_key_length(config.head_dim)
    writer.add_value_length(config.head_dim)
    writer.add_expert_count(config.num_experts)
    writer.add_expert_used_count(config.num_experts_per_tok)
    writer.add_expert_feed_forward_length(config.moe_intermediate_size)
    return writer


def _data(rng: np.random.Generator, spec: synth.TensorSpec, qtype: GGMLQuantizationType) -> Any:
    if spec.kind == "router":
        return (rng.standard_normal(spec.shape) * ROUTER_STD).astype(np.float32)
    if spec.kind == "experts":
        n_exp, rows, cols = spec.shape
        blocks = random_blocks(rng, qtype, n_exp * rows, cols, synth.TINY_STD)
        return blocks.reshape(n_exp, rows, -1)
    (data,) = synth._chunks(rng, spec, qtype, {}, synth.TINY_STD, chunk_bytes=None)
    return data


def _hf_state(
    spec: synth.TensorSpec, data: Any, qtype: GGMLQuantizationType, hf_names: dict[str, str]
) -> dict[str, np.ndarray]:
    """The transformers parameters ``spec``'s data stands for (experts: by their GGUF name)."""
    if spec.kind == "experts":
        n_exp = spec.shape[0]
        weights = reference_weights(data.reshape(n_exp * spec.shape[1], -1), qtype)
        return {spec.name: weights.reshape(spec.shape)}
    if spec.name in hf_names:
        return {hf_names[spec.name]: reference_weights(data, qtype).reshape(spec.shape)}
    return {}


def _fuse_gate_up(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """GGUF expert tensors → transformers' fused experts (gate rows, then up rows)."""
    out = {k: v for k, v in state.items() if not k.endswith("_exps.weight")}
    layers = {k.split(".")[1] for k in state if k.endswith("_exps.weight")}
    for i in layers:
        p, hf = f"blk.{i}.", f"model.layers.{i}.mlp.experts."
        gate, up = state[p + "ffn_gate_exps.weight"], state[p + "ffn_up_exps.weight"]
        out[hf + "gate_up_proj"] = np.concatenate([gate, up], axis=1)  # (E, 2F, H)
        out[hf + "down_proj"] = state[p + "ffn_down_exps.weight"]  # (E, H, F)
    return out
