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
from engine.errors import UnsupportedModelError

_SCALING_TYPES = ("none", "linear", "llama3", "longrope", "su")


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
    # Hybrid (qwen35) Gated DeltaNet layers; 0 where the architecture has none.
    full_attn_interval: int = 0  # every n-th layer is full attention, the others recurrent
    ssm_conv_kernel: int = 0  # short causal convolution width
    ssm_head_dim: int = 0  # key and value head size (ssm.state_size)
    ssm_k_heads: int = 0  # ssm.group_count
    ssm_v_heads: int = 0  # ssm.time_step_rank
    # Mixture of experts (qwen3moe, gpt-oss); 0 where the architecture has none.
    n_experts: int = 0  # expert_count
    n_experts_used: int = 0  # expert_used_count: experts routed per token
    expert_ffn: int = 0  # expert_feed_forward_length: each expert's hidden width

    def is_recurrent(self, layer: int) -> bool:
        """Whether ``layer`` is a Gated DeltaNet layer (recurrent state, no KV cache)."""
        n = self.full_attn_interval
        return n > 0 and (layer + 1) % n != 0

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
    return HParams(
        arch=spec.name,
        n_layers=n_layers,
        hidden=hidden,
        ffn=_scalar(get("feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=_scalar(get("attention.head_count_kv", n_heads)),
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
        attn_scale=_gemma_27b_scale(arch, n_layers, hidden, n_heads),
        full_attn_interval=int(get("full_attention_interval", 4)) if spec.hybrid else 0,
        ssm_conv_kernel=int(get("ssm.conv_kernel", 0)),
        ssm_head_dim=int(get("ssm.state_size", 0)),
        ssm_k_heads=int(get("ssm.group_count", 0)),
        ssm_v_heads=int(get("ssm.time_step_rank", 0)),
        n_experts=int(get("expert_count", 0) or 0),
        n_experts_used=int(get("expert_used_count", 0) or 0),
        expert_ffn=int(get("expert_feed_forward_length", 0) or 0),
    )


def check_fast_path(hp: HParams) -> None:
    """UnsupportedModelError naming what the fast path's graph cannot run in ``hp``."""
    if hp.rope_scaling not in _SCALING_TYPES:
        raise UnsupportedModelError(f"the fast path cannot run rope scaling {hp.rope_scaling!r}")
    if hp.rope_dim % 16 or hp.rope_dim > hp.head_dim:  # GroupQueryAttention's rotary kernel
        raise UnsupportedModelError(
            f"the fast path cannot rotate {hp.rope_dim} of {hp.head_dim} head dimensions "
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
    base, scale, factors = hp.rope_base, hp.rope_scale, hp.rope_factors
    if local and hp.spec.local_rope_base is not None:
        base, scale, factors = hp.spec.local_rope_base, 1.0, []
    if hp.rope_factors_long and hp.rope_orig_context and window > hp.rope_orig_context:
        factors = hp.rope_factors_long
    half = hp.rope_dim // 2
    inv = 1.0 / base ** (np.arange(half, dtype=np.float64) * 2 / hp.rope_dim)  # (half,)
    if factors:
        inv = inv / np.asarray(factors, dtype=np.float64)[:half]
    angles = np.arange(window, dtype=np.float64)[:, None] / scale * inv[None, :]  # (W, half)
    mscale = hp.rope_attn_factor if hp.rope_factors_long else 1.0
    return (np.cos(angles) * mscale).astype(np.float32), (np.sin(angles) * mscale).astype(
        np.float32
    )


def _scalar(value: Any) -> int:
    """A per-model integer that some files store per layer: all layers must agree."""
    if isinstance(value, list | tuple | np.ndarray):
        values = {int(v) for v in value}
        if len(values) != 1:
            raise UnsupportedModelError("the fast path needs the same shape in every layer")
        return values.pop()
    return int(value)


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
