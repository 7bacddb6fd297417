"""What each model architecture changes relative to llama, for the fast path's one graph builder.

Owns `ArchSpec` (a small frozen description per GGUF ``general.architecture``) and the table
`ARCHS`. A new architecture is a new entry here plus a parity test, never a new graph: the
builder (`engine.fastpath.graph`) reads only these flags and the hyper-parameters
(`engine.arch.hparams`). Does not own reading tensors or building nodes.

The flags describe the GGUF file as llama.cpp's converter writes it, which is not always how
transformers holds the same model: Gemma's ``(1 + w)`` norms are stored with the 1 already
added, and llama Q/K rows are permuted for pair-wise ("interleaved") rotary embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import UnsupportedModelError


@dataclass(frozen=True)
class ArchSpec:
    """How one architecture differs from llama (every default is llama's behaviour)."""

    name: str
    rope_interleaved: bool = False  # llama GGUFs permute Q/K rows for pair-wise rotation
    qkv_bias: bool = False  # qwen2: biases on the Q, K and V projections
    qk_norm: bool = False  # qwen3, gemma3: per-head RMSNorm of Q and K before the rotation
    fused_qkv: bool = False  # phi3: one attn_qkv tensor holds Q, K and V rows
    fused_gate_up: bool = False  # phi3: ffn_up holds the gate rows, then the up rows
    post_norms: bool = False  # gemma2/3: RMSNorm after attention and after the MLP too
    embed_scale: bool = False  # gemma: token embeddings times sqrt(hidden)
    activation: str = "silu"  # "silu" (SwiGLU), "gelu_tanh" (GeGLU), "swiglu_oai" (gpt-oss)
    swa_period: int = 0  # gemma2: 2, gemma3: 6 — the last layer of each period is global
    local_rope_base: float | None = None  # gemma3: sliding layers rotate with base 10000
    tied_head_default: bool = False  # no output.weight: the embedding table is the head
    moe: bool = False  # qwen3moe, gpt-oss, qwen35moe: routed experts (engine.fastpath.moe)
    #   replace the MLP
    experts_beside_mlp: bool = False  # gemma4: a file with experts (26B-A4B) runs them beside
    #   the dense MLP, each with its own norms (engine.fastpath.gemma4_moe)
    hybrid: bool = False  # qwen35: Gated DeltaNet layers (engine.fastpath.deltanet) between
    #   gated full-attention layers (attn_q rows: each head's query, then its output gate)
    ffn_norm: str = "ffn_norm"  # the MLP's pre-norm tensor (qwen35: post_attention_norm)
    v_norm: bool = False  # gemma4: values RMS-normalised per head (no weight) before attention
    query_scale: float = 0.0  # gemma4: 1 (its Q/K norms stand in for it); 0: 1/sqrt(head_dim)
    nope_period: int = 0  # smollm3: 4 — every n-th layer attends without rotary embeddings

    def is_sliding(self, layer: int) -> bool:
        """Whether ``layer`` uses the sliding window (when the file declares one)."""
        if self.swa_period == 0:
            return True  # a declared window applies to every layer (phi3, mistral-style)
        return layer % self.swa_period < self.swa_period - 1


LLAMA = ArchSpec("llama", rope_interleaved=True)
ARCHS: dict[str, ArchSpec] = {
    "llama": LLAMA,
    "qwen2": ArchSpec("qwen2", qkv_bias=True),
    "qwen3": ArchSpec("qwen3", qk_norm=True),
    "gemma2": ArchSpec(
        "gemma2", post_norms=True, embed_scale=True, activation="gelu_tanh", swa_period=2
    ),
    "gemma3": ArchSpec(
        "gemma3",
        qk_norm=True,
        post_norms=True,
        embed_scale=True,
        activation="gelu_tanh",
        swa_period=6,
        local_rope_base=10000.0,
    ),
    "phi3": ArchSpec("phi3", fused_qkv=True, fused_gate_up=True),
    # gemma4: norms stored as is (no +1); per-layer head sizes, KV sharing and per-layer token
    # embeddings come from the file (engine.arch.hparams, engine.fastpath.per_layer).
    "gemma4": ArchSpec(
        "gemma4",
        qk_norm=True,
        post_norms=True,
        embed_scale=True,
        activation="gelu_tanh",
        swa_period=6,
        v_norm=True,
        query_scale=1.0,
        experts_beside_mlp=True,
    ),
    "smollm3": ArchSpec("smollm3", rope_interleaved=True, nope_period=4),
    # granite (3.x, 4.0 micro): llama plus embedding/residual/attention/logit multipliers,
    # all read from the file (engine.arch.hparams).
    "granite": ArchSpec("granite", rope_interleaved=True),
    "qwen3moe": ArchSpec("qwen3moe", qk_norm=True, moe=True),
    # Qwen3-VL's language models: qwen3 / qwen3moe with M-RoPE positions for image tokens
    # (engine.runners.image_rows) and deepstack rows added after the first layers
    # (engine.fastpath.deepstack); a text-only run is exactly qwen3's.
    "qwen3vl": ArchSpec("qwen3vl", qk_norm=True),
    "qwen3vlmoe": ArchSpec("qwen3vlmoe", qk_norm=True, moe=True),
    # gpt-oss: biased q/k/v/o and experts, attention sinks, even layers sliding, clamped SwiGLU.
    "gpt-oss": ArchSpec(
        "gpt-oss",
        qkv_bias=True,
        moe=True,
        swa_period=2,
        activation="swiglu_oai",
        ffn_norm="post_attention_norm",
    ),
    "qwen35": ArchSpec("qwen35", qk_norm=True, hybrid=True, ffn_norm="post_attention_norm"),
    # qwen35moe: qwen35's hybrid layers with routed experts plus a sigmoid-gated shared expert.
    "qwen35moe": ArchSpec(
        "qwen35moe", qk_norm=True, hybrid=True, moe=True, ffn_norm="post_attention_norm"
    ),
}


def arch_spec(name: str) -> ArchSpec:
    """The description of ``name``; UnsupportedModelError naming what is supported."""
    spec = ARCHS.get(name)
    if spec is None:
        raise UnsupportedModelError(
            f"the fast path does not know the architecture {name!r} "
            f"(it runs {', '.join(sorted(ARCHS))})"
        )
    return spec
