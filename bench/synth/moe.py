"""Synthetic mixture-of-experts GGUFs (qwen3moe) of random weights, as llama.cpp lays them out.

Owns the MoE part of a synthetic file: the per-layer router ``ffn_gate_inp`` (float32, as
llama-quantize leaves it) and the stacked expert tensors ``ffn_{gate,up,down}_exps``
(experts × rows × cols, one quant type for all experts of a tensor), the ``expert_*`` keys,
and the transformers twin (`Qwen3MoeForCausalLM`, fused ``gate_up_proj``/``down_proj``)
holding exactly the dequantised weights. Routers are drawn ``ROUTER_STD`` wide, several times a
trained matrix's spread, so each token's top-k is decisive: random routers otherwise meet
near-ties, where float rounding alone picks a different expert. `write_moe_model` writes a
tiny parity-test file (with its reference) or, with ``reference=False``, a benchmark-size
one. Attention, norms, embeddings and the tokenizer come from `bench.synth.core`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from gguf import GGMLQuantizationType, GGUFWriter, RopeScalingType

from bench.synth import core as synth
from bench.synth.blocks import random_blocks, reference_weights, row_bytes
from bench.synth.configs import TOKENIZER_VOCAB
from bench.synth.plans import Quant, file_type, tensor_types

MOE_ARCHS = ("qwen3moe", "gpt-oss")
SINK_STD = 1.0  # gpt-oss attention sinks: logits that compete with the scores
_CLASSES = {"qwen3moe": "Qwen3MoeConfig", "gpt-oss": "GptOssConfig"}
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
    # gpt-oss-20b's quirks at tiny size: biases everywhere, sinks, alternating sliding (a short
    # window so it matters) / full layers, YaRN with its untruncated correction range.
    "gpt-oss": {
        "vocab_size": TOKENIZER_VOCAB,
        "hidden_size": 256,
        "intermediate_size": 256,
        "num_local_experts": 8,
        "num_experts_per_tok": 3,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "sliding_window": 8,
        "tie_word_embeddings": False,
        "max_position_embeddings": 131072,
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 150000.0,
            "factor": 32.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 4096,
        },
    },
}


# A Qwen3-30B-A3B-shaped model at reduced width, whose active part is exactly Qwen3-0.6B's
# shape (`bench.synth.configs.REAL_SIZE["qwen3"]`): 128 experts of width 512, 6 routed
# (6 x 512 = the dense model's 3072-wide MLP; 512, unlike 384, takes Q4_K/Q6_K as the real
# file's 768 does); 5.6B expert parameters, ~0.5B active in all.
REAL_SIZE_MOE: dict[str, dict[str, Any]] = {
    "qwen3moe": {
        "vocab_size": 151936,
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "moe_intermediate_size": 512,
        "num_experts": 128,
        "num_experts_per_tok": 6,
        "norm_topk_prob": True,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 40960,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    # gpt-oss-20b's shapes (its config.json as recalled, NOT checked online): 2880 wide, 32
    # experts of 2880, 4 routed, 64 heads of 64, 8 KV heads, window 128, a 201k vocabulary;
    # 6 of its 24 layers (a quarter of the file), so the file and its graph fit this disk.
    "gpt-oss": {
        **_TINY["gpt-oss"],
        "vocab_size": 201088,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_local_experts": 32,
        "num_experts_per_tok": 4,
        "num_hidden_layers": 6,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "sliding_window": 128,
        "rms_norm_eps": 1e-5,
    },
}


def tiny_moe_config(arch: str, **overrides: Any) -> transformers.PretrainedConfig:
    """A tiny transformers config for ``arch`` (``overrides`` replace its fields)."""
    if arch not in MOE_ARCHS:
        raise ValueError(f"arch must be one of {MOE_ARCHS}, got {arch!r}")
    config_class = getattr(transformers, _CLASSES[arch])
    return config_class(**{**_TINY[arch], **overrides})  # type: ignore[no-any-return]


def real_size_moe_config(arch: str) -> transformers.PretrainedConfig:
    """The benchmark shape of ``arch`` (`REAL_SIZE_MOE`)."""
    if arch not in MOE_ARCHS:
        raise ValueError(f"arch must be one of {MOE_ARCHS}, got {arch!r}")
    config_class = getattr(transformers, _CLASSES[arch])
    return config_class(**REAL_SIZE_MOE[arch])  # type: ignore[no-any-return]


def n_experts(config: Any) -> tuple[int, int, int]:
    """(experts, experts routed per token, expert width) of a MoE transformers config."""
    if hasattr(config, "moe_intermediate_size"):  # qwen3moe (also answers num_local_experts)
        return config.num_experts, config.num_experts_per_tok, config.moe_intermediate_size
    return config.num_local_experts, config.num_experts_per_tok, config.intermediate_size


def moe_tensor_specs(arch: str, config: Any) -> list[synth.TensorSpec]:
    """Every tensor of a MoE ``arch`` GGUF: the dense layout with the MLP replaced by experts."""
    d = synth._dims(config)
    specs = [synth.TensorSpec("token_embd.weight", (d.vocab, d.hidden), "matrix")]
    for i in range(d.layers):
        p = f"blk.{i}."
        specs += _gpt_oss_attention(d, p) if arch == "gpt-oss" else _qwen3_attention(d, p)
        specs += _expert_specs(arch, config, p)
    specs.append(synth.TensorSpec("output_norm.weight", (d.hidden,), "norm"))
    if not config.tie_word_embeddings:
        specs.append(synth.TensorSpec("output.weight", (d.vocab, d.hidden), "matrix"))
    return specs


def _qwen3_attention(d: Any, p: str) -> list[synth.TensorSpec]:
    dense = synth._block_specs("qwen3", d, p)
    return [s for s in dense if not s.name.startswith(p + "ffn_") or "norm" in s.name]


def _gpt_oss_attention(d: Any, p: str) -> list[synth.TensorSpec]:
    """attn_norm, biased q/k/v/o, per-head sinks, and post_attention_norm (the MLP's norm)."""
    q, kv = d.heads * d.head_dim, d.kv_heads * d.head_dim
    out = [synth.TensorSpec(p + "attn_norm.weight", (d.hidden,), "norm")]
    for name, rows, cols in (("q", q, d.hidden), ("k", kv, d.hidden), ("v", kv, d.hidden)):
        out += [
            synth.TensorSpec(f"{p}attn_{name}.weight", (rows, cols), "matrix"),
            synth.TensorSpec(f"{p}attn_{name}.bias", (rows,), "bias"),
        ]
    out += [
        synth.TensorSpec(p + "attn_output.weight", (d.hidden, q), "matrix"),
        synth.TensorSpec(p + "attn_output.bias", (d.hidden,), "bias"),
        synth.TensorSpec(p + "attn_sinks.weight", (d.heads,), "sinks"),
        synth.TensorSpec(p + "post_attention_norm.weight", (d.hidden,), "norm"),
    ]
    return out


def _expert_specs(arch: str, config: Any, p: str) -> list[synth.TensorSpec]:
    n_exp, _, width = n_experts(config)
    hidden, biased = config.hidden_size, arch == "gpt-oss"
    out = [synth.TensorSpec(p + "ffn_gate_inp.weight", (n_exp, hidden), "router")]
    if biased:
        out.append(synth.TensorSpec(p + "ffn_gate_inp.bias", (n_exp,), "bias"))
    for kind in EXPERT_KINDS:
        rows, cols = (hidden, width) if kind == "down" else (width, hidden)
        out.append(synth.TensorSpec(f"{p}ffn_{kind}_exps.weight", (n_exp, rows, cols), "experts"))
        if biased:
            out.append(synth.TensorSpec(f"{p}ffn_{kind}_exps.bias", (n_exp, rows), "bias"))
    return out


def write_moe_model(
    path: Path,
    arch: str,
    quant: Quant,
    config: Any | None = None,
    seed: int = 0,
    reference: bool = True,
) -> torch.nn.Module | None:
    """Write a random MoE ``arch`` GGUF to ``path``; return its float32 transformers twin.

    ``quant`` as `bench.synth.core.write_tiny_model` takes it; routers stay float32.
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
        synth._load_state(model, _fuse_experts(arch, state))
    return model


def write_real_size_moe_model(
    path: Path,
    arch: str,
    plan: str,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Stream a ``REAL_SIZE_MOE[arch]`` GGUF in llama.cpp's ``plan`` mix to ``path``.

    One expert's rows at a time are made and written (no float copy, no whole tensor held).
    """
    config = real_size_moe_config(arch)
    specs = moe_tensor_specs(arch, config)
    types = tensor_types([(s.name, s.shape) for s in specs], plan)
    types.update({s.name: GGMLQuantizationType.F32 for s in specs if s.kind == "router"})
    label = "6-layer gpt-oss-20b" if arch == "gpt-oss" else "half-width 30B-A3B"
    writer = _moe_writer(path, arch, config, file_type(plan), label)
    sizes = {s.name: math.prod(s.shape[:-1]) * row_bytes(types[s.name], s.shape[-1]) for s in specs}
    for s in specs:
        byte_shape = (*s.shape[:-1], sizes[s.name] // math.prod(s.shape[:-1]))
        writer.add_tensor_info(s.name, byte_shape, np.dtype(np.uint8), sizes[s.name], types[s.name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None
    fout, rng, done, total = writer.fout[0], np.random.default_rng(seed), 0, sum(sizes.values())
    for spec in specs:
        writer.write_padding(fout, fout.tell())
        for chunk in _stream_chunks(rng, spec, types[spec.name]):
            np.ascontiguousarray(chunk).tofile(fout)
        writer.write_padding(fout, sizes[spec.name])
        done += sizes[spec.name]
        if progress is not None:
            progress(done, total)
    writer.close()


def _stream_chunks(
    rng: np.random.Generator, spec: synth.TensorSpec, qtype: GGMLQuantizationType
) -> Iterator[np.ndarray]:
    if spec.kind == "experts":
        n_exp, rows, cols = spec.shape
        for _ in range(n_exp):
            yield random_blocks(rng, qtype, rows, cols, synth.REAL_STD)
    elif spec.kind == "router":
        yield (rng.standard_normal(spec.shape) * ROUTER_STD).astype(np.float32)
    elif spec.kind == "sinks":  # gpt-oss: 1-D, as in `_data`
        yield (rng.standard_normal(spec.shape) * SINK_STD).astype(np.float32)
    else:
        yield from synth._chunks(rng, spec, qtype, {}, synth.REAL_STD, synth.CHUNK_BYTES)


def _moe_writer(path: Path, arch: str, config: Any, ftype: int, label: str = "tiny") -> GGUFWriter:
    writer = synth._writer(path, arch, config, ftype, label)
    writer.add_key_length(config.head_dim)
    writer.add_value_length(config.head_dim)
    count, used, width = n_experts(config)
    writer.add_expert_count(count)
    writer.add_expert_used_count(used)
    writer.add_expert_feed_forward_length(width)
    if arch == "gpt-oss":
        rope = config.rope_parameters
        writer.add_sliding_window(config.sliding_window)
        writer.add_rope_scaling_type(RopeScalingType.YARN)
        writer.add_rope_scaling_factor(rope["factor"])
        writer.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    return writer


def _data(rng: np.random.Generator, spec: synth.TensorSpec, qtype: GGMLQuantizationType) -> Any:
    if spec.kind == "router":
        return (rng.standard_normal(spec.shape) * ROUTER_STD).astype(np.float32)
    if spec.kind == "sinks":
        return (rng.standard_normal(spec.shape) * SINK_STD).astype(np.float32)
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
    if "_exps." in spec.name:
        rows = spec.shape[0] * spec.shape[1] if spec.kind == "experts" else spec.shape[0]
        weights = reference_weights(data.reshape(rows, -1), qtype)
        return {spec.name: weights.reshape(spec.shape)}
    if spec.name.endswith("attn_sinks.weight"):
        layer = spec.name.split(".")[1]
        return {f"model.layers.{layer}.self_attn.sinks": np.asarray(data, np.float32)}
    if spec.name in hf_names:
        return {hf_names[spec.name]: reference_weights(data, qtype).reshape(spec.shape)}
    return {}


def _fuse_experts(arch: str, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """GGUF expert tensors → transformers' fused experts.

    qwen3moe: ``gate_up_proj`` (E, 2F, H), gate rows then up rows; ``down_proj`` (E, H, F).
    gpt-oss (as convert_hf_to_gguf splits it): ``gate_up_proj`` (E, H, 2F) with gate and up
    columns interleaved, ``down_proj`` (E, F, H), and biases laid out alike.
    """
    out = {k: v for k, v in state.items() if "_exps." not in k}
    layers = {k.split(".")[1] for k in state if "_exps." in k}
    for i in layers:
        p, hf = f"blk.{i}.", f"model.layers.{i}.mlp.experts."
        gate, up = state[p + "ffn_gate_exps.weight"], state[p + "ffn_up_exps.weight"]
        down = state[p + "ffn_down_exps.weight"]
        if arch != "gpt-oss":
            out[hf + "gate_up_proj"] = np.concatenate([gate, up], axis=1)
            out[hf + "down_proj"] = down
            continue
        out[hf + "gate_up_proj"] = _interleave(gate, up, axis=1).transpose(0, 2, 1).copy()
        out[hf + "down_proj"] = down.transpose(0, 2, 1).copy()
        gate_b, up_b = state[p + "ffn_gate_exps.bias"], state[p + "ffn_up_exps.bias"]
        out[hf + "gate_up_proj_bias"] = _interleave(gate_b, up_b, axis=1)
        out[hf + "down_proj_bias"] = state[p + "ffn_down_exps.bias"]
    return out


def _interleave(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    """Rows (along ``axis``) a0, b0, a1, b1, ...: gpt-oss's fused gate/up order."""
    stacked = np.stack([a, b], axis=axis + 1)
    shape = list(a.shape)
    shape[axis] *= 2
    return stacked.reshape(shape)
