"""Sentence embeddings from a decoder model: the pooled, normalised final hidden state.

Owns turning texts into unit vectors with a loaded model (`engine.loader.LoadedModel`): each
text is tokenized with the model's own tokenizer, cut to ``max_tokens``, closed with the end
token the embedding models of the Qwen3-Embedding family are trained with, run through the
transformer body (no LM head: the logits are never computed) in length-sorted batches, and
pooled. Last-token pooling (Qwen3-Embedding, GTE-Qwen) reads the final position of each row;
rows are right-padded, so under causal attention that position sees only its own tokens.
Queries get the instruction prefix the model was trained with, chosen by the query's language
(`engine.safety.language`) where the model's catalogue entry gives one per language
(`engine.hub.embedding.query_instruction`); documents go in as they are.

Two bodies run the transformer: `FastBody`, the CPU fast path's embedding graph on ONNX
Runtime (`engine.fastpath.embedding`: int8 activations, ~10x the torch path here), and
`TorchBody`, transformers' float32 forward (exact; any architecture transformers loads).
`load_embedder` picks the fast one for a .gguf it can run. Does not own storage or search
(`app.documents`), nor downloading (`engine.hub`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from engine.errors import UnsupportedModelError
from engine.hub.embedding import embedding_model_for, query_instruction, resolve_embedding_model
from engine.loader import LoadedModel, load_model, set_cpu_threads
from engine.runners.embedding_session import EmbeddingSession
from engine.safety.language import detect_language

Pooling = Literal["last", "mean"]
Backend = Literal["auto", "fast", "torch"]
QUERY_INSTRUCTION = "Instruct: Given a question, retrieve passages that answer the question\nQuery:"
_END_TOKENS = ("<|endoftext|>", "</s>", "<eos>")


class Body(Protocol):
    """Runs right-padded token rows; returns pooled (not yet normalised) states (B, dim)."""

    backend: str
    dim: int

    def pooled(self, rows: list[list[int]], pad_id: int, pooling: Pooling) -> np.ndarray: ...


class TextEmbedder:
    """``embed(texts, query=...)`` -> (n, dim) float32 rows of L2 norm 1. One thread at a time."""

    def __init__(
        self,
        loaded: LoadedModel,
        body: Body | None = None,
        *,
        pooling: Pooling = "last",
        max_tokens: int = 512,
        batch_size: int = 8,
        query_instructions: Mapping[str, str] | None = None,
        languages: tuple[str, ...] = (),
    ) -> None:
        """``query_instructions`` maps a language key (a BCP 47 tag, a base language, "*") to
        the instruction a query in it gets (default: Qwen3-Embedding's, for every language);
        ``languages`` are the model's (its catalogue entry's; empty: not known)."""
        if max_tokens < 2:
            raise ValueError(f"max_tokens must be at least 2, got {max_tokens}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.loaded = loaded
        self.body: Body = body if body is not None else TorchBody(loaded.model)
        self.name = loaded.spec.name
        self.backend = self.body.backend
        self.pooling = pooling
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.query_instructions = dict(
            {"*": QUERY_INSTRUCTION} if query_instructions is None else query_instructions
        )
        self.languages = languages
        self.dim = self.body.dim
        self._end_id = _end_token_id(loaded.tokenizer)
        self._pad_id = self._end_id if self._end_id is not None else 0

    def instruction_for(self, query: str) -> str:
        """The instruction ``query`` is prefixed with: by its detected language when the
        model's instructions differ by language (no detection when one serves all)."""
        table = self.query_instructions
        if len(set(table.values())) <= 1 and "*" in table:
            return table["*"]
        return query_instruction(table.items(), detect_language(query).tag)

    def token_ids(self, text: str, *, query: bool) -> list[int]:
        """The ids one text runs as (instruction for a query, cut, end token appended)."""
        if query:
            text = self.instruction_for(text) + text
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
            pooled = self.body.pooled([rows[i] for i in batch], self._pad_id, self.pooling)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)  # (B, 1)
            out[batch] = pooled / np.maximum(norms, 1e-12)
        return out


