"""Hyper-parameters of a GGUF model, and the rotary tables they imply.

Owns `HParams` (read once from GGUF metadata with `read_hparams`, stored as JSON beside the
converted graph and in the header cache), `check_fast_path` (what the graph cannot run), and
`rope_tables`, the cos/sin tables the graph's attention reads, computed at run time for the
context window the engine chose (so one converted graph serves any window, and Phi-3's
long/short rope factors follow the window as llama.cpp picks them).
Does not own the per-architecture flags (`engine.arch`) or any tensor data except the small
rope-factor vectors some files carry.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from engine.arch import ArchSpec, arch_spec
from engine.arch.yarn import yarn_frequencies
from engine.errors import CorruptModelError, UnsupportedModelError

_SCALING_TYPES = ("none", "linear", "llama3", "longrope", "su", "yarn")


@dataclass(frozen=True)
class HParams:
    """What the graph and the runner need to know about one GGUF model."""

    arch: str
    n_layers: int
    hidden: int
    ffn: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    context: int  # the model's trained context length
    rms_eps: float
    rope_base: float
    rope_dim: int  # rotated dimensions per head (< head_dim: partial rotary, e.g. Phi-4-mini)
    rope_scaling: str = "none"  # the file's rope.scaling.type
    rope_scale: float = 1.0  # linear position scaling factor (1: none)
    rope_orig_context: int = 0  # longrope: the context the short factors were trained for
    rope_attn_factor: float = 1.0  # longrope: cos/sin multiplier
    rope_factors: list[float] = field(default_factory=list)  # llama3 / phi3 short factors
    rope_factors_long: list[float] = field(default_factory=list)
    sliding_window: int = 0  # 0: none
    attn_softcap: float = 0.0  # gemma2: tanh soft-capping of attention scores
    final_softcap: float = 0.0  # gemma2: tanh soft-capping of the logits
    attn_scale: float = 0.0  # 0: 1/sqrt(head_dim)
    # Mixture of experts (qwen3moe, gpt-oss, qwen35moe); 0 where the architecture has none.
    n_experts: int = 0  # expert_count
    n_experts_used: int = 0  # expert_used_count: experts routed per token
    expert_ffn: int = 0  # expert_feed_forward_length: each expert's hidden width
    shared_expert_ffn: int = 0  # qwen35moe: expert_shared_feed_forward_length (0: none)
    # YaRN rope scaling (gpt-oss; engine.arch.yarn); factor 0 where the file has none.
    yarn_factor: float = 0.0
    yarn_beta_fast: float = 32.0
    yarn_beta_slow: float = 1.0
    yarn_truncate: bool = True  # gpt-oss: False (its correction range is not rounded)
    # Hybrid (qwen35) Gated DeltaNet layers; 0 where the architecture has none.
    full_attn_interval: int = 0  # every n-th layer is full attention, the others recurrent
    ssm_conv_kernel: int = 0  # short causal convolution width
    ssm_head_dim: int = 0  # key and value head size (ssm.state_size)
    ssm_k_heads: int = 0  # ssm.group_count
    ssm_v_heads: int = 0  # ssm.time_step_rank
    # Per-layer geometry (gemma4, smollm3); empty or 0 where every layer is alike.
    layer_kv_heads: list[int] = field(default_factory=list)  # gemma4 31B: global layers' own
    layer_head_dim: list[int] = field(default_factory=list)  # gemma4: sliding 256, global 512
    layer_ffn: list[int] = field(default_factory=list)  # gemma4 E-models: KV-sharing MLPs 2x
    swa_layers: list[bool] = field(default_factory=list)  # gemma4: the file's sliding pattern
    rope_base_swa: float = 0.0  # gemma4: the sliding layers' own rotary base (0: none)
    rope_dim_swa: int = 0  # gemma4: the sliding layers' rotated dimensions
    kv_shared_layers: int = 0  # gemma4: the last n layers attend over an earlier layer's K/V
    per_layer_dim: int = 0  # gemma4 E-models: width of each layer's per-token embedding
    deepstack_layers: int = 0  # qwen3vl: layers after which image tokens get a deepstack row
    # granite's multipliers; 0 where the file has none.
    embedding_scale: float = 0.0  # token embeddings times this
    residual_scale: float = 0.0  # each block's output times this before the residual add
    logit_scale: float = 0.0  # logits divided by this

    def is_recurrent(self, layer: int) -> bool:
        """Whether ``layer`` is a Gated DeltaNet layer (recurrent state, no KV cache)."""
        n = self.full_attn_interval
        return n > 0 and (layer + 1) % n != 0

    def kv_heads_at(self, layer: int) -> int:
        return self.layer_kv_heads[layer] if self.layer_kv_heads else self.n_kv_heads

    def head_dim_at(self, layer: int) -> int:
        return self.layer_head_dim[layer] if self.layer_head_dim else self.head_dim

    def ffn_at(self, layer: int) -> int:
        return self.layer_ffn[layer] if self.layer_ffn else self.ffn

    def is_sliding(self, layer: int) -> bool:
        """Whether ``layer`` attends within the sliding window (when the file declares one)."""
        if self.swa_layers:
            return self.swa_layers[layer]
        return self.spec.is_sliding(layer)

    def has_rope(self, layer: int) -> bool:
        """False on smollm3's NoPE layers (every ``nope_period``-th layer)."""
        period = self.spec.nope_period
        return period == 0 or (layer + 1) % period != 0

    def kv_source(self, layer: int) -> int:
        """The layer whose K/V cache ``layer`` attends over: itself, or for gemma4's KV-sharing
        layers the last earlier layer of the same kind (sliding or global) that has its own."""
        first_shared = self.n_layers - self.kv_shared_layers
        if layer < first_shared:
            return layer
        kind = self.is_sliding(layer)
        return max(j for j in range(first_shared) if self.is_sliding(j) == kind)

    @property
    def has_experts(self) -> bool:
        """Whether the graph routes experts: a MoE architecture, or gemma4's 26B-A4B (experts
        beside the dense MLP, when its file declares them)."""
        return self.spec.moe or (self.spec.experts_beside_mlp and self.n_experts > 0)

    @property
    def has_local_rope(self) -> bool:
        """Whether sliding layers rotate with their own tables (gemma3, gemma4)."""
        return self.rope_base_swa > 0 or self.spec.local_rope_base is not None

    @property
    def spec(self) -> ArchSpec:
        return arch_spec(self.arch)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HParams:
        return cls(**data)


