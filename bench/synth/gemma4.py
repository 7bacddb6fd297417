"""Synthetic Gemma 4 (GGUF arch ``gemma4``) files, laid out as llama.cpp's converter writes them.

Owns the gemma4 tensor layout and metadata of ``convert_hf_to_gguf.py``'s ``Gemma4Model``:
norm weights stored as they are (Gemma 4's RMSNorm multiplies by the weight, no ``1 +``),
the per-layer arrays (``attention.sliding_window_pattern`` as booleans, ``head_count_kv`` when
global layers have their own count, ``feed_forward_length`` when KV-sharing layers have a
double-wide MLP), ``key_length`` for global heads and ``key_length_swa`` for sliding ones, the
sliding layers' rotary base and size, the proportional rotary of global layers as a
``rope_freqs`` tensor (1 for rotated pairs, 1e30 for the rest), per-layer token embeddings
(``per_layer_token_embd``, ``per_layer_model_proj``, ``per_layer_proj_norm`` and per block
``inp_gate``, ``proj``, ``post_norm``), ``layer_output_scale``, and no K/V weights on the
last ``shared_kv_layers`` blocks (global blocks of ``attention_k_eq_v`` models have no V).
`write_tiny_gemma4` writes a tiny file and returns transformers' float32 ``Gemma4ForCausalLM``
holding exactly its dequantised weights. Does not own the quant mixes (`synth_plans`) or
block bytes (`synth_blocks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from gguf import GGML_QUANT_VERSION, MODEL_ARCH, GGUFWriter, get_tensor_name_map

from bench.synth.blocks import random_blocks, reference_weights
from bench.synth.configs import TOKENIZER_VOCAB
from bench.synth.core import _tokenizer_fields
from bench.synth.gemma4_moe import (
    add_moe_keys,
    moe_data,
    moe_hf_names,
    moe_specs,
    reference_experts,
    router_types,
)
from bench.synth.plans import Quant, file_type, tensor_types

ARCH = "gemma4"
TINY_STD = 0.05
_S, _F = "sliding_attention", "full_attention"

# E2B's features in six layers: 3 KV-sharing layers (both kinds) with double-wide MLPs,
# per-layer embeddings, global heads twice as wide with their own KV-head count and V = K
# (as the 31B), proportional rotary on a quarter of the global pairs, a sliding window the
# test prompt outgrows, and the final soft-cap.
TINY_GEMMA4: dict[str, Any] = {
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
    "num_kv_shared_layers": 3,  # own K/V ends sliding, global: llama.cpp's reuse rule needs it
    "use_double_wide_mlp": True,
    "hidden_size_per_layer_input": 32,
    "final_logit_softcapping": 30.0,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "rope_parameters": {
        _S: {"rope_type": "default", "rope_theta": 10000.0},
        _F: {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6},
    },
}
# The E2B shape without its extras: no per-layer embeddings, no sharing, one KV-head count.
PLAIN_GEMMA4: dict[str, Any] = {
    **TINY_GEMMA4,
    "num_global_key_value_heads": None,
    "attention_k_eq_v": False,
    "num_kv_shared_layers": 0,
    "use_double_wide_mlp": False,
    "hidden_size_per_layer_input": 0,
}


# google/gemma-4-E2B's text shapes (its config.json): 35 layers, 4 sliding : 1 global, the last
# 20 sharing K/V with double-wide MLPs, 256-wide per-layer embeddings, a 262k vocabulary.
E2B_GEMMA4: dict[str, Any] = {
    **PLAIN_GEMMA4,
    "vocab_size": 262144,
    "vocab_size_per_layer_input": 262144,
    "hidden_size": 1536,
    "intermediate_size": 6144,
    "num_hidden_layers": 35,
    "num_attention_heads": 8,
    "num_key_value_heads": 1,
    "head_dim": 256,
    "global_head_dim": 512,
    "layer_types": ([_S] * 4 + [_F]) * 7,
    "sliding_window": 512,
    "num_kv_shared_layers": 20,
    "use_double_wide_mlp": True,
    "hidden_size_per_layer_input": 256,
    "max_position_embeddings": 131072,
}
_STREAM_KIND = {"matrix": "matrix", "norm": "norm", "experts": "matrix"}  # the rest: small
#   constants (_data)


def tiny_gemma4_config(**overrides: Any) -> transformers.PretrainedConfig:
    return transformers.Gemma4TextConfig(**{**TINY_GEMMA4, **overrides})


def write_tiny_gemma4(
    path: Path, quant: Quant, config: transformers.PretrainedConfig | None = None, seed: int = 0
) -> torch.nn.Module:
    """Write a tiny random gemma4 GGUF to ``path``; return its float32 transformers twin."""
    config = config if config is not None else tiny_gemma4_config()
    torch.manual_seed(seed)
    auto: Any = transformers.AutoModelForCausalLM  # from_config is untyped
    model: torch.nn.Module = auto.from_config(
        config, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    specs = _tensor_specs(config)
    types = tensor_types([(n, s) for n, s, _ in specs], quant)
    router_types(specs, types)
    hf_names = {
        **_hf_names(model, config.num_hidden_layers),
        **moe_hf_names(config.num_hidden_layers),
    }
    rng, state = np.random.default_rng(seed), {}
    writer = _writer(path, config, file_type(quant))
    for name, shape, kind in specs:
        data = _data(rng, shape, kind, types[name], config)
        writer.add_tensor(name, data, raw_dtype=types[name])
        if name in hf_names:
            values = data if kind not in ("matrix", "experts") else _reference(data, types[name])
            state[hf_names[name]] = np.asarray(values, np.float32).reshape(shape)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _load(model, state)
    return model


def write_real_size_gemma4(
    path: Path,
    plan: str,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    shape: dict[str, Any] | None = None,
    label: str = "",
) -> None:
    """Stream a GGUF with Gemma 4 E2B's text shapes (or ``shape``'s, e.g. `A4B_GEMMA4` with
    fewer layers) in llama.cpp's ``plan`` mix to ``path``.

    Random quantised blocks, 64 MiB at a time, as `bench.synth.core.write_real_size_model`.
    """
    from bench.synth.core import TensorSpec, _nbytes, _stream_tensors

    config = tiny_gemma4_config(**(shape or E2B_GEMMA4))
    rng = np.random.default_rng(seed)
    specs, consts = [], {}
    for name, shape_, kind in _tensor_specs(config):
        specs.append(TensorSpec(name, shape_, _STREAM_KIND.get(kind, "const")))
        if specs[-1].kind == "const":
            consts[name] = _data(rng, shape_, kind, None, config)
    types = tensor_types([(s.name, s.shape) for s in specs], plan)
    router_types(_tensor_specs(config), types)
    writer = _writer(path, config, file_type(plan), label or "gemma-4-E2B")
    sizes = {s.name: _nbytes(s, types[s.name]) for s in specs}
    for s in specs:
        byte_shape = (*s.shape[:-1], sizes[s.name] // math.prod(s.shape[:-1]))
        writer.add_tensor_info(s.name, byte_shape, np.dtype(np.uint8), sizes[s.name], types[s.name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    flat = [s if len(s.shape) < 3 else TensorSpec(s.name, (s.shape[0] * s.shape[1], s.shape[2]),
                                                   s.kind) for s in specs]  # fmt: skip
    _stream_tensors(writer, flat, types, consts, seed, sizes, progress)
    writer.close()


def _layer_dims(c: Any, i: int) -> tuple[int, int, bool, bool]:
    """(head_dim, kv_heads, owns K/V, has V) of layer ``i``, as transformers builds it."""
    layer = c.per_layer_config[i]  # global_head_dim etc. live only here once configured
    sliding = c.layer_types[i] == _S
    owns = i < c.num_hidden_layers - c.num_kv_shared_layers
    has_v = owns and (sliding or not c.attention_k_eq_v)
    return int(layer.head_dim), int(layer.num_key_value_heads), owns, has_v


def _global_head_dim(c: Any) -> int:
    return _layer_dims(c, c.layer_types.index(_F))[0]


def _swa_head_dim(c: Any) -> int:
    return _layer_dims(c, c.layer_types.index(_S))[0]


def _ffn(c: Any, i: int) -> int:
    shared = i >= c.num_hidden_layers - c.num_kv_shared_layers
    return int(c.intermediate_size) * (2 if c.use_double_wide_mlp and shared else 1)


def _tensor_specs(c: Any) -> list[tuple[str, tuple[int, ...], str]]:
    """(GGUF name, numpy shape, kind) in file order; kind: matrix, norm, scale, rope."""
    h, n, ple = c.hidden_size, c.num_hidden_layers, c.hidden_size_per_layer_input
    specs: list[tuple[str, tuple[int, ...], str]] = [
        ("token_embd.weight", (c.vocab_size, h), "matrix")
    ]
    specs.append(("rope_freqs.weight", (_global_head_dim(c) // 2,), "rope"))
    if ple:
        specs += [
            ("per_layer_token_embd.weight", (c.vocab_size_per_layer_input, n * ple), "matrix"),
            ("per_layer_model_proj.weight", (n * ple, h), "matrix"),
            ("per_layer_proj_norm.weight", (ple,), "norm"),
        ]
    for i in range(n):
        p = f"blk.{i}."
        head_dim, kv_heads, owns, has_v = _layer_dims(c, i)
        q, kv, f = c.num_attention_heads * head_dim, kv_heads * head_dim, _ffn(c, i)
        specs += [(p + "attn_norm.weight", (h,), "norm"), (p + "attn_q.weight", (q, h), "matrix")]
        if owns:
            specs.append((p + "attn_k.weight", (kv, h), "matrix"))
        if has_v:
            specs.append((p + "attn_v.weight", (kv, h), "matrix"))
        specs += [(p + "attn_output.weight", (h, q), "matrix")]
        specs.append((p + "attn_q_norm.weight", (head_dim,), "qk_norm"))
        if owns:
            specs.append((p + "attn_k_norm.weight", (head_dim,), "qk_norm"))
        specs += [
            (p + "post_attention_norm.weight", (h,), "norm"),
            (p + "ffn_norm.weight", (h,), "norm"),
            (p + "ffn_gate.weight", (f, h), "matrix"),
            (p + "ffn_up.weight", (f, h), "matrix"),
            (p + "ffn_down.weight", (h, f), "matrix"),
            *moe_specs(c, p),
            (p + "post_ffw_norm.weight", (h,), "norm"),
        ]
        if ple:
            specs += [
                (p + "inp_gate.weight", (ple, h), "matrix"),
                (p + "proj.weight", (h, ple), "matrix"),
                (p + "post_norm.weight", (h,), "norm"),
            ]
        specs.append((p + "layer_output_scale.weight", (1,), "scale"))
    specs.append(("output_norm.weight", (h,), "norm"))
    return specs


def _data(
    rng: np.random.Generator, shape: tuple[int, ...], kind: str, qtype: Any, c: Any
) -> np.ndarray:
    if kind == "matrix":
        return np.asarray(random_blocks(rng, qtype, shape[0], shape[1], TINY_STD))
    if (moe := moe_data(rng, shape, kind, qtype)) is not None:  # router, experts
        return moe
    if kind == "norm":  # Gemma 4 multiplies by the weight itself: stored as is
        return (1.0 + 0.1 * np.clip(rng.standard_normal(shape), -4, 4)).astype(np.float32)
    if kind == "qk_norm":  # around head_dim**-0.25: scores of trained size (the scale is 1)
        norm = 1.0 + 0.1 * np.clip(rng.standard_normal(shape), -4, 4)
        return np.asarray(norm * shape[0] ** -0.25, dtype=np.float32)
    if kind == "scale":
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    rope = c.rope_parameters[_F]  # "rope": which global pairs rotate (1) and which do not
    rotated = int(_global_head_dim(c) * rope["partial_rotary_factor"] / 2)
    return np.array([1.0] * rotated + [1e30] * (shape[0] - rotated), np.float32)


def _writer(path: Path, c: Any, ftype: int, label: str = "tiny") -> GGUFWriter:
    swa = [t == _S for t in c.layer_types]
    n = c.num_hidden_layers
    w = GGUFWriter(str(path), ARCH)
    w.add_type("model")
    w.add_name(f"synth {label} (gemma4 layout)")
    w.add_block_count(n)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    ffn = [_ffn(c, i) for i in range(n)]
    w.add_feed_forward_length(ffn if c.use_double_wide_mlp else c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    kv_heads = [_layer_dims(c, i)[1] for i in range(n)]
    global_kv = len(set(kv_heads)) > 1  # the converter writes an array only then
    w.add_head_count_kv(kv_heads if global_kv else kv_heads[0])
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_key_length(_global_head_dim(c))
    w.add_value_length(_global_head_dim(c))
    w.add_key_length_swa(_swa_head_dim(c))
    w.add_value_length_swa(_swa_head_dim(c))
    w.add_rope_freq_base(c.rope_parameters[_F]["rope_theta"])
    w.add_rope_freq_base_swa(c.rope_parameters[_S]["rope_theta"])
    w.add_rope_dimension_count(_global_head_dim(c))  # proportional: rope_freqs marks the rest
    w.add_rope_dimension_count_swa(_swa_head_dim(c))
    w.add_final_logit_softcapping(c.final_logit_softcapping)
    w.add_sliding_window(c.sliding_window)
    w.add_shared_kv_layers(c.num_kv_shared_layers)
    w.add_embedding_length_per_layer_input(c.hidden_size_per_layer_input or 0)
    w.add_sliding_window_pattern(swa)
    w.add_vocab_size(c.vocab_size)
    add_moe_keys(w, c)
    w.add_file_type(ftype)
    w.add_quantization_version(GGML_QUANT_VERSION)
    for key, value, vtype, sub_type in _tokenizer_fields(c.vocab_size):
        w.add_key_value(key, value, vtype, sub_type)
    return w


def _reference(data: np.ndarray, qtype: Any) -> np.ndarray:
    return reference_experts(data, qtype) if data.ndim == 3 else reference_weights(data, qtype)


def _hf_names(model: torch.nn.Module, n_layers: int) -> dict[str, str]:
    """GGUF tensor name -> transformers state-dict name, by gguf-py's TensorNameMap."""
    name_map = get_tensor_name_map(MODEL_ARCH.GEMMA4, n_layers)
    out = {}
    for hf_name in model.state_dict():
        if hf_name.endswith("layer_scalar"):  # a buffer; the converter appends ".weight"
            out[f"{name_map.get_name(hf_name)}.weight"] = hf_name
            continue
        base, suffix = hf_name.rsplit(".", 1)
        if (gguf_base := name_map.get_name(base)) is not None:
            out[f"{gguf_base}.{suffix}"] = hf_name
    return out


def _load(model: torch.nn.Module, state: dict[str, np.ndarray]) -> None:
    tensors = model.state_dict(keep_vars=True)
    missing = sorted(n for n in dict(model.named_parameters()) if n not in state)
    if missing:
        raise RuntimeError(f"the synthetic gemma4 layout has no tensor for {missing}")
    with torch.no_grad():
        for name, value in state.items():
            tensors[name].copy_(
                torch.from_numpy(np.ascontiguousarray(value)).reshape_as(tensors[name])
            )