class TorchBody:
    """transformers' decoder (float32, exact): the causal LM's body, its final norm included."""

    backend = "torch"

    def __init__(self, model: Any) -> None:
        self._model: Any = model  # a transformers causal LM (`LoadedModel.model`)
        self._body: Any = self._model.get_decoder()
        self.dim = int(self._model.config.hidden_size)

    def pooled(self, rows: list[list[int]], pad_id: int, pooling: Pooling) -> np.ndarray:
        import torch

        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)  # (B, T)
        mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        with torch.inference_mode():
            device = self._model.device
            hidden = self._body(input_ids=ids.to(device), attention_mask=mask.to(device))
            states = hidden.last_hidden_state.float().cpu()  # (B, T, H), after the final norm
        if pooling == "last":
            pooled = states[torch.arange(len(rows)), mask.sum(dim=1) - 1]  # (B, H)
        else:
            weights = mask.unsqueeze(-1).float()  # (B, T, 1)
            pooled = (states * weights).sum(dim=1) / weights.sum(dim=1)  # (B, H)
        return np.asarray(pooled.numpy(), dtype=np.float32)


class FastBody:
    """The fast path's embedding graph (`engine.fastpath.embedding.EmbeddingSession`)."""

    backend = "onnx"

    def __init__(self, source: Path, window: int, threads: int | None = None) -> None:

        self.session = EmbeddingSession(source, window=window, threads=threads)
        self.dim = self.session.dim

    def pooled(self, rows: list[list[int]], pad_id: int, pooling: Pooling) -> np.ndarray:
        states = self.session.hidden(rows, pad_id)  # (B, T, H)
        if pooling == "last":
            return np.asarray(states[np.arange(len(rows)), [len(r) - 1 for r in rows]])  # (B, H)
        mask = np.zeros(states.shape[:2], dtype=np.float32)  # (B, T)
        for i, row in enumerate(rows):
            mask[i, : len(row)] = 1.0
        summed = (states * mask[..., None]).sum(axis=1)  # (B, H)
        return np.asarray(summed / mask.sum(axis=1, keepdims=True), dtype=np.float32)


def _end_token_id(tokenizer: Any) -> int | None:
    vocab = tokenizer.get_vocab()
    for token in _END_TOKENS:
        if token in vocab:
            return int(vocab[token])
    eos = getattr(tokenizer, "eos_token_id", None)
    return int(eos) if eos is not None else None


def load_embedder(
    model: str,
    *,
    pooling: Pooling = "last",
    max_tokens: int = 512,
    backend: Backend = "auto",
    batch_size: int = 8,
    threads: int | None = None,
) -> TextEmbedder:
    """Load ``model`` (a .gguf path, folder, or a catalogue embedding model's name or repo).

    ``backend`` "auto" runs a .gguf on the fast path when its embedding graph can, else the
    torch path (as a chat model falls back); "fast" raises instead of falling back.
    """

    path = resolve_embedding_model(model)
    loaded = load_model(path, device="cpu", dtype="float32", context_window=max_tokens)
    entry = embedding_model_for(path)
    body: Body | None = None
    if backend != "torch" and loaded.spec.kind == "gguf":
        body = _fast_body(Path(loaded.spec.path), max_tokens, threads, strict=backend == "fast")
    elif backend == "fast":
        raise UnsupportedModelError(f"{model}: the fast path runs .gguf files only")
    if body is None:
        set_cpu_threads()
    return TextEmbedder(
        loaded,
        body,
        pooling=pooling,
        max_tokens=max_tokens,
        batch_size=batch_size,
        # an entry without instructions keeps the default (Qwen3-Embedding's), as a plain file
        query_instructions=dict(entry.query_instructions)
        if entry and entry.query_instructions
        else None,
        languages=entry.languages if entry is not None else (),
    )


def _fast_body(source: Path, window: int, threads: int | None, strict: bool) -> FastBody | None:
    import logging

    try:
        return FastBody(source, window, threads)
    except (UnsupportedModelError, ImportError) as exc:
        if strict:
            raise
        logging.getLogger(__name__).warning("embedding on the torch path: %s", exc)
        return None
