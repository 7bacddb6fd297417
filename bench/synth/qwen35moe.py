"""Synthetic Qwen3.5 MoE (GGUF arch ``qwen35moe``) files: qwen35's hybrid layers, MoE FFNs.

Owns what a qwen35moe file adds to qwen35's layout (`bench.synth.qwen35`, reused for the
attention/DeltaNet blocks, the MTP block, metadata and the converter's transforms): each
block's dense MLP becomes a float32 router ``ffn_gate_inp`` (as llama-quantize leaves it),
stacked experts ``ffn_{gate,up,down}_exps`` (experts × rows × cols; or, as newer converters
write them, ``ffn_gate_up_exps`` holding each expert's gate rows then up rows), a shared expert
``ffn_{gate,up,down}_shexp`` and its per-row gate vector ``ffn_gate_inp_shexp`` (hidden,),
with the keys ``expert_count``, ``expert_used_count``, ``expert_feed_forward_length`` and
``expert_shared_feed_forward_length`` and no ``feed_forward_length`` (the model has no dense
MLP), as llama.cpp's converter writes Qwen3.5-35B-A3B. Routers are drawn
`bench.synth.moe.ROUTER_STD` wide so each token's top-k is decisive.
`write_tiny_qwen35moe` returns transformers' float32 ``Qwen3_5MoeForCausalLM`` holding exactly
the file's dequantised weights (fused ``gate_up_proj``: gate rows then up rows);
`write_real_size_qwen35moe` writes a benchmark file (`REAL_QWEN35MOE`).
Does not own the quant mixes (`synth_plans`) or block bytes (`synth_blocks`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

from bench.synth import qwen35 as q35
from bench.synth.blocks import random_blocks, reference_weights
from bench.synth.moe import ROUTER_STD
from bench.synth.plans import Quant, file_type, tensor_types

ARCH = "qwen35moe"
SHARED_GATE_STD = 0.05  # σ(x · w) spread over ~0.3..0.7 on normalised rows of width 256

TINY_QWEN35MOE: dict[str, Any] = {
    **{k: v for k, v in q35.TINY_QWEN35.items() if k != "intermediate_size"},
    "moe_intermediate_size": 256,  # 256 columns: ffn_down_exps really takes Q4_K/Q6_K
    "shared_expert_intermediate_size": 512,  # not the experts' width, so a mix-up shows
    "num_experts": 8,
    "num_experts_per_tok": 3,
}
# Qwen3.5-0.8B's trunk (`bench.synth.qwen35.REAL_QWEN35`) with MoE FFNs shaped like
# Qwen3.5-35B-A3B's at a quarter of its experts: 64 of width 512, 8 routed, a 512-wide shared
# expert (35B-A3B: 256, 8, 512), so a token reads 1/8 of the expert weights; 2.4B in all.
REAL_QWEN35MOE: dict[str, Any] = {
    **{k: v for k, v in q35.REAL_QWEN35.items() if k != "intermediate_size"},
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "num_experts": 64,
    "num_experts_per_tok": 8,
}
_HF_MOE = {
    "ffn_gate_inp.weight": "mlp.gate.weight",
    "ffn_gate_shexp.weight": "mlp.shared_expert.gate_proj.weight",
    "ffn_up_shexp.weight": "mlp.shared_expert.up_proj.weight",
    "ffn_down_shexp.weight": "mlp.shared_expert.down_proj.weight",
}


def tiny_qwen35moe_config(**overrides: Any) -> transformers.PretrainedConfig:
    return transformers.Qwen3_5MoeTextConfig(**{**TINY_QWEN35MOE, **overrides})


def write_tiny_qwen35moe(
    path: Path,
    quant: Quant,
    config: transformers.PretrainedConfig | None = None,
    seed: int = 0,
    fused_gate_up: bool = False,
) -> torch.nn.Module:
    """Write a tiny random qwen35moe GGUF (with an MTP block); return its transformers twin.

    ``fused_gate_up``: one ``ffn_gate_up_exps`` per block (each expert's gate rows, then its
    up rows), as newer llama.cpp converters write, instead of ``ffn_gate_exps`` and
    ``ffn_up_exps``.
    """
    config = config if config is not None else tiny_qwen35moe_config()
    torch.manual_seed(seed)
    auto: Any = transformers.AutoModelForCausalLM
    model: torch.nn.Module = auto.from_config(
        config, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    q35._load(model, _write(path, config, quant, seed, fused_gate_up))
    return model


def write_real_size_qwen35moe(path: Path, plan: str, seed: int = 0) -> None:
    """A random-weight GGUF shaped `REAL_QWEN35MOE` in llama.cpp's ``plan`` (no twin)."""
    config = transformers.Qwen3_5MoeTextConfig(**REAL_QWEN35MOE)
    _write(path, config, plan, seed, False, reference=False)


