"""The Runner over a Hugging Face transformers model with a DynamicCache.

Owns the KV-cached forward for one token sequence on the model's device: ``extend`` appends
ids and returns float32 logits, ``crop`` / ``reset`` manage the cache, ``snapshot`` /
``restore`` park a copy for per-conversation prefix caching. Everything runs under
``torch.inference_mode``. Does not own sampling, prompts, or which conversation the cache
holds. Not thread-safe: one worker thread owns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import DynamicCache

from engine.runners.base import check_extend


class TorchRunner:
    """`engine.runners.base.Runner` over ``model`` (a transformers causal LM in eval mode)."""

    backend = "torch"  # ModelInfo.backend

    def __init__(self, model: Any, *, context_window: int) -> None:
        self.model = model
        self.context_window = context_window
        self.device = str(model.device)
        self.dtype = str(model.dtype).removeprefix("torch.")
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self._ids: list[int] = []
        self._cache = self._new_cache()
        self.extend_calls: list[int] | None = None  # a list records extend() lengths

    def _new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.model.config)

    @property
    def cached_ids(self) -> list[int]:
        return list(self._ids)

    def extend(self, ids: Sequence[int], last_only: bool = False) -> np.ndarray:
        """Run ``ids`` after the cache; float32 numpy logits (len(ids), V), or (1, V) with
        ``last_only`` (numpy: the loop and sampling are torch-free, `engine.runners.base`)."""
        check_extend(ids, len(self._ids), self.context_window)
        if self.extend_calls is not None:
            self.extend_calls.append(len(ids))
        with torch.inference_mode():
            input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self.device)  # (1, T)
            out = self.model(
                input_ids=input_ids,
                cache=self._cache,
                use_cache=True,
                logits_to_keep=1 if last_only else 0,
            )
            # Sampling runs on the CPU with a CPU generator: seeded draws are the same on any
            # device, and one row of V floats per token is cheap to copy.
            logits: torch.Tensor = out.logits[0].float().cpu()  # (T or 1, V)
        self._ids.extend(int(i) for i in ids)
        return logits.numpy()

    def crop(self, n: int) -> None:
        """Keep the first ``n`` cached tokens."""
        if not 0 <= n <= len(self._ids):
            raise ValueError(f"crop({n}) outside the cached range 0..{len(self._ids)}")
        if n == 0:
            self.reset()
        elif n < len(self._ids):
            with torch.inference_mode():
                self._cache.crop(n - len(self._ids))  # negative: tokens to remove
            del self._ids[n:]

    def reset(self) -> None:
        self._cache = self._new_cache()
        self._ids.clear()

    def snapshot(self) -> object:
        """A parked copy of the cache and its ids (see `engine.kv_cache.ConversationCaches`)."""
        layers: list[Any] = list(self._cache.layers)
        with torch.inference_mode():
            kv = [(x.keys.clone(), x.values.clone()) for x in layers if x.is_initialized]
        return _Parked(kv, list(self._ids))

    def restore(self, state: object) -> None:
        if not isinstance(state, _Parked):
            raise TypeError(f"not a TorchRunner snapshot: {type(state).__name__}")
        self._cache = self._new_cache()
        with torch.inference_mode():
            for i, (k, v) in enumerate(state.kv):
                self._cache.update(k, v, i)
        self._ids = list(state.ids)


@dataclass(frozen=True)
class _Parked:
    kv: list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values (1, H_kv, T, D)
    ids: list[int]
