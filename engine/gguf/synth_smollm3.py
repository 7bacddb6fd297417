"""Synthetic SmolLM3 (GGUF arch ``smollm3``) files, laid out as llama.cpp's converter writes them.

SmolLM3 is llama with NoPE layers: every fourth layer attends without rotary embeddings
(transformers' ``no_rope_layers``; llama.cpp hard-codes the step of 4). The converter is
llama's (``SmolLM3Model(LlamaModel)``), so the tensors are llama's, Q/K rows permuted for
pair-wise rotation. Owns `write_tiny_smollm3` (a tiny file plus transformers' float32
``SmolLM3ForCausalLM`` holding exactly its dequantised weights); reuses `engine.gguf.synth`'s
llama layout and writer. Does not own the quant mixes or block bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from engine.gguf.synth import (
    TINY_STD,
    _chunks,
    _hf_names,
    _load_state,
    _to_hf,
    _writer,
    tensor_specs,
)
from engine.gguf.synth_blocks import reference_weights
from engine.gguf.synth_configs import TOKENIZER_VOCAB
from engine.gguf.synth_plans import Quant, file_type, tensor_types

ARCH = "smollm3"
TINY_SMOLLM3: dict[str, Any] = {  # 8 layers: NoPE at 3 and 7, as SmolLM3-3B's every 4th
    "vocab_size": TOKENIZER_VOCAB,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 8,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0},
    "pad_token_id": None,  # SmolLM3's defaults name ids of its 128k vocabulary
    "bos_token_id": None,
    "eos_token_id": None,
}


def tiny_smollm3_config(**overrides: Any) -> transformers.PretrainedConfig:
    return transformers.SmolLM3Config(**{**TINY_SMOLLM3, **overrides})


def write_tiny_smollm3(
    path: Path, quant: Quant, config: transformers.PretrainedConfig | None = None, seed: int = 0
) -> torch.nn.Module:
    """Write a tiny random smollm3 GGUF to ``path``; return its float32 transformers twin."""
    config = config if config is not None else tiny_smollm3_config()
    torch.manual_seed(seed)
    auto: Any = transformers.AutoModelForCausalLM  # from_config is untyped
    model: torch.nn.Module = auto.from_config(
        config, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    specs = tensor_specs("llama", config)  # the llama converter's tensors
    types = tensor_types([(s.name, s.shape) for s in specs], quant)
    hf_names = _hf_names(model, ARCH, config.num_hidden_layers)
    rng, state = np.random.default_rng(seed), {}
    writer = _writer(path, ARCH, config, file_type(quant), "tiny")
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
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