def read_hparams(reader: Any) -> HParams:
    """HParams from a `gguf.GGUFReader` (an architecture `engine.arch` knows).

    Reading only: what the fast path cannot run is refused by `check_fast_path`, so the exact
    torch path still gets the file's true hyper-parameters for such files.
    """
    arch = str(_field(reader, "general.architecture", ""))
    spec = arch_spec(arch)

    def get(key: str, default: Any = None) -> Any:
        return _field(reader, f"{arch}.{key}", default)

    hidden, n_heads = int(get("embedding_length")), int(get("attention.head_count"))
    head_dim = int(get("attention.key_length", hidden // n_heads))
    scaling = get("rope.scaling.type")
    # Converted qwen35 files append a multi-token-prediction block that is never run.
    n_layers = int(get("block_count")) - int(get("nextn_predict_layers", 0) or 0)
    short = _vector(reader, "rope_factors_short.weight")
    long_ = _vector(reader, "rope_factors_long.weight")
    # qwen35moe files have no dense MLP, hence no feed_forward_length.
    ffn, kv_heads = get("feed_forward_length", 0), get("attention.head_count_kv", n_heads)
    swa_layers = _flags(get("attention.sliding_window_pattern"), n_layers)
    return HParams(
        arch=spec.name,
        n_layers=n_layers,
        hidden=hidden,
        ffn=_first(ffn),
        n_heads=n_heads,
        n_kv_heads=_first(kv_heads),
        head_dim=head_dim,
        vocab=int(_tensor(reader, "token_embd.weight").shape[-1]),
        context=int(get("context_length", 2048)),
        rms_eps=float(get("attention.layer_norm_rms_epsilon", 1e-6)),
        rope_base=float(get("rope.freq_base", 10000.0)),
        rope_dim=int(get("rope.dimension_count", head_dim)),
        rope_scaling=str(scaling or "none"),
        rope_scale=float(get("rope.scaling.factor", 1.0)) if scaling == "linear" else 1.0,
        rope_orig_context=int(get("rope.scaling.original_context_length", 0) or 0),
        rope_attn_factor=float(get("rope.scaling.attn_factor", 1.0) or 1.0),
        rope_factors=short or _vector(reader, "rope_freqs.weight"),
        rope_factors_long=long_,
        sliding_window=int(get("attention.sliding_window", 0) or 0),
        attn_softcap=float(get("attn_logit_softcapping", 0.0) or 0.0),
        final_softcap=float(get("final_logit_softcapping", 0.0) or 0.0),
        attn_scale=spec.query_scale
        or float(get("attention.scale", 0.0) or 0.0)  # granite's attention multiplier
        or _gemma_27b_scale(arch, n_layers, hidden, n_heads),
        n_experts=int(get("expert_count", 0) or 0),
        n_experts_used=int(get("expert_used_count", 0) or 0),
        expert_ffn=int(get("expert_feed_forward_length", 0) or 0),
        shared_expert_ffn=int(get("expert_shared_feed_forward_length", 0) or 0),
        yarn_factor=float(get("rope.scaling.factor", 0.0) or 0.0) if scaling == "yarn" else 0.0,
        yarn_beta_fast=float(get("rope.scaling.yarn_beta_fast", 32.0) or 32.0),
        yarn_beta_slow=float(get("rope.scaling.yarn_beta_slow", 1.0) or 1.0),
        yarn_truncate=arch != "gpt-oss",
        full_attn_interval=int(get("full_attention_interval", 4)) if spec.hybrid else 0,
        ssm_conv_kernel=int(get("ssm.conv_kernel", 0)),
        ssm_head_dim=int(get("ssm.state_size", 0)),
        ssm_k_heads=int(get("ssm.group_count", 0)),
        ssm_v_heads=int(get("ssm.time_step_rank", 0)),
        layer_kv_heads=_per_layer(kv_heads, n_layers),
        layer_head_dim=_head_dims(head_dim, int(get("attention.key_length_swa", 0)), swa_layers),
        layer_ffn=_per_layer(ffn, n_layers),
        swa_layers=swa_layers,
        rope_base_swa=float(get("rope.freq_base_swa", 0.0) or 0.0) if swa_layers else 0.0,
        rope_dim_swa=int(get("rope.dimension_count_swa", 0) or 0),
        kv_shared_layers=int(get("attention.shared_kv_layers", 0) or 0),
        per_layer_dim=int(get("embedding_length_per_layer_input", 0) or 0),
        deepstack_layers=int(get("n_deepstack_layers", 0) or 0),
        embedding_scale=float(get("embedding_scale", 0.0) or 0.0),
        residual_scale=float(get("residual_scale", 0.0) or 0.0),
        logit_scale=float(get("logit_scale", 0.0) or 0.0),
    )


def check_fast_path(hp: HParams) -> None:
    """UnsupportedModelError naming what the fast path's graph cannot run in ``hp``."""
    if hp.n_experts and not hp.has_experts:
        raise UnsupportedModelError(
            f"the fast path does not run {hp.arch}'s mixture-of-experts layers yet"
        )
    if hp.has_experts and not (0 < hp.n_experts_used <= hp.n_experts and hp.expert_ffn > 0):
        raise CorruptModelError(
            f"the {hp.arch} file lacks a usable expert layout (expert_count {hp.n_experts}, "
            f"expert_used_count {hp.n_experts_used}, "
            f"expert_feed_forward_length {hp.expert_ffn})"
        )
    if hp.rope_scaling not in _SCALING_TYPES:
        raise UnsupportedModelError(f"the fast path cannot run rope scaling {hp.rope_scaling!r}")
    for layer in range(hp.n_layers):
        local = hp.has_local_rope and hp.sliding_window > 0 and hp.is_sliding(layer)
        dim = hp.rope_dim_swa or hp.rope_dim if local else hp.rope_dim
        head_dim = hp.head_dim_at(layer)
        if dim % 16 or dim > head_dim:  # GroupQueryAttention's rotary kernel
            raise UnsupportedModelError(
                f"the fast path cannot rotate {dim} of {head_dim} head dimensions "
                "(it needs a multiple of 16)"
            )


def _gemma_27b_scale(arch: str, n_layers: int, hidden: int, n_heads: int) -> float:
    """Gemma 2/3 27B scale queries by 1/sqrt(hidden/heads), the others by 1/sqrt(head_dim).

    The file does not say (transformers' query_pre_attn_scalar is not in GGUF); llama.cpp
    recognises the 27B models by their layer count (46 and 62), and so does this.
    """
    if (arch, n_layers) in (("gemma2", 46), ("gemma3", 62)):
        return 1.0 / math.sqrt(hidden / n_heads)
    return 0.0


def rope_tables(hp: HParams, window: int, local: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin (window, rope_dim/2) float32 for positions 0..window-1.

    ``local`` selects the sliding layers' rotation where the architecture has its own (gemma3:
    base 10000, no scaling). Phi-3's long factors apply when the window exceeds the context
    the short ones were trained for, as llama.cpp decides per context.
    """
    base, scale, factors, dim = hp.rope_base, hp.rope_scale, hp.rope_factors, hp.rope_dim
    if local and hp.has_local_rope:  # gemma4's global factors mark its unrotated pairs
        base = hp.rope_base_swa or float(hp.spec.local_rope_base or 0.0)
        scale, factors, dim = 1.0, [], hp.rope_dim_swa or hp.rope_dim
    if hp.rope_factors_long and hp.rope_orig_context and window > hp.rope_orig_context:
        factors = hp.rope_factors_long
    half = dim // 2
    inv = 1.0 / base ** (np.arange(half, dtype=np.float64) * 2 / dim)  # (half,)
    if factors:
        inv = inv / np.asarray(factors, dtype=np.float64)[:half]
    angles = np.arange(window, dtype=np.float64)[:, None] / scale * inv[None, :]  # (W, half)
    mscale = hp.rope_attn_factor if hp.rope_factors_long else 1.0
    if hp.yarn_factor > 1.0 and not local:
        inv, mscale = yarn_frequencies(hp, base, hp.rope_dim)
        angles = np.arange(window, dtype=np.float64)[:, None] * inv[None, :]  # (W, half)
    return (np.cos(angles) * mscale).astype(np.float32), (np.sin(angles) * mscale).astype(
        np.float32
    )


def _first(value: Any) -> int:
    """A per-model integer, or the first layer's where the file stores one per layer."""
    if isinstance(value, list | tuple | np.ndarray):
        if len(value) == 0:
            raise UnsupportedModelError("the GGUF file has an empty per-layer shape array")
        return int(value[0])
    return int(value)


def _per_layer(value: Any, n_layers: int) -> list[int]:
    """One integer per layer when the file stores them per layer and they differ, else []."""
    if not isinstance(value, list | tuple | np.ndarray):
        return []
    values = [int(v) for v in value]
    if len(values) < n_layers:
        raise UnsupportedModelError(
            f"the GGUF file gives {len(values)} per-layer values for {n_layers} layers"
        )
    return values[:n_layers] if len(set(values[:n_layers])) > 1 else []


def _flags(value: Any, n_layers: int) -> list[bool]:
    """gemma4's per-layer sliding-window pattern (true: sliding), or [] when not an array."""
    if not isinstance(value, list | tuple | np.ndarray) or len(value) < n_layers:
        return []
    return [bool(v) for v in value[:n_layers]]


def _head_dims(head_dim: int, head_dim_swa: int, swa_layers: list[bool]) -> list[int]:
    """gemma4: sliding layers' heads are key_length_swa wide, global layers' key_length."""
    if not head_dim_swa or head_dim_swa == head_dim or not swa_layers:
        return []
    return [head_dim_swa if sliding else head_dim for sliding in swa_layers]


def _field(reader: Any, key: str, default: Any = None) -> Any:
    found = reader.fields.get(key)
    return default if found is None else found.contents()


def _tensor(reader: Any, name: str) -> Any:
    for tensor in reader.tensors:
        if tensor.name == name:
            return tensor
    raise UnsupportedModelError(f"the GGUF file has no tensor {name!r}")


def _vector(reader: Any, name: str) -> list[float]:
    """A small float32 tensor (rope factors) as a list, or [] when the file has none."""
    for tensor in reader.tensors:
        if tensor.name == name:
            return [float(x) for x in np.asarray(tensor.data, dtype=np.float32).reshape(-1)]
    return []


def attention_scale(hp: HParams) -> float:
    return hp.attn_scale or 1.0 / math.sqrt(hp.head_dim)
