"""Synthetic GGUF models of random weights, laid out as llama.cpp's convert_hf_to_gguf.py does.

Owns the tensor layout and metadata of llama, qwen2, qwen3, gemma2, gemma3 and phi3 GGUFs
(names, llama's Q/K row permutation, gemma's stored `norm + 1`, phi3's fused qkv and gate|up,
qwen2's q/k/v biases, llama3 `rope_freqs`, phi3 longrope factor tensors, the bundled tokenizer's
`tokenizer.*` keys) and two writers: `write_tiny_model` (a tiny file plus the float32
transformers model holding exactly its dequantised weights: the parity reference) and
`write_real_size_model` (a benchmark-size file streamed from random quantised blocks).
Does not own the hyper-parameters (`synth_configs`), the type mixes (`synth_plans`) or the
block bytes (`synth_blocks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers
from gguf import (
    GGML_QUANT_VERSION,
    MODEL_ARCH_NAMES,
    GGMLQuantizationType,
    GGUFReader,
    GGUFValueType,
    GGUFWriter,
    RopeScalingType,
    TokenType,
    get_tensor_name_map,
)

from bench.synth.blocks import random_blocks, reference_weights, row_bytes
from bench.synth.configs import (
    DENSE_ARCHS,
    REAL_SIZE,
    base_arch,
    hf_gguf_overrides,
    real_size,
    real_size_config,
    tiny_config,
)
from bench.synth.plans import PLANS, Quant, file_type, tensor_types

__all__ = [
    "DENSE_ARCHS",
    "REAL_SIZE",
    "TensorSpec",
    "derived_tensors",
    "hf_gguf_overrides",
    "tensor_specs",
    "tiny_config",
    "write_real_size_model",
    "write_tiny_model",
]

TINY_STD, REAL_STD = 0.05, 0.03  # spread of matrix weights (trained models: ~0.02-0.05)
CHUNK_BYTES = 64 << 20  # real-size tensors are generated and written this much at a time


@dataclass(frozen=True)
class TensorSpec:
    name: str  # GGUF tensor name
    shape: tuple[int, ...]  # numpy order: (rows, cols) for a matrix, (n,) for a vector
    kind: str  # "matrix" | "norm" | "bias" | "const"


@dataclass(frozen=True)
class _Dims:
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int


def tensor_specs(arch: str, config: transformers.PretrainedConfig) -> list[TensorSpec]:
    """Every tensor of ``arch``'s GGUF for ``config``, in file order."""
    d = _dims(config)
    specs = [TensorSpec("token_embd.weight", (d.vocab, d.hidden), "matrix")]
    specs += [TensorSpec(n, v.shape, "const") for n, v in derived_tensors(arch, config).items()]
    for i in range(d.layers):
        specs += _block_specs(arch, d, f"blk.{i}.")
    specs.append(TensorSpec("output_norm.weight", (d.hidden,), "norm"))
    if not config.tie_word_embeddings:
        specs.append(TensorSpec("output.weight", (d.vocab, d.hidden), "matrix"))
    return specs


