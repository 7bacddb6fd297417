"""Synthetic Qwen3.5 (GGUF arch ``qwen35``) files: hybrid Gated DeltaNet / gated attention.

Owns the qwen35 tensor layout and metadata as llama.cpp's converter writes them
(``conversion/qwen.py``, ``Qwen3_5TextModel``): zero-centred RMSNorm weights stored with the 1
added (all but the DeltaNet output norm ``ssm_norm``), ``ssm_a = -exp(A_log)``, the conv kernel
squeezed to (channels, kernel) and kept F32 (llama-quantize never quantises ``ssm_conv1d``),
the value heads reordered from grouped-by-key-head (transformers) to tiled order (ggml
broadcasts key heads by tiling), ``attn_q`` holding each head's query rows then its gate rows,
and the multi-token-prediction block that converted files append (``block_count = layers +
1``, ``nextn_predict_layers = 1``; llama.cpp loads it and never runs it).
`write_tiny_qwen35` writes a tiny file and returns transformers' float32
``Qwen3_5ForCausalLM`` holding exactly its dequantised weights (text only: with one position
per token, the multimodal rope is plain rope over the rotated dimensions);
`write_real_size_qwen35` writes a benchmark file with Qwen3.5-0.8B's shapes.
Does not own the quant mixes (`synth_plans`) or block bytes (`synth_blocks`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from gguf import GGML_QUANT_VERSION, GGMLQuantizationType, GGUFWriter

from bench.synth.blocks import random_blocks, reference_weights
from bench.synth.configs import TOKENIZER_VOCAB
from bench.synth.core import _tokenizer_fields
from bench.synth.plans import Quant, file_type, tensor_types

ARCH = "qwen35"
TINY_STD = 0.05
F32 = GGMLQuantizationType.F32

TINY_QWEN35: dict[str, Any] = {
    "vocab_size": TOKENIZER_VOCAB,
    "hidden_size": 256,  # a multiple of 256: Q4_K/Q6_K rows, not only their fallbacks
    "intermediate_size": 512,
    "num_hidden_layers": 4,  # three DeltaNet layers, then one gated full-attention layer
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,  # 16 rotated dimensions (partial_rotary_factor 0.25, as Qwen3.5)
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,  # 2 value heads per key head: the tiled reorder matters
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
    "linear_conv_kernel_dim": 4,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 10000000.0,
        "partial_rotary_factor": 0.25,
        "mrope_section": [3, 3, 2],
        "mrope_interleaved": True,
    },
}

# Qwen/Qwen3.5-0.8B's text shapes (config.json; llama.cpp names 24 layers of 1024 "0.8B").
REAL_QWEN35: dict[str, Any] = {
    **TINY_QWEN35,
    "vocab_size": 248320,
    "hidden_size": 1024,
    "intermediate_size": 3584,
    "num_hidden_layers": 24,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 16,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "max_position_embeddings": 262144,
    "rope_parameters": {**TINY_QWEN35["rope_parameters"], "mrope_section": [11, 11, 10]},
}


def tiny_qwen35_config(**overrides: Any) -> transformers.PretrainedConfig:
    return transformers.Qwen3_5TextConfig(**{**TINY_QWEN35, **overrides})


def write_tiny_qwen35(
    path: Path, quant: Quant, config: transformers.PretrainedConfig | None = None, seed: int = 0
) -> torch.nn.Module:
    """Write a tiny random qwen35 GGUF (with an MTP block); return its transformers twin."""
    config = config if config is not None else tiny_qwen35_config()
    torch.manual_seed(seed)
    auto: Any = transformers.AutoModelForCausalLM
    model: torch.nn.Module = auto.from_config(
        config, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    _load(model, _write(path, config, quant, seed, "tiny", reference=True))
    return model


def write_real_size_qwen35(path: Path, plan: str, seed: int = 0) -> None:
    """A random-weight GGUF with Qwen3.5-0.8B's shapes (`REAL_QWEN35`) in llama.cpp's ``plan``."""
    _write(path, transformers.Qwen3_5TextConfig(**REAL_QWEN35), plan, seed, "0.8B", False)


def _write(
    path: Path, config: Any, quant: Quant, seed: int, label: str, reference: bool
) -> dict[str, np.ndarray]:
    """Write the file; with ``reference``, return transformers' state dict of its weights."""
    specs = _tensor_specs(config)
    types = tensor_types([(n, s) for n, s, _ in specs], quant)
    types.update({n: F32 for n, _, _ in specs if "ssm_conv1d" in n})  # as llama-quantize
    rng = np.random.default_rng(seed)
    writer = _writer(path, config, file_type(quant), label)
    state: dict[str, np.ndarray] = {}
    for name, shape, kind in specs:
        data = _data(rng, name, shape, kind, types[name])
        writer.add_tensor(name, data, raw_dtype=types[name])
        hf = _hf_name(name, config) if reference else None
        if hf is not None:
            values = data if types[name] == F32 else reference_weights(data, types[name])
            state[hf] = _to_hf(name, np.asarray(values, np.float32).reshape(shape), config)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return state


