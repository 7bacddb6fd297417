"""The GGUF's hyper-parameters as a transformers config, for the exact float32 torch path.

transformers' GGUF loader reads only part of what llama.cpp reads, so on its own it builds a
different model than the file describes: qwen3's ``head_dim`` (``key_length`` is not mapped),
gemma's query scale (``query_pre_attn_scalar`` is not in a GGUF; llama.cpp uses
1/sqrt(head_dim)), gemma2's soft-capping, phi3's partial rotary, longrope factors and original
context, and llama3's ``rope_freqs`` divisors are all lost. This module owns putting them back:
`config_overrides` (the config fields to set, from the `HParams` the fast path reads) and
`patch_rotary` (what a config cannot say: llama3's per-frequency divisors, and llama.cpp's
choice of Phi-3's long factors for every position when the context window exceeds the trained
one). Both follow `engine.arch.hparams.rope_tables`, so the torch path rotates as the fast path
and llama.cpp do.

It also owns `torch_config`: the whole config.json for the torch path, written from the
file's metadata values (`engine.gguf.reader`) plus `config_overrides`, with no transformers
GGUF reader (which re-parsed the whole vocabulary per call, and cannot read qwen35, gemma4 or
gpt-oss's rope keys). `TORCH_MODEL_TYPES` lists the GGUF architectures it writes; the others
run on the fast path only.

Does not own reading the file (`engine.arch.hparams`, `engine.gguf.reader`), the header
cache that stores the config (`engine.header_cache`) or loading weights (`engine.loader`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.arch.hparams import HParams, attention_scale

_SOFTCAP_ARCHS = ("gemma2", "gemma3")  # configs with attention / final logit soft-capping
_WINDOW_ARCHS = ("gemma2", "gemma3", "phi3")  # configs whose sliding_window transformers uses


def config_overrides(hp: HParams) -> dict[str, Any]:
    """The transformers config fields that make a model of ``hp``'s architecture compute what
    the GGUF describes (to set on the config transformers read from the same file)."""
    out: dict[str, Any] = {
        "head_dim": hp.head_dim,
        "max_position_embeddings": hp.context,
        "rope_parameters": _rope_parameters(hp),
    }
    if hp.arch in _SOFTCAP_ARCHS:
        out["query_pre_attn_scalar"] = _query_pre_attn_scalar(hp)
        out["attn_logit_softcapping"] = hp.attn_softcap or None
        out["final_logit_softcapping"] = hp.final_softcap or None
    if hp.arch in _WINDOW_ARCHS or hp.sliding_window:
        out["sliding_window"] = hp.sliding_window or None  # 0: none (llama.cpp's Phi-4 mark)
    if _is_longrope(hp):
        out["original_max_position_embeddings"] = hp.rope_orig_context  # Phi3Config's own field
    return out


def patch_rotary(model: Any, hp: HParams, window: int = 0) -> None:
    """Set ``model``'s rotary frequencies to those `rope_tables` uses, where its config cannot.

    - llama3 (``rope_freqs.weight``): every global rotary's ``inv_freq`` (and
      ``original_inv_freq``) becomes base^(-2i/d) / factor_i.
    - Phi-3 longrope, ``window`` beyond the trained context: llama.cpp picks the long factors
      once per context, for every position; transformers would use the short ones until the
      sequence itself passes the trained context, so the long ones replace both sets.
    Anything else is left as the config built it. ``window``: the context window in use.
    """
    inv = _patched_inv_freq(hp, window)
    if inv is None:
        return
    for module in model.modules():
        for prefix in _global_prefixes(module):
            for name in ("inv_freq", "original_inv_freq", "long_inv_freq"):
                _copy_into(module, prefix + name, inv)


def rotary_inv_freq(hp: HParams, window: int = 0) -> np.ndarray:
    """The global layers' inverse frequencies (rope_dim/2,) float64, as `rope_tables` builds
    its angles for ``window`` (linear scaling folded in)."""
    half = hp.rope_dim // 2
    inv = 1.0 / hp.rope_base ** (np.arange(half, dtype=np.float64) * 2 / hp.rope_dim)
    factors = hp.rope_factors
    if _is_longrope(hp) and window > hp.rope_orig_context:
        factors = hp.rope_factors_long
    if factors:
        inv = inv / np.asarray(factors, dtype=np.float64)[:half]
    return inv / hp.rope_scale


def _rope_parameters(hp: HParams) -> dict[str, Any]:
    """``rope_parameters`` as transformers 5 names them (nested per layer type for gemma3)."""
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": hp.rope_base}
    if hp.rope_scale != 1.0:
        rope.update(rope_type="linear", factor=hp.rope_scale)
    if hp.rope_dim != hp.head_dim:
        rope["partial_rotary_factor"] = hp.rope_dim / hp.head_dim
    if _is_longrope(hp):
        rope.update(
            rope_type="longrope",
            short_factor=list(hp.rope_factors),
            long_factor=list(hp.rope_factors_long),
            original_max_position_embeddings=hp.rope_orig_context,
            attention_factor=hp.rope_attn_factor,
            factor=max(1.0, hp.context / hp.rope_orig_context),  # only names the ratio
        )
    local_base = hp.spec.local_rope_base
    if local_base is None:
        return rope
    local = {"rope_type": "default", "rope_theta": local_base}
    return {"full_attention": rope, "sliding_attention": local}


def _query_pre_attn_scalar(hp: HParams) -> int:
    """Gemma scales queries by query_pre_attn_scalar**-0.5: head_dim unless the file's scale
    says otherwise (transformers holds an int: every Gemma's scalar is one)."""
    return round(attention_scale(hp) ** -2)


def _is_longrope(hp: HParams) -> bool:
    return bool(hp.rope_factors_long and hp.rope_orig_context)


def _patched_inv_freq(hp: HParams, window: int) -> np.ndarray | None:
    """The frequencies to write into the model, or None when its config already has them."""
    if _is_longrope(hp):
        return rotary_inv_freq(hp, window) if window > hp.rope_orig_context else None
    return rotary_inv_freq(hp) if hp.rope_factors else None


def _global_prefixes(module: Any) -> list[str]:
    """Buffer-name prefixes of the global (not sliding) rotary in ``module``, if it is one."""
    if hasattr(module, "original_inv_freq"):
        return [""]
    if hasattr(module, "full_attention_original_inv_freq"):  # one rotary per layer type
        return ["full_attention_"]
    return []


def _copy_into(module: Any, name: str, inv: np.ndarray) -> None:
    import torch

    current = getattr(module, name, None)
    if not isinstance(current, torch.Tensor):
        return
    if tuple(current.shape) != inv.shape:
        raise ValueError(
            f"the model rotates {2 * current.shape[-1]} dimensions per head, "
            f"the GGUF {2 * inv.shape[0]}"
        )
    with torch.no_grad():
        current.copy_(torch.from_numpy(inv).to(dtype=current.dtype, device=current.device))


# GGUF general.architecture -> transformers model_type, for the architectures whose torch
# config this module can write from the file's metadata alone (no transformers GGUF reader).
TORCH_MODEL_TYPES = {
    "llama": "llama",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
    "qwen3moe": "qwen3_moe",
    "mistral": "mistral",  # llama.cpp writes Mistral 7B as "llama"; older converters did not
}
# model_type -> its transformers causal-LM class (config.json's "architectures"), so writing a
# config does not import transformers (seconds on a busy machine).
TORCH_CLASSES = {
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM",
    "phi3": "Phi3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "mistral": "MistralForCausalLM",
}


def torch_config(
    meta: dict[str, Any], tensor_names: set[str], hp: HParams | None
) -> dict[str, Any] | None:
    """The transformers config dict (``model_type`` and fields) for the exact torch path, from
    a GGUF's metadata values and tensor names, with `config_overrides` applied where the fast
    path read ``hp``. None for an architecture the torch path cannot read (`TORCH_MODEL_TYPES`).
    """
    arch = str(meta.get("general.architecture") or "")
    model_type = TORCH_MODEL_TYPES.get(arch)
    if model_type is None:
        return None

    def get(key: str, default: Any = None) -> Any:
        value = meta.get(f"{arch}.{key}", default)
        return value.tolist() if isinstance(value, np.ndarray) else value

    heads = int(get("attention.head_count"))
    hidden = int(get("embedding_length"))
    out: dict[str, Any] = {
        "model_type": model_type,
        "architectures": [TORCH_CLASSES[model_type]],
        "vocab_size": len(meta.get("tokenizer.ggml.tokens") or ()) or None,
        "hidden_size": hidden,
        "num_hidden_layers": int(get("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": _per_model(get("attention.head_count_kv", heads)),
        "rms_norm_eps": float(get("attention.layer_norm_rms_epsilon", 1e-6)),
        "max_position_embeddings": int(get("context_length", 2048)),
        "head_dim": int(get("attention.key_length", hidden // heads)),
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": float(get("rope.freq_base", 1e4)),
        },
        "tie_word_embeddings": "output.weight" not in tensor_names,
    }
    if get("feed_forward_length") is not None:
        out["intermediate_size"] = _per_model(get("feed_forward_length"))
    for name, key in (("bos", "bos"), ("eos", "eos"), ("pad", "padding"), ("unk", "unknown")):
        value = meta.get(f"tokenizer.ggml.{key}_token_id")
        if isinstance(value, int):
            out[f"{name}_token_id"] = value
    if isinstance(meta.get("general.name"), str):
        out["_model_name_or_path"] = meta["general.name"]  # as transformers' reader names it
    out.update(_ARCH_EXTRAS.get(arch, {}))
    if arch == "qwen3moe":
        out.update(
            num_experts=int(get("expert_count")),
            num_experts_per_tok=int(get("expert_used_count")),
            moe_intermediate_size=int(get("expert_feed_forward_length")),
            norm_topk_prob=True,  # llama.cpp renormalises the chosen experts' weights
        )
    if hp is not None:
        out.update(config_overrides(hp))
    return out


_ARCH_EXTRAS: dict[str, dict[str, Any]] = {
    "gemma2": {"hidden_activation": "gelu_pytorch_tanh"},
    "gemma3": {"hidden_activation": "gelu_pytorch_tanh"},
    "qwen2": {"use_sliding_window": False},
    "qwen3": {"use_sliding_window": False},
}


def _per_model(value: Any) -> int:
    """A count some files store per layer; the torch configs here take one."""
    if isinstance(value, list | tuple):
        return int(max(value))
    return int(value)