def write_tiny_model(
    path: Path,
    arch: str,
    quant: Quant,
    config: transformers.PretrainedConfig | None = None,
    seed: int = 0,
) -> torch.nn.Module:
    """Write a tiny random ``arch`` GGUF to ``path``; return its float32 transformers twin.

    ``quant``: a llama.cpp plan ("Q4_K_M", "Q8_0", ...), a GGML type for every matrix ("Q4_K",
    "F16", ...; rows too short for it fall back as llama.cpp does) or {glob: type}. The model
    returned holds exactly the file's dequantised weights (eager attention, eval mode).
    """
    config = config if config is not None else tiny_config(arch)
    torch.manual_seed(seed)
    auto: Any = transformers.AutoModelForCausalLM  # from_config is untyped
    model: torch.nn.Module = auto.from_config(
        config, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    specs = tensor_specs(arch, config)
    types = tensor_types([(s.name, s.shape) for s in specs], quant)
    hf_names = _hf_names(model, arch, config.num_hidden_layers)
    consts = derived_tensors(arch, config)
    rng, state = np.random.default_rng(seed), {}
    writer = _writer(path, arch, config, file_type(quant), "tiny")
    for spec in specs:
        (data,) = _chunks(rng, spec, types[spec.name], consts, TINY_STD, chunk_bytes=None)
        writer.add_tensor(spec.name, data, raw_dtype=types[spec.name])
        if spec.name in hf_names:
            weights = reference_weights(data, types[spec.name])
            state[hf_names[spec.name]] = _to_hf(arch, config, spec.name, weights)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _load_state(model, state)
    return model


def write_real_size_model(
    path: Path,
    arch: str,
    plan: str,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    vocab: Any = None,
    pre: str | None = None,
) -> None:
    """Stream a GGUF with ``REAL_SIZE[arch]``'s shapes in llama.cpp's ``plan`` mix to ``path``.

    Random quantised blocks are made and written 64 MiB at a time (no float copy of any
    tensor); ``progress(bytes_done, bytes_total)`` is called after each tensor. ``vocab`` (an
    `bench.synth.vocab.Vocab`, e.g. Qwen's real 151k tokens) replaces the bundled
    tokenizer, and the embedding and head grow to its size: opening costs what a real file's
    does. ``arch`` may name a bigger shape of an architecture (`VARIANTS`: "qwen2-7b").
    """
    if plan not in PLANS:
        raise ValueError(f"plan must be one of {list(PLANS)}, got {plan!r}")
    config, label = real_size_config(arch), real_size(arch).checkpoint.split("/")[-1]
    arch = base_arch(arch)  # a `VARIANTS` shape ("qwen2-7b") has its architecture's layout
    if vocab is not None:
        config.vocab_size = len(vocab.tokens)
    specs = tensor_specs(arch, config)
    types = tensor_types([(s.name, s.shape) for s in specs], plan)
    writer = _writer(path, arch, config, file_type(plan), label, vocab, pre)
    sizes = {s.name: _nbytes(s, types[s.name]) for s in specs}
    for s in specs:
        byte_shape = (*s.shape[:-1], sizes[s.name] // math.prod(s.shape[:-1]))
        writer.add_tensor_info(s.name, byte_shape, np.dtype(np.uint8), sizes[s.name], types[s.name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    _stream_tensors(writer, specs, types, derived_tensors(arch, config), seed, sizes, progress)
    writer.close()


def _stream_tensors(
    writer: GGUFWriter,
    specs: list[TensorSpec],
    types: dict[str, GGMLQuantizationType],
    consts: dict[str, np.ndarray],
    seed: int,
    sizes: dict[str, int],
    progress: Callable[[int, int], None] | None,
) -> None:
    assert writer.fout is not None
    fout, rng, done, total = writer.fout[0], np.random.default_rng(seed), 0, sum(sizes.values())
    for spec in specs:
        writer.write_padding(fout, fout.tell())  # tensor data is aligned, as write_tensor_data
        for chunk in _chunks(rng, spec, types[spec.name], consts, REAL_STD, CHUNK_BYTES):
            chunk.tofile(fout)
        writer.write_padding(fout, sizes[spec.name])
        done += sizes[spec.name]
        if progress is not None:
            progress(done, total)


def _chunks(
    rng: np.random.Generator,
    spec: TensorSpec,
    qtype: GGMLQuantizationType,
    consts: dict[str, np.ndarray],
    std: float,
    chunk_bytes: int | None,
) -> Iterator[np.ndarray]:
    """The tensor's file data in row chunks (one chunk when ``chunk_bytes`` is None)."""
    if spec.kind == "const":
        yield consts[spec.name].astype(np.float32)
    elif spec.kind == "norm":  # what llama.cpp multiplies by (gemma: HF weight + 1)
        yield (1.0 + 0.1 * np.clip(rng.standard_normal(spec.shape), -4, 4)).astype(np.float32)
    elif spec.kind == "bias":
        yield (0.1 * rng.standard_normal(spec.shape)).astype(np.float32)
    else:
        rows, cols = spec.shape
        step = rows if chunk_bytes is None else max(1, chunk_bytes // row_bytes(qtype, cols))
        for start in range(0, rows, step):
            yield random_blocks(rng, qtype, min(step, rows - start), cols, std)


def _nbytes(spec: TensorSpec, qtype: GGMLQuantizationType) -> int:
    return math.prod(spec.shape[:-1]) * row_bytes(qtype, spec.shape[-1])


def _dims(config: transformers.PretrainedConfig) -> _Dims:
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return _Dims(
        hidden=config.hidden_size,
        ffn=config.intermediate_size,
        layers=config.num_hidden_layers,
        heads=heads,
        kv_heads=config.num_key_value_heads,
        head_dim=head_dim,
        vocab=config.vocab_size,
    )


def _rope(config: transformers.PretrainedConfig) -> dict[str, Any]:
    """The (global layers') rope parameters; gemma3 keeps one dict per layer type."""
    rope = dict(config.rope_parameters or {})
    return dict(rope.get("full_attention", rope))


def _block_specs(arch: str, d: _Dims, p: str) -> list[TensorSpec]:
    q, kv, gemma = d.heads * d.head_dim, d.kv_heads * d.head_dim, arch.startswith("gemma")

    def norm(name: str, size: int = d.hidden) -> TensorSpec:
        return TensorSpec(f"{p}{name}.weight", (size,), "norm")

    def mat(name: str, rows: int, cols: int) -> TensorSpec:
        return TensorSpec(f"{p}{name}.weight", (rows, cols), "matrix")

    out = [norm("attn_norm")]
    if arch == "phi3":  # one fused matrix: q rows, then k, then v
        out.append(mat("attn_qkv", q + 2 * kv, d.hidden))
    else:
        out += [mat("attn_q", q, d.hidden), mat("attn_k", kv, d.hidden)]
        out.append(mat("attn_v", kv, d.hidden))
    if arch == "qwen2":
        sizes = {"q": q, "k": kv, "v": kv}
        out += [TensorSpec(f"{p}attn_{x}.bias", (n,), "bias") for x, n in sizes.items()]
    if arch in ("qwen3", "gemma3"):
        out += [norm("attn_q_norm", d.head_dim), norm("attn_k_norm", d.head_dim)]
    out.append(mat("attn_output", d.hidden, q))
    out += [norm("post_attention_norm"), norm("ffn_norm")] if gemma else [norm("ffn_norm")]
    if arch == "phi3":  # gate rows, then up rows (HF gate_up_proj as is)
        out.append(mat("ffn_up", 2 * d.ffn, d.hidden))
    else:
        out += [mat("ffn_gate", d.ffn, d.hidden), mat("ffn_up", d.ffn, d.hidden)]
    out.append(mat("ffn_down", d.hidden, d.ffn))
    return [*out, norm("post_ffw_norm")] if gemma else out


def derived_tensors(arch: str, config: transformers.PretrainedConfig) -> dict[str, np.ndarray]:
    """Tensors derived from the config: llama3 rope_freqs, phi3 longrope factors."""
    rope = _rope(config)
    if arch == "llama" and rope.get("rope_type") == "llama3":
        return {"rope_freqs.weight": _llama3_factors(rope, _dims(config).head_dim)}
    if arch == "phi3" and rope.get("rope_type") == "longrope":
        return {
            "rope_factors_long.weight": np.asarray(rope["long_factor"], np.float32),
            "rope_factors_short.weight": np.asarray(rope["short_factor"], np.float32),
        }
    return {}


def _llama3_factors(rope: dict[str, Any], head_dim: int) -> np.ndarray:
    """convert_hf_to_gguf's llama3 divisors of each rotary frequency (HF's llama3 rope)."""
    exponents = np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)
    freqs = 1.0 / np.float32(rope["rope_theta"]) ** exponents
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old_context = rope["original_max_position_embeddings"]
    wavelen = 2 * math.pi / freqs.astype(np.float64)
    smooth = (old_context / wavelen - low) / (high - low)
    medium = 1 / ((1 - smooth) / factor + smooth)
    out = np.where(wavelen < old_context / high, 1.0, medium)
    return np.where(wavelen > old_context / low, factor, out).astype(np.float32)


def _writer(
    path: Path,
    arch: str,
    config: transformers.PretrainedConfig,
    ftype: int,
    label: str,
    vocab: Any = None,
    pre: str | None = None,
) -> GGUFWriter:
    writer = GGUFWriter(str(path), arch)
    writer.add_type("model")
    # llama.cpp keys token attributes off general.name: a name with "phi3"/"phi-3" in it
    # looks up "</s>", which this tokenizer lacks (and transformers reads "mistral" as mistral).
    writer.add_name(f"synth {label} ({'phi' if arch == 'phi3' else arch} layout)")
    _add_hparams(writer, arch, config)
    writer.add_file_type(ftype)
    writer.add_quantization_version(GGML_QUANT_VERSION)
    if vocab is not None:
        from bench.synth.vocab import add_vocab

        add_vocab(writer, vocab, pre)
        return writer
    for key, value, vtype, sub_type in _tokenizer_fields(config.vocab_size):
        writer.add_key_value(key, value, vtype, sub_type)
    return writer


def _add_hparams(w: GGUFWriter, arch: str, config: transformers.PretrainedConfig) -> None:
    d, rope = _dims(config), _rope(config)
    w.add_block_count(d.layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(d.hidden)
    w.add_feed_forward_length(d.ffn)
    w.add_head_count(d.heads)
    w.add_head_count_kv(d.kv_heads)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_rope_freq_base(rope.get("rope_theta", 10000.0))  # gemma3: the global layers' base
    w.add_vocab_size(d.vocab)
    if arch in ("llama", "qwen3", "gemma2", "gemma3"):  # their config.json has head_dim
        w.add_key_length(d.head_dim)
        w.add_value_length(d.head_dim)
    if arch == "llama":
        w.add_rope_dimension_count(d.head_dim)
    if arch.startswith("gemma"):
        w.add_sliding_window(config.sliding_window)
    if arch == "gemma2":
        w.add_attn_logit_softcapping(config.attn_logit_softcapping)
        w.add_final_logit_softcapping(config.final_logit_softcapping)
    if arch == "gemma3" and rope.get("rope_type") == "linear":
        w.add_rope_scaling_type(RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rope["factor"])
    if arch == "phi3":
        _add_phi3_rope(w, config, d, rope)


def _add_phi3_rope(
    w: GGUFWriter, config: transformers.PretrainedConfig, d: _Dims, rope: dict[str, Any]
) -> None:
    original = rope.get("original_max_position_embeddings")
    original = original or config.original_max_position_embeddings
    w.add_rope_scaling_orig_ctx_len(original)
    partial = rope.get("partial_rotary_factor", 1.0)
    w.add_rope_dimension_count(int(partial * d.hidden) // d.heads)
    w.add_sliding_window(config.sliding_window or 0)  # 0 marks Phi-4 in llama.cpp
    if rope.get("rope_type") == "longrope":
        scale = config.max_position_embeddings / original
        attn = math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1 else 1.0
        w.add_rope_scaling_attn_factors(attn)


@lru_cache(maxsize=1)
def _bundled_tokenizer() -> tuple[tuple[str, Any, GGUFValueType, GGUFValueType | None], ...]:
    from engine.models import bundled_gguf_path

    fields = GGUFReader(bundled_gguf_path()).fields.items()
    return tuple(
        (key, f.contents(), f.types[0], f.types[-1] if f.types[0] == GGUFValueType.ARRAY else None)
        for key, f in fields
        if key.startswith("tokenizer.")
    )


def _tokenizer_fields(vocab: int) -> list[tuple[str, Any, GGUFValueType, GGUFValueType | None]]:
    """The bundled tokenizer's keys, its token list padded with "<|extra_i|>" to ``vocab``."""
    out = []
    for key, value, vtype, sub_type in _bundled_tokenizer():
        if key == "tokenizer.ggml.tokens":
            if vocab < len(value):
                raise ValueError(f"vocab_size {vocab} < the tokenizer's {len(value)} tokens")
            value = value + [f"<|extra_{i}|>" for i in range(vocab - len(value))]
        elif key == "tokenizer.ggml.token_type":
            value = value + [int(TokenType.CONTROL)] * (vocab - len(value))
        elif key == "tokenizer.ggml.scores":
            value = value + [0.0] * (vocab - len(value))
        out.append((key, value, vtype, sub_type))
    return out


def _hf_names(model: torch.nn.Module, arch: str, n_layers: int) -> dict[str, str]:
    """GGUF tensor name -> HF parameter name, by gguf-py's TensorNameMap (as convert does)."""
    model_arch = next(k for k, v in MODEL_ARCH_NAMES.items() if v == arch)
    name_map = get_tensor_name_map(model_arch, n_layers)
    out = {}
    for hf_name in model.state_dict():
        base, suffix = hf_name.rsplit(".", 1)
        if (gguf_base := name_map.get_name(base)) is not None:
            out[f"{gguf_base}.{suffix}"] = hf_name
    return out


def _to_hf(
    arch: str, config: transformers.PretrainedConfig, name: str, w: np.ndarray
) -> np.ndarray:
    """Undo convert_hf_to_gguf's changes: llama's Q/K row permutation, gemma's norm + 1."""
    if arch == "llama" and name.endswith(("attn_q.weight", "attn_k.weight")):
        heads = config.num_attention_heads if "attn_q" in name else config.num_key_value_heads
        rows = w.shape[0]
        return w.reshape(heads, rows // heads // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)
    if arch.startswith("gemma") and name.endswith("norm.weight"):
        return w - np.float32(1.0)  # exact: the stored value is within [0.5, 2]
    return w


def _load_state(model: torch.nn.Module, state: dict[str, np.ndarray]) -> None:
    params = dict(model.named_parameters())
    missing = sorted(set(params) - set(state))
    if missing:
        raise RuntimeError(f"the synthetic GGUF layout has no tensor for {missing}")
    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(torch.from_numpy(np.ascontiguousarray(value)))
