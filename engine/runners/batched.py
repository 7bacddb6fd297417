"""KV slots for several token sequences over one ONNX fast-path session: batched decode steps.

Owns up to ``slots`` sequences' KV caches as one buffer per layer and kind,
(rows, kv_heads, capacity, head_dim), and two forwards over them:

- ``prefill(slot, ids)``: one single-row graph run on that slot's view (the same run
  `engine.runners.onnx_runner.OnnxRunner.extend` does for one sequence), logits of the last id;
- ``decode(tokens)``: ONE graph run for the first ``len(tokens)`` slots, one new token each,
  every row at its own length (GroupQueryAttention's per-row ``seqlens_k``; the buffers are
  bound as past and present, so each row's new K/V is written in place at its own position).
  The weights are read once for all rows and the per-run overheads are paid once: that is the
  whole gain of batching on a CPU, where a decode step is bound by reading the weights.

Each row of a batched step computes exactly what the single-sequence step computes: measured
bitwise on SmolLM2 (Q4_1, int8 activations) for rows of different lengths, and asserted by
``tests/engine/serve/test_server_batch.py``. A slot in the decoded range that has no new token
gets a filler token written just past its cached ids (never inside them), and its logits are
ignored.

Memory: the buffers hold only the rows in use (``rows`` grows to the highest slot a prefill or
decode touches; ``shrink`` drops the rows above the live ones when sequences leave) and only as
many tokens as the longest of them (doubling, capped at the window; shrunk too). Every growth is
checked first (`fits`): all rows together within ``budget_bytes`` and, with the copy made while
growing, within the RAM psutil says is available now (the loader's rule: plus 10% and 256 MiB
of headroom); a growth that does not fit raises InsufficientMemoryError with figures instead of
taking the machine into swap or the OOM killer. ``context_window`` is what one sequence may hold
within the budget. Shares the runner's InferenceSession, embedding table and rotary tables (no
second copy of the weights), through the runner's batching API. Runs plain architectures only
(`batch_refusal` says why not otherwise: hybrid recurrent state, MoE routing through nested
``If``s and gemma4 per-layer inputs are shaped for one row; MoE experts as
`engine.fastpath.expert_op`'s op take any rows, bitwise as alone). Does not own sampling, stop
conditions, admission or scheduling (`engine.serve.batch`); not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.errors import ContextOverflowError, InsufficientMemoryError
from engine.runners.onnx_runner import CACHE_STEP, OnnxRunner

FILLER_TOKEN = 0  # what an idle row inside the decoded range is fed (its logits are dropped)
KV_BUDGET_BYTES = 2 << 30  # all slots' K/V together; longer sequences run alone, on the runner
# Headroom a growth leaves in RAM, as the loader's estimate adds (engine.models: OVERHEAD_*;
# runners sit below models, so the figures are repeated here rather than imported).
HEADROOM_FRACTION = 0.10
HEADROOM_BYTES = 256 << 20
MIB = 1 << 20


def available_ram() -> int:
    """RAM available now (psutil's "available": free + reclaimable cache), as the loader reads."""
    import psutil

    return int(psutil.virtual_memory().available)


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
        self,
        runner: OnnxRunner,
        slots: int = 8,
        budget_bytes: int = KV_BUDGET_BYTES,
        available: Callable[[], int] = available_ram,
    ) -> None:
        reason = batch_refusal(runner)
        if reason:
            raise ValueError(reason)
        if slots < 1:
            raise ValueError(f"slots must be >= 1, got {slots}")
        self.runner = runner
        self.slots = slots
        self.budget_bytes = budget_bytes
        self._available = available  # the RAM check's reading (a test passes a figure)
        self.vocab_size = runner.vocab_size
        hp = runner.hparams
        # K and V of one token in one row (the graph's type), over every layer that keeps them
        size = runner.kv_dtype.itemsize
        self.bytes_per_token = sum(
            2 * size * hp.kv_heads_at(i) * hp.head_dim_at(i) for i in runner.kv_layers
        )
        # The longest sequence one row holds: a lone sequence may use the whole budget (rows
        # are allocated only for live sequences, so nothing is sized slots x window up front).
        self.context_window = max(
            2, min(runner.context_window, budget_bytes // self.bytes_per_token)
        )
        self.peak_bytes = 0  # the most the buffers ever held at once (bench, tests)
        self._ids: list[list[int]] = [[] for _ in range(slots)]
        self._buffers: list[np.ndarray] = []  # per KV layer: key, value
        self._row_bindings: dict[int, Any] = {}  # slot -> binding of that slot's view
        self._batch_bindings: dict[int, Any] = {}  # n -> binding of slots 0..n-1
        self._allocate(1, min(CACHE_STEP, self.context_window))

    @property
    def capacity(self) -> int:
        return int(self._buffers[0].shape[2])

    @property
    def rows(self) -> int:
        """Slots the buffers hold now (0..rows-1); the others are empty and take no memory."""
        return int(self._buffers[0].shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of K/V held now, all rows and layers."""
        return sum(int(b.nbytes) for b in self._buffers)

    def fits(self, rows: int, length: int) -> str:
        """Why holding ``rows`` rows of ``length`` tokens would not fit ("" when it would):
        over the batch's budget, or over the RAM available now with the copy a growth makes."""
        rows, capacity = max(rows, self.rows), max(self.capacity, self._rounded(length))
        if rows == self.rows and capacity == self.capacity:
            return ""
        return self._refusal(rows, capacity, length)

    def _rounded(self, length: int) -> int:
        return max(length, min(-(-length // CACHE_STEP) * CACHE_STEP, self.context_window))

    def _refusal(self, rows: int, capacity: int, length: int) -> str:
        need = rows * capacity * self.bytes_per_token
        what = f"{rows} sequence(s) of up to {length} tokens need {need / MIB:.0f} MiB of KV cache"
        if need > self.budget_bytes:
            return f"{what}, over the batch's budget of {self.budget_bytes / MIB:.0f} MiB"
        free = self._available()
        if need * (1 + HEADROOM_FRACTION) + HEADROOM_BYTES > free:
            return (
                f"{what} (plus {HEADROOM_BYTES / MIB:.0f} MiB of headroom) but only "
                f"{free / MIB:.0f} MiB of RAM is available"
            )
        return ""

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
        self._fit(slot + 1, min(total + 1, self.context_window))  # +1: a filler token later
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
        self._fit(n, min(max(lengths) + 1, self.context_window))
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
        if n:
            self._fit(max(src, dst) + 1, self.capacity)
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
        if n:
            self._fit(max(len(rows), max(rows) + 1), self.capacity)
        for buf in self._buffers:  # fancy indexing on the right copies first: overlaps are safe
            buf[: len(rows), :, :n] = buf[rows, :, :n]
        self._ids[: len(rows)] = [list(self._ids[s]) for s in rows]

    def swap(self, a: int, b: int) -> None:
        """Exchange the caches of slots ``a`` and ``b``."""
        if a == b:
            return
        n = max(len(self._ids[a]), len(self._ids[b]))
        if not n:  # two empty slots: nothing to copy (and no row to grow for)
            return
        self._fit(max(a, b) + 1, self.capacity)
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
        binding.bind_cpu_input("pad_one_row", np.array([False]))  # M == 1 rows (graph.py)
        if width := self.runner.deepstack_width:  # Qwen3-VL: text rows add no deepstack
            binding.bind_cpu_input("deepstack", np.zeros((*embeds.shape[:2], width), np.float32))
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

    def shrink(self, live: int) -> None:
        """Let go of the rows from ``live`` up (their cached ids too) and of the tokens past the
        longest kept row: sequences left, their K/V goes with them."""
        live = max(1, min(live, self.rows))
        for s in range(live, self.slots):
            self._ids[s] = []
        longest = max(len(self._ids[s]) for s in range(live))
        capacity = max(CACHE_STEP, self._rounded(min(longest + 1, self.context_window)))
        capacity = min(capacity, self.capacity)
        if live < self.rows or capacity <= self.capacity // 2:
            self._allocate(live, capacity)

    def _fit(self, rows: int, needed: int) -> None:
        """Grow to ``rows`` rows of at least ``needed`` tokens, checked first (see `fits`)."""
        rows = max(rows, self.rows)
        if needed <= self.capacity and rows == self.rows:
            return
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        capacity = min(-(-capacity // CACHE_STEP) * CACHE_STEP, self.context_window)
        if self._refusal(rows, capacity, needed):  # doubling overshoots: try just what is needed
            capacity = max(self.capacity, self._rounded(needed))
        refusal = self._refusal(rows, capacity, needed)
        if refusal:
            raise InsufficientMemoryError(f"not enough memory for the batch: {refusal}")
        self._allocate(rows, capacity)

    def _allocate(self, rows: int, capacity: int) -> None:
        """(Re)allocate the buffers as ``rows`` rows of ``capacity`` tokens, keeping the cached
        ones (the old and new buffers live together during the copy; `fits` counts that)."""
        hp, runner = self.runner.hparams, self.runner
        old, self._buffers = self._buffers, []
        self._row_bindings.clear()  # they hold the old buffers
        self._batch_bindings.clear()
        keep = min(rows, old[0].shape[0]) if old else 0
        n = max((len(self._ids[s]) for s in range(keep)), default=0)
        for j in range(2 * len(runner.kv_layers)):
            layer = runner.kv_layers[j // 2]
            shape = (rows, hp.kv_heads_at(layer), capacity, hp.head_dim_at(layer))
            buf = np.zeros(shape, dtype=runner.kv_dtype)
            if old:
                buf[:keep, :, :n] = old[j][:keep, :, :n]
                old[j] = buf  # the old layer's buffer is freed as soon as it is copied
            self._buffers.append(buf)
        self.peak_bytes = max(self.peak_bytes, self.nbytes)
