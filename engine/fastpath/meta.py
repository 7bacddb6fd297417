"""What a converted graph's ``meta.json`` holds: the records the graph writer and the runners share.

Owns `GraphMeta` (what a runner must know about a converted graph) and `EmbeddingSource`
(where a token-embedding table lies in the GGUF file). Does not own writing them
(`engine.fastpath.cache`) or reading rows (`engine.runners.token_rows`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class EmbeddingSource:
    """Where the token-embedding table lies in the GGUF file, and how to read a row."""

    offset: int  # absolute byte offset of the tensor data
    ggml_type: int
    rows: int  # vocabulary size
    cols: int  # hidden size
    scale: float = 1.0  # gemma multiplies embeddings by sqrt(hidden)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GraphMeta:
    """What the runner must know about a converted graph (stored next to it as JSON)."""

    n_layers: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    context_window: int
    dtype: str  # the source weights' quantisation, e.g. "q4_1"
    hparams: dict[str, Any]
    embedding: dict[str, Any]
    per_layer_embedding: dict[str, Any] | None = None  # gemma4 E-models' per_layer_token_embd
