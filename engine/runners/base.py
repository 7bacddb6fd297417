"""The forward-pass abstraction the generation loop drives.

Owns the `Runner` protocol: a model plus its KV cache for ONE token sequence. The loop in
`engine.generate` talks only to a Runner and a tokenizer, so the torch implementation
(`engine.runners.torch_runner.TorchRunner`) and the ONNX Runtime fast path plug in interchangeably.
Does not own sampling, detokenizing, prompt rendering or which conversation a cache belongs to
(see `engine.engine`).

Contract, in words:
- ``cached_ids`` are the tokens whose keys/values are in the cache, in order. A Runner never
  holds K/V for tokens it does not list there.
- ``extend(ids)`` runs the model over ``ids`` appended after the cache, appends their K/V and
  returns float32 logits as a numpy array, one row per id, shape (len(ids), vocab_size); with
  ``last_only=True`` it returns only the last row, shape (1, vocab_size) — prefill uses this
  so the output head runs once. Past ``context_window`` it raises `ContextOverflowError`
  (every Runner, through `check_extend`) and changes nothing. numpy, not torch, so that the
  loop, sampling and the ONNX fast path never import torch (~1 s and ~250 MB); a torch Runner
  hands its logits over with ``.numpy()`` (one row per token: cheap).
- ``crop(n)`` keeps the first ``n`` cached tokens (``0 <= n <= len(cached_ids)``).
- ``reset()`` empties the cache.

- ``backend`` names the implementation for `engine.types.ModelInfo` ("torch", "onnx", "cuda").
- ``extend_calls`` is None unless a test or benchmark sets it to a list: then ``extend`` appends
  each call's length (counting forwards is opt-in, so a long session does not grow a list).

A Runner is not thread-safe: one worker thread owns it (see `engine.engine.Engine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from engine.errors import ContextOverflowError


@runtime_checkable
class Runner(Protocol):
    """A model with a KV cache over one token sequence (see the module docstring)."""

    backend: str  # ModelInfo.backend: "torch", "onnx", "cuda"
    vocab_size: int
    context_window: int
    device: str  # "cpu", "cuda:0", ...
    dtype: str  # "float32", "float16", "bfloat16", "int8", ...
    extend_calls: list[int] | None  # opt-in record of extend() lengths (tests, benchmarks)

    @property
    def cached_ids(self) -> list[int]: ...

    def extend(self, ids: Sequence[int], last_only: bool = False) -> np.ndarray: ...

    def crop(self, n: int) -> None: ...

    def reset(self) -> None: ...


@runtime_checkable
class SnapshotRunner(Runner, Protocol):
    """A Runner that can park its cache and bring it back (per-conversation prefix caches).

    ``snapshot()`` returns an opaque value holding a copy of the cache and its ids; ``restore``
    makes that the current cache. Optional: the engine falls back to longest-common-prefix
    reuse on a single cache when a Runner lacks these.
    """

    def snapshot(self) -> object: ...

    def restore(self, state: object) -> None: ...


def check_extend(ids: Sequence[int], cached: int, context_window: int) -> None:
    """What every ``extend`` checks first: ids given, and room for them in the window."""
    if not ids:
        raise ValueError("extend() needs at least one token id")
    if cached + len(ids) > context_window:
        raise ContextOverflowError(
            f"{cached} cached + {len(ids)} new tokens exceed the context window of {context_window}"
        )