def _dims(c: Any) -> dict[str, int]:
    nk, nv = c.linear_num_key_heads, c.linear_num_value_heads
    dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
    return {"nk": nk, "nv": nv, "dk": dk, "dv": dv, "conv": 2 * nk * dk + nv * dv}


Spec = tuple[str, tuple[int, ...], str]


def _tensor_specs(c: Any, ffn: Callable[[str], list[Spec]] | None = None) -> list[Spec]:
    """(GGUF name, numpy shape, kind) in file order; kind: matrix, norm, plain, a, dt, conv.

    ``ffn`` gives a block's feed-forward tensors from its prefix (qwen35moe: experts);
    default: the dense MLP.
    """
    h, f, d = c.hidden_size, getattr(c, "intermediate_size", 0), _dims(c)
    q, kv = c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim
    specs: list[tuple[str, tuple[int, ...], str]] = [
        ("token_embd.weight", (c.vocab_size, h), "matrix")
    ]
    for i in range(c.num_hidden_layers + 1):  # the last block is the MTP block
        p = f"blk.{i}."
        specs.append((p + "attn_norm.weight", (h,), "norm"))
        mtp = i == c.num_hidden_layers
        if not mtp and c.layer_types[i] == "linear_attention":
            value = d["nv"] * d["dv"]
            specs += [
                (p + "attn_qkv.weight", (d["conv"], h), "matrix"),
                (p + "attn_gate.weight", (value, h), "matrix"),
                (p + "ssm_conv1d.weight", (d["conv"], c.linear_conv_kernel_dim), "conv"),
                (p + "ssm_dt.bias", (d["nv"],), "dt"),
                (p + "ssm_a", (d["nv"],), "a"),
                (p + "ssm_beta.weight", (d["nv"], h), "matrix"),
                (p + "ssm_alpha.weight", (d["nv"], h), "matrix"),
                (p + "ssm_norm.weight", (d["dv"],), "plain"),
                (p + "ssm_out.weight", (h, value), "matrix"),
            ]
        else:
            specs += [
                (p + "attn_q.weight", (2 * q, h), "matrix"),
                (p + "attn_k.weight", (kv, h), "matrix"),
                (p + "attn_v.weight", (kv, h), "matrix"),
                (p + "attn_output.weight", (h, q), "matrix"),
                (p + "attn_q_norm.weight", (c.head_dim,), "norm"),
                (p + "attn_k_norm.weight", (c.head_dim,), "norm"),
            ]
        specs.append((p + "post_attention_norm.weight", (h,), "norm"))
        specs += (
            ffn(p)
            if ffn is not None
            else [
                (p + "ffn_gate.weight", (f, h), "matrix"),
                (p + "ffn_up.weight", (f, h), "matrix"),
                (p + "ffn_down.weight", (h, f), "matrix"),
            ]
        )
        if mtp:
            specs += [
                (p + "nextn.eh_proj.weight", (h, 2 * h), "matrix"),
                (p + "nextn.enorm.weight", (h,), "norm"),
                (p + "nextn.hnorm.weight", (h,), "norm"),
                (p + "nextn.shared_head_norm.weight", (h,), "norm"),
            ]
    specs.append(("output_norm.weight", (h,), "norm"))
    if not c.tie_word_embeddings:
        specs.append(("output.weight", (c.vocab_size, h), "matrix"))
    return specs


def _data(
    rng: np.random.Generator, name: str, shape: tuple[int, ...], kind: str, qtype: Any
) -> np.ndarray:
    if kind == "matrix":
        return random_blocks(rng, qtype, shape[0], shape[1], TINY_STD)
    if kind == "norm":  # stored as HF weight + 1
        return (1.0 + 0.1 * np.clip(rng.standard_normal(shape), -4, 4)).astype(np.float32)
    if kind == "plain":
        return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    if kind == "a":  # -exp(A_log): decays from slow to fast, as trained models have
        a_log = torch.from_numpy(np.log(rng.uniform(0.5, 12.0, shape)).astype(np.float32))
        return (-torch.exp(a_log)).numpy()
    if kind == "dt":
        return rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    return (0.3 * rng.standard_normal(shape)).astype(np.float32)  # conv taps


