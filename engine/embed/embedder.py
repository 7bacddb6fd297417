"""Sentence embeddings from a decoder model: the pooled, normalised final hidden state.

Owns turning texts into unit vectors with a loaded model (`engine.loader.LoadedModel`): each
text is tokenized with the model's own tokenizer, cut to ``max_tokens``, closed with the end
token the embedding models of the Qwen3-Embedding family are trained with, run through the
transformer body (no LM head: the logits are never computed) in length-sorted batches, and
pooled. Last-token pooling (Qwen3-Embedding, GTE-Qwen) reads the final position of each row;
rows are right-padded, so under causal attention that position sees only its own tokens.
Queries get the instruction prefix the model was trained with; documents go in as they are.
Does not own storage or search (`app.documents`), nor downloading (`engine.hub`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch

from engine.loader import LoadedModel, load_model, set_cpu_threads

Pooling = Literal["last", "mean"]
QUERY_INSTRUCTION = "Instruct: Given a question, retrieve passages that answer the question\nQuery:"
_END_TOKENS = ("<|endoftext|>", "</s>", "<eos>")


class TextEmbedder:
    """``embed(texts, query=...)`` -> (n, dim) float32 rows of L2 norm 1. One thread at a time."""

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        pooling: Pooling = "last",
        max_tokens: int = 512,
        batch_size: int = 8,
        query_instruction: str = QUERY_INSTRUCTION,
    ) -> None:
        if max_tokens < 2:
            raise ValueError(f"max_tokens must be at least 2, got {max_tokens}")
        self.loaded = loaded
        self.name = loaded.spec.name
        self.pooling = pooling
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.query_instruction = query_instruction
        self._body: Any = loaded.model.get_decoder()
        self.dim = int(loaded.model.config.hidden_size)
        self._end_id = _end_token_id(loaded.tokenizer)
        self._pad_id = self._end_id if self._end_id is not None else 0

    def token_ids(self, text: str, *, query: bool) -> list[int]:
        """The ids one text runs as (instruction for a query, cut, end token appended)."""
        if query and self.query_instruction:
            text = self.query_instruction + text
        ids: list[int] = self.loaded.tokenizer.encode(text, add_special_tokens=False)
        room = self.max_tokens - (1 if self._end_id is not None else 0)
        ids = ids[:room]
        return [*ids, self._end_id] if self._end_id is not None else ids or [self._pad_id]

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """Unit vectors for ``texts`` in their order: (len(texts), dim) float32."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = [self.token_ids(t, query=query) for t in texts]
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # little padding per batch
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._run([rows[i] for i in batch])
        return out

    def _run(self, rows: list[list[int]]) -> np.ndarray:
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)  # (B, T)
        mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        with torch.inference_mode():
            device = self.loaded.model.device
            hidden = self._body(input_ids=ids.to(device), attention_mask=mask.to(device))
            states = hidden.last_hidden_state.float().cpu()  # (B, T, H), after the final norm
        if self.pooling == "last":
            lengths = mask.sum(dim=1) - 1  # (B,)
            pooled = states[torch.arange(len(rows)), lengths]  # (B, H)
        else:
            weights = mask.unsqueeze(-1).float()  # (B, T, 1)
            pooled = (states * weights).sum(dim=1) / weights.sum(dim=1)  # (B, H)
        pooled = torch.nn.functional.normalize(pooled, dim=-1)
        return pooled.numpy()


def _end_token_id(tokenizer: Any) -> int | None:
    vocab = tokenizer.get_vocab()
    for token in _END_TOKENS:
        if token in vocab:
            return int(vocab[token])
    eos = getattr(tokenizer, "eos_token_id", None)
    return int(eos) if eos is not None else None


def load_embedder(model: str, *, pooling: Pooling = "last", max_tokens: int = 512) -> TextEmbedder:
    """Load ``model`` (a .gguf path, folder or catalogue name that `load_model` resolves)."""
    set_cpu_threads()
    loaded = load_model(model, device="cpu", dtype="float32", context_window=max_tokens)
    return TextEmbedder(loaded, pooling=pooling, max_tokens=max_tokens)
