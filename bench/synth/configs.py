"""Hyper-parameters of the synthetic models: tiny ones for parity tests, real-size for benchmarks.

Owns `tiny_config` (a few-layer transformers config per architecture that still exercises its
quirks: GQA, llama3 rope scaling, qwen2 biases, qwen3 q/k norms and head_dim != hidden/heads,
gemma2 softcaps and alternating sliding window, gemma3's 5 local : 1 global pattern, phi3's fused
qkv / gate_up, partial rotary and longrope), `REAL_SIZE` (the shapes of a popular checkpoint per
architecture, from their config.json) and `hf_gguf_overrides` (what transformers' GGUF loader
does not read back). Does not own tensors or files; see `synth`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import transformers

DENSE_ARCHS = ("llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3")
TOKENIZER_VOCAB = 49152  # the bundled SmolLM2 tokenizer's size
_CLASSES = {
    "llama": "LlamaConfig",
    "qwen2": "Qwen2Config",
    "qwen3": "Qwen3Config",
    "gemma2": "Gemma2Config",
    "gemma3": "Gemma3TextConfig",
    "phi3": "Phi3Config",
}
_COMMON = {"vocab_size": TOKENIZER_VOCAB, "num_attention_heads": 4, "num_key_value_heads": 2}
_TINY: dict[str, dict[str, Any]] = {
    "llama": {  # untied; llama3 rope with a short original context so its factors matter
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "head_dim": 32,
        "tie_word_embeddings": False,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_parameters": {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    },
    "qwen2": {  # widths not multiples of 256: Q4_K_M falls back to Q5_0 / Q8_0
        "hidden_size": 128,
        "intermediate_size": 352,
        "num_hidden_layers": 2,
        "tie_word_embeddings": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    "qwen3": {  # head_dim * heads != hidden, as in Qwen3-0.6B
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "head_dim": 64,
        "tie_word_embeddings": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    "gemma2": {  # llama.cpp scales queries by 1/sqrt(head_dim): query_pre_attn_scalar = head_dim
        "hidden_size": 128,
        "intermediate_size": 320,
        "num_hidden_layers": 4,
        "head_dim": 32,
        "query_pre_attn_scalar": 32,
        "sliding_window": 8,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
    },
    "gemma3": {
        "hidden_size": 128,
        "intermediate_size": 384,
        "num_hidden_layers": 6,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "query_pre_attn_scalar": 32,
        "sliding_window": 8,
    },
    "phi3": {  # Phi-4-mini-like: GQA, partial rotary, longrope; untied like Phi-3.5-mini
        # head_dim 64 and 0.75 rotary: 48 rotated dims, a multiple of 16 as in Phi-4-mini (96)
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "tie_word_embeddings": False,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "sliding_window": None,
        "rope_parameters": {"rope_type": "longrope", "partial_rotary_factor": 0.75},
    },
}


@dataclass(frozen=True)
class RealSize:
    checkpoint: str  # the Hugging Face checkpoint whose config.json the shapes come from
    params: dict[str, Any] = field(default_factory=dict)


REAL_SIZE: dict[str, RealSize] = {
    "qwen2": RealSize(
        "Qwen/Qwen2.5-0.5B-Instruct",
        {
            "hidden_size": 896,
            "intermediate_size": 4864,
            "num_hidden_layers": 24,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
            "vocab_size": 151936,
            "max_position_embeddings": 32768,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        },
    ),
    "llama": RealSize(
        "meta-llama/Llama-3.2-1B-Instruct",
        {
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "rms_norm_eps": 1e-5,
            "tie_word_embeddings": True,
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 500000.0,
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
        },
    ),
    "qwen3": RealSize(
        "Qwen/Qwen3-0.6B",
        {
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 151936,
            "max_position_embeddings": 40960,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        },
    ),
    "gemma2": RealSize(
        "google/gemma-2-2b-it",
        {
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 26,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "vocab_size": 256000,
            "max_position_embeddings": 8192,
            "sliding_window": 4096,
            "query_pre_attn_scalar": 256,
        },
    ),
    "gemma3": RealSize(
        "google/gemma-3-1b-it",
        {
            "hidden_size": 1152,
            "intermediate_size": 6912,
            "num_hidden_layers": 26,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "head_dim": 256,
            "vocab_size": 262144,
            "max_position_embeddings": 32768,
            "sliding_window": 512,
            "query_pre_attn_scalar": 256,
        },
    ),
    "phi3": RealSize(  # Phi-3.5-mini's 32064-token vocabulary is smaller than the tokenizer's
        "microsoft/Phi-4-mini-instruct",
        {
            "hidden_size": 3072,
            "intermediate_size": 8192,
            "num_hidden_layers": 32,
            "num_attention_heads": 24,
            "num_key_value_heads": 8,
            "vocab_size": 200064,
            "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096,
            "sliding_window": 262144,
            "tie_word_embeddings": True,
            "rope_parameters": {"rope_type": "longrope", "partial_rotary_factor": 0.75},
        },
    ),
}


# Bigger shapes of a dense architecture, named "ARCH-SIZE" (`base_arch` gives ARCH): the same
# layout and metadata at another checkpoint's size, for opening and memory at that size.
VARIANTS: dict[str, RealSize] = {
    "qwen2-7b": RealSize(  # widths are multiples of 256: Q4_K_M stays Q4_K / Q6_K here
        "Qwen/Qwen2.5-7B-Instruct",
        {
            "hidden_size": 3584,
            "intermediate_size": 18944,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "vocab_size": 152064,
            "max_position_embeddings": 32768,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        },
    ),
}


def base_arch(shape: str) -> str:
    """The architecture of a `REAL_SIZE` key or a `VARIANTS` name ("qwen2-7b" -> "qwen2")."""
    return shape.split("-", 1)[0] if shape in VARIANTS else shape


def real_size(shape: str) -> RealSize:
    """``REAL_SIZE[shape]`` or ``VARIANTS[shape]``."""
    return VARIANTS[shape] if shape in VARIANTS else REAL_SIZE[_check(shape)]


def tiny_config(arch: str, **overrides: Any) -> transformers.PretrainedConfig:
    """A tiny config for ``arch`` (``overrides`` replace its fields, e.g. hidden_size=256)."""
    return _make_config(arch, {**_COMMON, **_TINY[_check(arch)], **overrides})


def real_size_config(arch: str) -> transformers.PretrainedConfig:
    """The config of ``REAL_SIZE[arch]`` or of a `VARIANTS` shape (shapes only; weights are
    made elsewhere)."""
    return _make_config(base_arch(arch), dict(real_size(arch).params))


def hf_gguf_overrides(arch: str, config: transformers.PretrainedConfig) -> dict[str, Any]:
    """Config fields transformers' GGUF loader does not read back, to pass to from_pretrained.

    llama: llama3 rope scaling (the file has rope_freqs.weight); qwen3: head_dim (key_length is
    not mapped); gemma: query_pre_attn_scalar (llama.cpp uses 1/sqrt(head_dim)); gemma2: the
    softcaps; phi3: partial rotary, longrope and its original context.
    """
    keys = {
        "llama": ["rope_parameters"],
        "qwen2": [],
        "qwen3": ["head_dim"],
        "gemma2": ["query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping"],
        "gemma3": ["query_pre_attn_scalar"],
        "phi3": ["rope_parameters", "original_max_position_embeddings"],
    }[_check(arch)]
    return {key: getattr(config, key) for key in keys}


def _check(arch: str) -> str:
    if arch not in DENSE_ARCHS:
        raise ValueError(f"arch must be one of {DENSE_ARCHS}, got {arch!r}")
    return arch


def _make_config(arch: str, params: dict[str, Any]) -> transformers.PretrainedConfig:
    rope = dict(params.get("rope_parameters") or {})
    if rope.get("rope_type") == "longrope" and "short_factor" not in rope:
        params["rope_parameters"] = {**rope, **_longrope_factors(params, rope)}
    config_class: type[transformers.PretrainedConfig] = getattr(transformers, _CLASSES[arch])
    return config_class(**params)


def _longrope_factors(params: dict[str, Any], rope: dict[str, Any]) -> dict[str, Any]:
    """Plausible Phi-style factors: short ~1, long growing to ~40 over the rotary pairs."""
    head_dim = params["hidden_size"] // params["num_attention_heads"]
    pairs = int(head_dim * rope.get("partial_rotary_factor", 1.0)) // 2
    short = [1.0 + 0.25 * i / pairs for i in range(pairs)]
    long = [40.0 ** (i / max(pairs - 1, 1)) for i in range(pairs)]
    return {"rope_theta": 10000.0, "short_factor": short, "long_factor": long}