def _moe_specs(c: Any, fused_gate_up: bool) -> Any:
    h, n_exp, width = c.hidden_size, c.num_experts, c.moe_intermediate_size
    shared = c.shared_expert_intermediate_size

    def specs(p: str) -> list[q35.Spec]:
        gate_up: list[q35.Spec] = (
            [(p + "ffn_gate_up_exps.weight", (n_exp, 2 * width, h), "experts")]
            if fused_gate_up
            else [
                (p + "ffn_gate_exps.weight", (n_exp, width, h), "experts"),
                (p + "ffn_up_exps.weight", (n_exp, width, h), "experts"),
            ]
        )
        return [
            (p + "ffn_gate_inp.weight", (n_exp, h), "router"),
            *gate_up,
            (p + "ffn_down_exps.weight", (n_exp, h, width), "experts"),
            (p + "ffn_gate_inp_shexp.weight", (h,), "shared_gate"),
            (p + "ffn_gate_shexp.weight", (shared, h), "matrix"),
            (p + "ffn_up_shexp.weight", (shared, h), "matrix"),
            (p + "ffn_down_shexp.weight", (h, shared), "matrix"),
        ]

    return specs


def _write(
    path: Path, config: Any, quant: Quant, seed: int, fused_gate_up: bool, reference: bool = True
) -> dict[str, np.ndarray]:
    """Write the file; return transformers' state dict of its weights (with ``reference``)."""
    specs = q35._tensor_specs(config, _moe_specs(config, fused_gate_up))
    types = tensor_types([(n, s) for n, s, _ in specs], quant)
    types.update({n: q35.F32 for n, _, k in specs if k in ("router", "conv", "shared_gate")})
    rng = np.random.default_rng(seed)
    label = "tiny" if reference else "0.8B-trunk 64x512 experts"
    writer = q35._writer(path, config, file_type(quant), label, ARCH)
    writer.add_expert_count(config.num_experts)
    writer.add_expert_used_count(config.num_experts_per_tok)
    writer.add_expert_feed_forward_length(config.moe_intermediate_size)
    writer.add_expert_shared_feed_forward_length(config.shared_expert_intermediate_size)
    state: dict[str, np.ndarray] = {}
    for name, shape, kind in specs:
        data = _data(rng, name, shape, kind, types[name])
        writer.add_tensor(name, data, raw_dtype=types[name])
        if reference:
            state.update(_hf_state(name, shape, data, types[name], config))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return _fuse_experts(state, config.num_hidden_layers) if reference else {}


def _data(
    rng: np.random.Generator, name: str, shape: tuple[int, ...], kind: str, qtype: Any
) -> Any:
    if kind == "router":
        return (rng.standard_normal(shape) * ROUTER_STD).astype(np.float32)
    if kind == "shared_gate":
        return (rng.standard_normal(shape) * SHARED_GATE_STD).astype(np.float32)
    if kind == "experts":
        n_exp, rows, cols = shape
        blocks = random_blocks(rng, qtype, n_exp * rows, cols, q35.TINY_STD)
        return blocks.reshape(n_exp, rows, -1)
    return q35._data(rng, name, shape, kind, qtype)


def _hf_state(
    name: str, shape: tuple[int, ...], data: Any, qtype: Any, c: Any
) -> dict[str, np.ndarray]:
    """The transformers parameters ``name``'s data stands for (experts: by their GGUF name)."""
    parts = name.split(".", 2)
    if len(parts) == 3 and parts[0] == "blk" and int(parts[1]) >= c.num_hidden_layers:
        return {}  # the MTP block: transformers ignores it too
    rows = int(np.prod(shape[:-1]))
    if qtype == q35.F32:
        values = np.asarray(data, np.float32)
    else:
        values = reference_weights(np.asarray(data).reshape(rows, -1), qtype)
    values = values.reshape(shape)
    if "_exps." in name:
        return {name: values}
    if len(parts) == 3 and parts[2] == "ffn_gate_inp_shexp.weight":
        return {f"model.layers.{parts[1]}.mlp.shared_expert_gate.weight": values.reshape(1, -1)}
    if len(parts) == 3 and parts[2] in _HF_MOE:
        return {f"model.layers.{parts[1]}.{_HF_MOE[parts[2]]}": values}
    hf = q35._hf_name(name, c)
    return {} if hf is None else {hf: q35._to_hf(name, values, c)}


def _fuse_experts(state: dict[str, np.ndarray], n_layers: int) -> dict[str, np.ndarray]:
    """GGUF expert tensors → transformers' ``gate_up_proj`` (E, 2F, H) and ``down_proj``."""
    out = {k: v for k, v in state.items() if "_exps." not in k}
    for i in range(n_layers):
        p, hf = f"blk.{i}.", f"model.layers.{i}.mlp.experts."
        if p + "ffn_gate_up_exps.weight" in state:
            out[hf + "gate_up_proj"] = state[p + "ffn_gate_up_exps.weight"]
        else:
            gate, up = state[p + "ffn_gate_exps.weight"], state[p + "ffn_up_exps.weight"]
            out[hf + "gate_up_proj"] = np.concatenate([gate, up], axis=1)
        out[hf + "down_proj"] = state[p + "ffn_down_exps.weight"]
    return out
