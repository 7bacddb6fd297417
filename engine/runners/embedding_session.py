"""Running the embedding graph: final hidden states of token rows on ONNX Runtime's CPU provider.

Owns `EmbeddingSession`, the session over the graph `engine.fastpath.embedding` converts once,
its token-row lookup and rotary tables. Does not own the graph or its cache
(`engine.fastpath.embedding`) or pooling the states into vectors (`engine.embed`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.arch.hparams import HParams, rope_tables
from engine.fastpath.builder import ACCURACY_INT8
from engine.fastpath.cache import META_FILE, MODEL_FILE, WEIGHTS_FILE
from engine.fastpath.embedding import converted_embedding_graph
from engine.fastpath.meta import EmbeddingSource, GraphMeta
from engine.fastpath.weights import PageReleaser
from engine.runners.session_options import cpu_session_options
from engine.runners.token_rows import TokenRows


class EmbeddingSession:
    """Final hidden states of right-padded token rows, on ONNX Runtime's CPU provider.

    ``window`` is the longest row it will take (the rotary tables' length). Not thread-safe:
    one thread at a time, as every runner.
    """

    def __init__(
        self,
        source: Path,
        *,
        window: int = 512,
        threads: int | None = None,
        accuracy: int = ACCURACY_INT8,
    ) -> None:
        import onnxruntime as ort

        folder = converted_embedding_graph(source, accuracy)
        meta = GraphMeta(**json.loads((folder / META_FILE).read_text(encoding="utf-8")))
        self.hparams = HParams.from_json(meta.hparams)
        self.window = min(window, meta.context_window)
        self.dim = self.hparams.hidden
        self._table = TokenRows(source, EmbeddingSource(**meta.embedding))
        options = cpu_session_options(ort, threads)
        self._session = ort.InferenceSession(
            str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
        # ORT keeps the weights' mapped pages beside its prepacked copy, as for the chat
        # graph (`engine.runners.fast_open.open_runner`): hand them back once it is open.
        PageReleaser(folder / WEIGHTS_FILE).release()
        names = {i.name for i in self._session.get_inputs()}
        self._rope: dict[str, np.ndarray] = {}
        for suffix, local in (("", False), ("_local", True)):
            if f"cos_cache{suffix}" in names:
                cos, sin = rope_tables(self.hparams, self.window, local)
                self._rope[f"cos_cache{suffix}"], self._rope[f"sin_cache{suffix}"] = cos, sin

    def hidden(self, rows: Sequence[Sequence[int]], pad_id: int = 0) -> np.ndarray:
        """(len(rows), max length, hidden) float32: each row's final-normed states; positions
        past a row's end are padding (garbage, never read)."""
        lengths = [len(r) for r in rows]
        if not rows or min(lengths) < 1 or max(lengths) > self.window:
            raise ValueError(f"rows must hold 1..{self.window} tokens, got lengths {lengths}")
        width = max(lengths)
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)  # (B, T)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
        embeds = self._table.lookup(ids.reshape(-1).tolist()).reshape(
            len(rows), width, -1
        )  # (B, T, H)
        feeds: dict[str, Any] = {
            "inputs_embeds": embeds,
            "seqlens_k": np.array(lengths, dtype=np.int32) - 1,
            "total_sequence_length": np.array(width, dtype=np.int32),
            **self._rope,
        }
        hp = self.hparams
        for i in range(hp.n_layers):
            empty = np.zeros((len(rows), hp.kv_heads_at(i), 0, hp.head_dim_at(i)), np.float32)
            feeds[f"past_key.{i}"] = feeds[f"past_value.{i}"] = empty
        (hidden,) = self._session.run(["hidden"], feeds)
        return np.asarray(hidden, dtype=np.float32)

    def last_states(self, rows: Sequence[Sequence[int]], pad_id: int = 0) -> np.ndarray:
        """(len(rows), hidden): each row's final-normed state at its last token."""
        states = self.hidden(rows, pad_id)
        last = np.array([len(r) - 1 for r in rows])
        return np.asarray(states[np.arange(len(rows)), last])