def _writer(path: Path, c: Any, ftype: int, label: str, arch: str = ARCH) -> GGUFWriter:
    d, rope = _dims(c), dict(c.rope_parameters)
    w = GGUFWriter(str(path), arch)
    w.add_type("model")
    w.add_name(f"synth {label} ({arch} layout)")
    w.add_block_count(c.num_hidden_layers + 1)
    w.add_nextn_predict_layers(1)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    if getattr(c, "intermediate_size", None):  # qwen35moe: no dense MLP, no such key
        w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_key_length(c.head_dim)
    w.add_value_length(c.head_dim)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_freq_base(rope["rope_theta"])
    w.add_rope_dimension_count(int(c.head_dim * rope["partial_rotary_factor"]))
    w.add_rope_dimension_sections([*rope["mrope_section"], 0])
    w.add_ssm_conv_kernel(c.linear_conv_kernel_dim)
    w.add_ssm_state_size(d["dk"])
    w.add_ssm_group_count(d["nk"])
    w.add_ssm_time_step_rank(d["nv"])
    w.add_ssm_inner_size(d["nv"] * d["dv"])
    w.add_full_attention_interval(4)
    w.add_vocab_size(c.vocab_size)
    w.add_file_type(ftype)
    w.add_quantization_version(GGML_QUANT_VERSION)
    for key, value, vtype, sub_type in _tokenizer_fields(c.vocab_size):
        w.add_key_value(key, value, vtype, sub_type)
    return w


_HF_LAYER = {
    "attn_norm.weight": "input_layernorm.weight",
    "post_attention_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
    "attn_qkv.weight": "linear_attn.in_proj_qkv.weight",
    "attn_gate.weight": "linear_attn.in_proj_z.weight",
    "ssm_conv1d.weight": "linear_attn.conv1d.weight",
    "ssm_dt.bias": "linear_attn.dt_bias",
    "ssm_a": "linear_attn.A_log",
    "ssm_beta.weight": "linear_attn.in_proj_b.weight",
    "ssm_alpha.weight": "linear_attn.in_proj_a.weight",
    "ssm_norm.weight": "linear_attn.norm.weight",
    "ssm_out.weight": "linear_attn.out_proj.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "attn_q_norm.weight": "self_attn.q_norm.weight",
    "attn_k_norm.weight": "self_attn.k_norm.weight",
}


def _hf_name(name: str, c: Any) -> str | None:
    top = {
        "token_embd.weight": "model.embed_tokens.weight",
        "output_norm.weight": "model.norm.weight",
    }
    if name in top:
        return top[name]
    if name == "output.weight":
        return "lm_head.weight"
    _, layer, rest = name.split(".", 2)
    if int(layer) >= c.num_hidden_layers:
        return None  # the MTP block: transformers ignores it too (mtp.* keys)
    return f"model.layers.{layer}.{_HF_LAYER[rest]}"


def _to_hf(name: str, w: np.ndarray, c: Any) -> np.ndarray:
    """Undo the converter: norm + 1, -exp(A_log), squeezed conv, tiled value heads."""
    d = _dims(c)
    if name.endswith("norm.weight") and "ssm_norm" not in name:
        return w - np.float32(1.0)
    if name.endswith("ssm_a"):
        return _grouped(np.log(-w), 0, d, 1)
    if name.endswith(("ssm_dt.bias", "ssm_beta.weight", "ssm_alpha.weight")):
        return _grouped(w, 0, d, 1)
    if name.endswith("attn_gate.weight"):
        return _grouped(w, 0, d, d["dv"])
    if name.endswith("ssm_out.weight"):
        return _grouped(w, 1, d, d["dv"])
    if name.endswith(("attn_qkv.weight", "ssm_conv1d.weight")):
        split = 2 * d["nk"] * d["dk"]
        v = _grouped(w[split:], 0, d, d["dv"])
        out = np.concatenate([w[:split], v], axis=0)
        return out[:, None, :] if "conv1d" in name else out
    return w


def _grouped(w: np.ndarray, axis: int, d: dict[str, int], size: int) -> np.ndarray:
    """Tiled value-head order (GGUF) back to grouped-by-key-head order (transformers)."""
    r = d["nv"] // d["nk"]
    moved = np.moveaxis(w, axis, 0)
    rest = moved.shape[1:]
    grouped = moved.reshape(r, d["nk"], size, *rest).swapaxes(0, 1).reshape(moved.shape)
    return np.ascontiguousarray(np.moveaxis(grouped, 0, axis))


def _load(model: torch.nn.Module, state: dict[str, np.ndarray]) -> None:
    params = dict(model.named_parameters())
    missing = sorted(set(params) - set(state))
    if missing:
        raise RuntimeError(f"the synthetic qwen35 layout has no tensor for {missing}")
    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))
