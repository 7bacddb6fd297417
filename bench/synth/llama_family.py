"""Synthetic files of llama-layout families: SmolLM3 (``smollm3``) and Granite (``granite``).

Both convert with llama.cpp's llama converter (``SmolLM3Model(LlamaModel)``,
``GraniteModel(LlamaModel)``), so their tensors are llama's, Q/K rows permuted for pair-wise
rotation. SmolLM3 is llama with NoPE layers: every fourth layer attends without rotary
embeddings (transformers' ``no_rope_layers``; llama.cpp hard-codes the step of 4). Granite
scales the embeddings, each block's output, the attention scores and the logits by the
config's multipliers, which the converter writes as ``embedding_scale``, ``residual_scale``,
``attention.scale`` and ``logit_scale``. Owns `write_tiny_smollm3` and `write_tiny_granite`
(a tiny file plus the float32 transformers model holding exactly its dequantised weights);
reuses `bench.synth.core`'s llama layout and writer. Does not own quant mixes or block bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from bench.synth.blocks import reference_weights
from bench.synth.configs import TOKENIZER_VOCAB
from bench.synth.core import (
    TINY_STD,
    _chunks,
    _hf_names,
    _load_state,
    _to_hf,
    _writer,
    tensor_specs,
)
from bench.synth.plans import Quant, file_type, tensor_types

_COMMON: dict[str, Any] = {
    "vocab_size": TOKENIZER_VOCAB,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "pad_token_id": None,  # SmolLM3's and Granite's defaults name ids of larger vocabularies
    "bos_token_id": None,
    "eos_token_id": None,
}
TINY_SMOLLM3: dict[str, Any] = {  # 8 layers: NoPE at 3 and 7, as SmolLM3-3B's every 4th
    **_COMMON,
    "num_hidden_layers": 8,
    "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0},
}
TINY_GRANITE: dict[str, Any] = {  # granite-3.3-2b's multipliers (attention: 1/64 -> 1/32)
    **_COMMON,
    "num_hidden_layers": 2,
    "embedding_multiplier": 12.0,
    "residual_multiplier": 0.22,
    "attention_multiplier": 0.03125,
    "logits_scaling": 8.0,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0},
}


def tiny_smollm3_config(**overrides: Any) -> transformers.PretrainedConfig:
    return transformers.SmolLM3Config(**{**TINY_SMOLLM3, **overrides})


def tiny_granite_config(**overrides: Any) -> transformers.PretrainedConfig:
    return transformers.GraniteConfig(**{**TINY_GRANITE, **overrides})


def write_tiny_smollm3(
    path: Path, quant: Quant, config: transformers.PretrainedConfig | None = None, seed: int = 0
) -> torch.nn.Module:
    """Write a tiny random smollm3 GGUF to ``path``; return its float32 transformers twin."""
    return _write(path, "smollm3", quant, config or tiny_smollm3_config(), seed)


def write_tiny_granite(
    path: Path, quant: Quant, config: transformers.PretrainedConfig | None = None, seed: int = 0
) -> torch.nn.Module:
    """Write a tiny random granite GGUF to ``path``; return its float32 transformers twin."""
    return _write(path, "granite", quant, config or tiny_granite_config(), seed)


def _write(
    path: Path, arch: str, quant: Quant, config: transformers.PretrainedConfig, seed: int
) -> torch.nn.Module:
    torch.manual_seed(seed)
    auto: Any = transformers.AutoModelForCausalLM  # from_config is untyped
    model: torch.nn.Module = auto.from_config(
        config, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    specs = tensor_specs("llama", config)  # the llama converter's tensors
    types = tensor_types([(s.name, s.shape) for s in specs], quant)
    hf_names = _hf_names(model, arch, config.num_hidden_layers)
    rng, state = np.random.default_rng(seed), {}
    writer = _writer(path, arch, config, file_type(quant), "tiny")
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    if arch == "granite":  # the converter renames the *_multiplier fields *_scale
        writer.add_embedding_scale(config.embedding_multiplier)
        writer.add_residual_scale(config.residual_multiplier)
        writer.add_attention_scale(config.attention_multiplier)
        writer.add_logit_scale(config.logits_scaling)
    for spec in specs:
        (data,) = _chunks(rng, spec, types[spec.name], {}, TINY_STD, chunk_bytes=None)
        writer.add_tensor(spec.name, data, raw_dtype=types[spec.name])
        if spec.name in hf_names:
            weights = reference_weights(data, types[spec.name])
            state[hf_names[spec.name]] = _to_hf("llama", config, spec.name, weights)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _load_state(model, state)
    return model
