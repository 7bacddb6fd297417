"""The GPU Runner: a static KV cache and a compiled (CUDA-graph) single-token decode step.

Owns `StaticCacheRunner`: a transformers causal LM over a preallocated `StaticCache`, so every
decode step has the same shapes; on CUDA the one-token forward is wrapped in
``torch.compile(mode="reduce-overhead")``, which captures it as a CUDA graph (a 135M model on
an H200 is launch-bound, not bandwidth-bound: the graph replaces ~400 kernel launches per
token by one). Prefill and multi-token extends run eagerly. ``crop`` only moves the length:
stale cache rows lie beyond the cache's write position, which the causal mask hides, and are
overwritten when reached.
Logits stay on the device as a torch tensor when ``logits_on_device`` (benchmarks that keep
the device busy), else are copied to the CPU (196 KB per token) as numpy for the sampler.

Status: the logic runs and is tested on CPU (eager); the CUDA graph path has NOT been run on
a GPU in this project yet (`bench/gpu.sh` measures it when one is lent). Does not own
sampling, prompts or model loading.

Its benchmark (this runner next to transformers ``generate()``) is `python -m bench.cuda`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from engine.runners.base import check_extend


class StaticCacheRunner:
    """`engine.runners.base.Runner` over a transformers model with a static cache (see above)."""

    backend = "cuda"  # ModelInfo.backend

    def __init__(
        self,
        model: Any,
        *,
        context_window: int,
        compile_decode: bool | None = None,
        logits_on_device: bool = False,
    ) -> None:
        from transformers import StaticCache

        self.model = model
        self.context_window = context_window
        self.device = str(model.device)
        self.dtype = str(model.dtype).removeprefix("torch.")
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.logits_on_device = logits_on_device
        self._cache = StaticCache(config=model.config, max_cache_len=context_window)
        self._ids: list[int] = []
        if compile_decode is None:
            compile_decode = model.device.type == "cuda"
        self._step = (
            torch.compile(self._forward, mode="reduce-overhead", fullgraph=True)
            if compile_decode
            else self._forward
        )
        self.extend_calls: list[int] | None = None  # a list records extend() lengths

    @property
    def cached_ids(self) -> list[int]:
        return list(self._ids)

    def extend(self, ids: Sequence[int], last_only: bool = False) -> Any:
        """Run ``ids`` after the cache; float32 logits (len(ids), V), or (1, V) with
        ``last_only``: numpy, or the device tensor with ``logits_on_device``."""
        check_extend(ids, len(self._ids), self.context_window)
        start = len(self._ids)
        if self.extend_calls is not None:
            self.extend_calls.append(len(ids))
        device = self.model.device
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=device)  # (1, T)
        positions = torch.arange(start, start + len(ids), device=device)  # (T,)
        with torch.inference_mode():
            if len(ids) == 1:
                logits = self._step(input_ids, positions).clone()  # graph output is reused
            else:
                logits = self._forward(input_ids, positions, 1 if last_only else 0)
        self._ids.extend(int(i) for i in ids)
        row: torch.Tensor = logits[0].float()  # (T or 1, V)
        if self.logits_on_device:
            return row
        on_cpu: np.ndarray = row.cpu().numpy()
        return on_cpu

    def _forward(self, input_ids: torch.Tensor, positions: torch.Tensor, keep: int = 1) -> Any:
        out = self.model(
            input_ids=input_ids,
            position_ids=positions[None],
            cache=self._cache,
            use_cache=True,
            logits_to_keep=keep,
        )
        return out.logits  # (1, T or keep, V)

    def crop(self, n: int) -> None:
        if not 0 <= n <= len(self._ids):
            raise ValueError(f"crop({n}) outside the cached range 0..{len(self._ids)}")
        if n < len(self._ids) and self._cache.get_seq_length():
            # In place (static addresses for the graph): only the write position moves back.
            self._cache.crop(n - len(self._ids))
        del self._ids[n:]

    def reset(self) -> None:
        self.crop(0)
