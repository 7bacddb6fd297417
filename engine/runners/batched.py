"""KV slots for several token sequences over one ONNX fast-path session: batched decode steps.

Owns up to ``slots`` sequences' KV caches as one preallocated buffer per layer and kind,
(slots, kv_heads, capacity, head_dim), and two forwards over them:

- ``prefill(slot, ids)``: one single-row graph run on that slot's view (the same run
  `engine.runners.onnx_runner.OnnxRunner.extend` does for one sequence), logits of the last id;
- ``decode(tokens)``: ONE graph run for the first ``len(tokens)`` slots, one new token each,
  every row at its own length (GroupQueryAttention's per-row ``seqlens_k``; the buffers are
  bound as past and present, so each row's new K/V is written in place at its own position).
  The weights are read once for all rows and the per-run overheads are paid once: that is the
  whole gain of batching on a CPU, where a decode step is bound by reading the weights.

Each row of a batched step computes exactly what the single-sequence step computes: measured
bitwise on SmolLM2 (Q4_1, int8 activations) for rows of different lengths, and asserted by
``tests/engine/test_server_batch.py``. A slot in the decoded range that has no new token gets a
filler token written just past its cached ids (never inside them), and its logits are ignored.

Memory: each slot's buffers are as long as the longest slot's (growing by doubling), and
``context_window`` here is capped so that all slots together stay within ``budget_bytes``
(2 GiB: ~5,700 tokens a slot for SmolLM2-135M at 8 slots); the server runs a longer request
alone. Shares the runner's InferenceSession, embedding table and rotary tables (no second copy
of the weights); reads the runner's private parts for that, deliberately: this module is the
runner's batched twin. Runs plain architectures only (`batch_refusal` says why not otherwise: hybrid
recurrent state, MoE routing through nested ``If``s and gemma4 per-layer inputs are shaped for one
row; MoE experts as `engine.fastpath.expert_op`'s op take any rows, bitwise as alone). Does not own
sampling, stop conditions or scheduling (`engine.serve.batch`); not thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.errors import ContextOverflowError
from engine.runners.onnx_runner import CACHE_STEP, OnnxRunner

FILLER_TOKEN = 0  # what an idle row inside the decoded range is fed (its logits are dropped)
KV_BUDGET_BYTES = 2 << 30  # all slots' K/V together; longer sequences run alone, on the runner


def batch_refusal(runner: object) -> str:
    """Why ``runner`` cannot run batched decode steps ("" when it can)."""
    if not isinstance(runner, OnnxRunner):
        return "batched decoding runs on the ONNX fast path only"
    hp = runner.hparams
    if any(hp.is_recurrent(i) for i in range(runner.meta.n_layers)):
        return "a hybrid (recurrent) model keeps one sequence's state"
    if hp.has_experts and not runner.experts_mapped:  # nested-If experts: one row's routing
        return "this architecture's graph is shaped for one sequence"
    if runner.meta.per_layer_embedding is not None:
        return "this architecture's graph is shaped for one sequence"
    names = {i.name for i in runner.session.get_inputs()}
    if "inputs_embeds" not in names or runner.session.get_inputs()[0].shape[0] == 1:
        return "the converted graph predates batching (it is rebuilt on the next conversion)"
    return ""


class BatchedDecoder:
    """KV caches of ``slots`` sequences sharing ``runner``'s session (see the module docstring)."""

    def __init__(
        self, runner: OnnxRunner, slots: int = 8, budget_bytes: int = KV_BUDGET_BYTES
    ) -> None:
        reason = batch_refusal(runner)
        if reason:
            raise ValueError(reason)
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        self.runner = runner
        self.slots = slots
        self.vocab_size = runner.vocab_size
        hp = runner.hparams
        per_token = sum(8 * hp.kv_heads_at(i) * hp.head_dim_at(i) for i in runner.kv_layers)
        # The longest sequence a slot holds: every slot's buffers grow to the longest one's
        # length, so 8 slots of a long context would otherwise take 8 times its K/V.
        self.context_window = max(
            2, min(runner.context_window, budget_bytes // (slots * per_token))
        )
        self._ids: list[list[int]] = [[] for _ in range(slots)]
        self._buffers: list[np.ndarray] = []  # per KV layer: key, value
        self._row_bindings: dict[int, Any] = {}  # slot -> binding of that slot's view
        self._batch_bindings: dict[int, Any] = {}  # n -> binding of slots 0..n-1
        self._allocate(min(CACHE_STEP, self.context_window))

    @property
    def capacity(self) -> int:
        return int(self._buffers[0].shape[2])

    def cached_ids(self, slot: int) -> list[int]:
        return list(self._ids[slot])

    def crop(self, slot: int, n: int) -> None:
        """Keep the first ``n`` cached tokens of ``slot`` (the K/V beyond are overwritten later)."""
        if not 0 <= n <= len(self._ids[slot]):
            raise ValueError(f"crop({n}) outside slot {slot}'s cached range")
        del self._ids[slot][n:]

    def prefill(self, slot: int, ids: Sequence[int]) -> np.ndarray:
        """Run ``ids`` after ``slot``'s cache; the logits of the last one, (V,)."""
        if not ids:
            raise ValueError("prefill() needs at least one token id")
        total = len(self._ids[slot]) + len(ids)
        if total > self.context_window:
            raise ContextOverflowError(
                f"{total} tokens exceed the context window of {self.context_window}"
            )
        self._fit(min(total + 1, self.context_window))  # +1: room for a filler token later
        binding = self._row_binding(slot)
        embeds = self.runner.embed(ids)[None]  # (1, T, hidden)
        logits = self._run(binding, embeds, [total - 1], total, len(ids) - 1)
        self._ids[slot].extend(int(i) for i in ids)
        return np.asarray(logits[0, -1])  # (V,)

    def decode(self, tokens: Sequence[int | None]) -> np.ndarray:
        """One step for slots 0..len(tokens)-1: row i appends ``tokens[i]`` to slot i.

        ``None`` marks a slot with nothing to decode (filler, logits meaningless).
        Returns logits (len(tokens), V).
        """
        n = len(tokens)
        if not 0 < n <= self.slots:
            raise ValueError(f"decode() takes 1..{self.slots} rows, got {n}")
        for s, token in enumerate(tokens):  # a full idle slot: its filler needs one position
            if token is None and len(self._ids[s]) >= self.context_window:
                del self._ids[s][self.context_window - 1 :]
        lengths = [len(self._ids[s]) + 1 for s in range(n)]
        for s, token in enumerate(tokens):
            if token is not None and lengths[s] > self.context_window:
                raise ContextOverflowError(f"slot {s} would exceed the context window")
        self._fit(min(max(lengths) + 1, self.context_window))
        ids = [FILLER_TOKEN if t is None else int(t) for t in tokens]
        embeds = self.runner.embed(ids)[:, None, :]  # (n, 1, hidden)
        logits = self._run(self._batch_binding(n), embeds, [x - 1 for x in lengths],
                           max(lengths), 0)  # fmt: skip
        for s, token in enumerate(tokens):
            if token is not None:
                self._ids[s].append(int(token))
        return logits[:, 0]  # (n, V)

    def move(self, src: int, dst: int) -> None:
        """Copy ``src``'s cache into ``dst`` (keeping ``src`` as it is)."""
        n = len(self._ids[src])
        for buf in self._buffers:
            buf[dst, :, :n] = buf[src, :, :n]
        self._ids[dst] = list(self._ids[src])

    def reorder(self, sources: Sequence[int]) -> None:
        """Slot ``i`` takes a copy of slot ``sources[i]``'s cache, for ``i < len(sources)``:
        beam search's surviving beams, in their new order (a source may appear several times)."""
        rows = [int(s) for s in sources]
        if not rows:
            return
        n = max(len(self._ids[s]) for s in rows)
        for buf in self._buffers:  # fancy indexing on the right copies first: overlaps are safe
            buf[: len(rows), :, :n] = buf[rows, :, :n]
        self._ids[: len(rows)] = [list(self._ids[s]) for s in rows]

    def swap(self, a: int, b: int) -> None:
        """Exchange the caches of slots ``a`` and ``b``."""
        if a == b:
            return
        n = max(len(self._ids[a]), len(self._ids[b]))
        for buf in self._buffers:
            buf[[a, b], :, :n] = buf[[b, a], :, :n]
        self._ids[a], self._ids[b] = self._ids[b], self._ids[a]

    # ---- graph runs ---------------------------------------------------------------------

    def _run(
        self, binding: Any, embeds: np.ndarray, seqlens: list[int], total: int, start: int
    ) -> np.ndarray:
        binding.bind_cpu_input("inputs_embeds", np.ascontiguousarray(embeds, dtype=np.float32))
        binding.bind_cpu_input("seqlens_k", np.asarray(seqlens, dtype=np.int32))
        binding.bind_cpu_input("total_sequence_length", np.array(total, dtype=np.int32))
        binding.bind_cpu_input("logits_start", np.array([start], dtype=np.int64))
        for name, value in (self.runner.text_block_inputs or {}).items():  # Gemma: no image
            binding.bind_cpu_input(name, value)
        binding.bind_output("logits")
        self.runner.settle_threads()  # the kernel's cap as its single-sequence steps set it
        self.runner.session.run_with_iobinding(binding)
        return np.asarray(binding.get_outputs()[0].numpy())  # (rows, T or 1, V)

    def _row_binding(self, slot: int) -> Any:
        if slot not in self._row_bindings:
            self._row_bindings[slot] = self._bind(slice(slot, slot + 1))
        return self._row_bindings[slot]

    def _batch_binding(self, n: int) -> Any:
        if n not in self._batch_bindings:
            self._batch_bindings[n] = self._bind(slice(0, n))
        return self._batch_bindings[n]

    def _bind(self, rows: slice) -> Any:
        """A binding whose past and present K/V are the buffers' ``rows`` (views, in place)."""
        runner = self.runner
        ortvalue = runner.ort.OrtValue.ortvalue_from_numpy
        binding = runner.session.io_binding()
        binding.bind_output("logits")  # first, so get_outputs()[0] is the logits
        for name, value in runner.rope_inputs.items():
            binding.bind_ortvalue_input(name, value)
        for j, layer in enumerate(runner.kv_layers):
            for k, kind in enumerate(("key", "value")):
                view = self._buffers[2 * j + k][rows]  # contiguous: slots are the outer axis
                value = ortvalue(view)
                binding.bind_ortvalue_input(f"past_{kind}.{layer}", value)
                binding.bind_ortvalue_output(f"present_{kind}.{layer}", value)
                for sharer in runner.kv_sharers(layer):
                    binding.bind_ortvalue_output(f"present_{kind}.{sharer}", value)
        return binding

    # ---- memory -------------------------------------------------------------------------

    def _fit(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        capacity = -(-capacity // CACHE_STEP) * CACHE_STEP
        self._allocate(min(capacity, self.context_window))

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate every slot's buffers with ``capacity`` tokens, keeping the cached ones."""
        hp, runner = self.runner.hparams, self.runner
        old, self._buffers = self._buffers, []
        n = max(len(ids) for ids in self._ids)
        for j in range(2 * len(runner.kv_layers)):
            layer = runner.kv_layers[j // 2]
            shape = (self.slots, hp.kv_heads_at(layer), capacity, hp.head_dim_at(layer))
            buf = np.zeros(shape, dtype=np.float32)
            if old:
                buf[:, :, :n] = old[j][:, :, :n]
            self._buffers.append(buf)
        self._row_bindings.clear()
        self._batch_bindings.clear()
