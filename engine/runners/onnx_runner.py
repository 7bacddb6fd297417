"""The Runner over an ONNX Runtime session: the CPU fast path's forward and KV cache.

Owns one `InferenceSession` of the graph `engine.fastpath.graph` writes, the token-embedding
lookup (`engine.runners.token_rows`: rows read from the GGUF file as asked, never mapped), the
rotary tables for the chosen context window, and the KV cache for one token sequence as
preallocated numpy buffers that GroupQueryAttention reads and writes in place (past and present
bound to the same buffer: `engine.runners.kv_binding`), so a decode step copies nothing but the
new token's K/V. ``crop`` is then just a length change. Satisfies
`engine.runners.base.SnapshotRunner`. A hybrid model (qwen35) keeps K/V for its attention
layers only and a recurrent state for the others (`engine.runners.recurrent`): there ``crop``
returns to the nearest saved state at or before the cut and recomputes the tokens between.
``reusable_length`` says how much of the cache a later request may reuse and still get a
cold prefill's exact numbers (decode steps too where ``exact_steps``; `engine.runners.reuse`);
``export_state`` / ``import_state`` turn the cache into plain arrays for
`engine.runners.kv_store` (chats on disk; the layout: `engine.runners.cache_arrays`). Image
ids run as their images' rows, with what else an image changes in a run
(`engine.runners.image_inputs`). Does not own sampling, prompts, which conversation the cache
holds, or how the session uses the CPU (`engine.runners.session_options`); not thread-safe
(one worker thread owns it, as with `engine.runners.torch_runner.TorchRunner`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from engine.arch.hparams import HParams
from engine.fastpath import kernel_ops
from engine.fastpath.deltanet import TAIL
from engine.fastpath.expert_op import attach_experts
from engine.fastpath.graph import EXACT_PAIRS, KERNEL_ATTENTION
from engine.fastpath.matmul_op import attach_matrices
from engine.fastpath.meta import EmbeddingSource, GraphMeta
from engine.kernels import native
from engine.runners.base import check_extend
from engine.runners.cache_arrays import Snapshot, export_snapshot, import_snapshot
from engine.runners.image_inputs import ImageInputs
from engine.runners.image_rows import ImageEmbedding, ImageRows, segments
from engine.runners.kv_binding import io_binding, kv_buffers, kv_dtype, kv_layout, rope_values
from engine.runners.kv_store import SavedState
from engine.runners.recurrent import RecurrentState
from engine.runners.reuse import Reuse
from engine.runners.session_options import cpu_session_options, thread_governor
from engine.runners.token_rows import TokenRows

CACHE_STEP = 256  # KV buffers grow in multiples of this many tokens (doubling, up to context)
# (a graph on the kernel's attention reserves the whole window at once: kv_binding.reserved_zeros)
PROMPT_TAIL = TAIL  # hybrid: a prefill also saves the recurrent state this many tokens early
DENSE_PREFILL_CHUNK = 128  # prompt tokens per prefill run on a dense graph (see __init__)


class OnnxRunner:
    """`engine.runners.base.Runner` over a converted GGUF graph on ONNX Runtime's CPU provider."""

    backend = "onnx"  # ModelInfo.backend

    device = "cpu"

    def __init__(
        self,
        model_file: Path,
        meta: GraphMeta,
        threads: int | None = None,
        *,
        source: Path,
        window: int | None = None,
    ) -> None:
        import onnxruntime as ort

        self.meta = meta
        self.model_file = model_file
        self.hparams = HParams.from_json(meta.hparams)
        self.vocab_size = meta.vocab_size
        self.context_window = min(meta.context_window, window or meta.context_window)
        self.dtype = meta.dtype
        self._embeddings = TokenRows(source, EmbeddingSource(**meta.embedding))
        per_layer = meta.per_layer_embedding
        self._per_layer = TokenRows(source, EmbeddingSource(**per_layer)) if per_layer else None

        folder = model_file.parent  # a graph with kernel ops (experts, MLPs, projections)?
        options = cpu_session_options(ort, threads, kernel_ops.has_kernel_ops(folder))
        # The kernel ops registered (native, or the Python op), and the file's weights they
        # read mapped until this runner is collected (None for a graph without them).
        self.kernel_ops = kernel_ops.register(folder, options)
        if self.kernel_ops == "native":  # what the ops without a binding (attention) run on
            native.set_op_threads(native.kernel_threads(threads))
        self._experts = attach_experts(folder, source, options)
        self._matrices = attach_matrices(folder, source, options)
        self._governor = thread_governor(self.kernel_ops, threads)  # decode threads, by step times
        self._ort = ort
        self._session = ort.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._rope_arrays: dict[str, np.ndarray] = {}  # the bound tables (M-RoPE writes rows)
        self._rope = rope_values(ort, self._session, self.hparams, self.context_window,
                                 self._rope_arrays)  # fmt: skip
        inputs = {i.name: i for i in self._session.get_inputs()}
        self._image = ImageInputs(self.hparams, source, inputs, self._rope_arrays)
        self._ids: list[int] = []
        self._buffers: list[np.ndarray] = []  # per layer: key, value; (1, kv_heads, cap, head_dim)
        self._binding: Any = None
        hp = self.hparams
        self._kv_layers, self._sharers = kv_layout(hp, meta.n_layers)  # gemma4: shared K/V
        self.kv_dtype = kv_dtype(self._session, self._kv_layers)  # float16 or float32
        recurrent = any(hp.is_recurrent(i) for i in range(meta.n_layers))
        self._recurrent = RecurrentState(hp) if recurrent else None
        # Prompt tokens per prefill run (`engine.generate`): a dense graph's activations grow
        # with the run (0.5B: ~105 MB for 512 tokens, ~28 MB for 128) and 128-token runs prefill
        # as fast; a hybrid saves two recurrent checkpoints per run and a MoE layer reads its
        # chosen experts again per run, so those keep the loop's default.
        dense = not recurrent and not hp.has_experts
        self.prefill_chunk: int | None = DENSE_PREFILL_CHUNK if dense else None
        self._bindings: list[Any] = []  # hybrid: one per recurrent buffer set it reads
        self.extend_calls: list[int] | None = None  # a list records extend() lengths
        # A 1-token step's attention runs as row 0 of a 2-row run (engine.fastpath.graph
        # `_one_row_pad`), so it rounds as the same token inside a verified draft or a prefill:
        # speculative greedy replies equal plain ones bitwise. False: ONNX Runtime's M == 1
        # kernel, as a batched decode row computes (tests compare the two).
        self.paired_decode = True
        props = self._session.get_modelmeta().custom_metadata_map
        self.kernel_attention = props.get(KERNEL_ATTENTION) == "1"  # rows round alike anyway
        self._reuse = Reuse(hp, meta.n_layers, self.kernel_attention)  # the reusable prefix
        # qwen35 with an MTP block: the residual stream's row at each cached position (the
        # drafter's input, `engine.mtp`; rows past the cache are stale); and whether a 2-token
        # run's DeltaNets step per token, so a verified 1-token draft rounds as two decode
        # steps do and the state after its first row is kept (the rollback point).
        outputs = {o.name for o in self._session.get_outputs()}
        self.source = source
        self.hidden_rows: np.ndarray | None = None
        self.hidden_from = 0  # rows below are not this cache's (a restored one's are not kept)
        self._hidden = "hidden" in outputs
        self.exact_pairs = self._recurrent is not None and props.get(EXACT_PAIRS) == "1"
        # The kernel's op reads a buffer only up to each sequence's length, so the whole window
        # is reserved, mapped as written: no growth, no copy stalling a step. Where a buffer's
        # size costs per step (GroupQueryAttention) it grows by doubling.
        self._reserve = self.kernel_attention
        window = self.context_window
        self._allocate(window if self._reserve else min(CACHE_STEP, window))

    @property
    def exact_steps(self) -> bool:
        """Whether a 1-token step's logits and K/V equal the same token's row in any longer run
        and in a cold prefill, bit for bit (tests/engine/loop/test_exact_steps.py).

        True of every attention-only graph on the kernel's HearthAttention (its rows round
        alike in any run) or with ``paired_decode`` (`engine.fastpath.graph` `_one_row_pad`,
        GroupQueryAttention), and of a hybrid's (qwen35, qwen35moe) whose DeltaNets are the
        kernel's native ops (``exact_pairs``): one token steps ``HearthDeltaNet``, two step it
        per token, three or more run ``HearthDeltaRun``, equal to its steps bit for bit. False
        of a hybrid on ONNX ops (``HEARTH_DELTA_OP=0``, no kernel): the recurrent update for
        one token, the chunked rule for more (~0.03 logit apart on tiny files after a few
        steps), so there the loop does not speculate by prompt lookup (`engine.generate`) and
        decode steps are not reusable."""
        hybrid_exact = self._recurrent is None or self.exact_pairs
        return hybrid_exact and (self.paired_decode or self.kernel_attention)

    def exact_rows(self, rows: int) -> int:
        """How many of ``rows`` tokens a run after the cache may take and still round each as
        its decode step (`engine.runners.reuse.Reuse.exact_rows`: wide heads' key blocks)."""
        return self._reuse.exact_rows(len(self._ids), rows)

    @property
    def exact_from(self) -> int:
        """The cache length from which `exact_steps` holds (`engine.runners.reuse.Reuse`)."""
        return self._reuse.exact_from

    @property
    def text_block_inputs(self) -> dict[str, np.ndarray] | None:
        """Gemma: the image-block inputs of a run without an image (None for other graphs);
        every run of the graph binds them (`engine.runners.batched` too)."""
        return self._image.block

    def settle_threads(self) -> None:
        """Set the kernel's thread cap for a run its governor does not time (a prefill, a
        verify, a batched step): the governor's current count (`engine.kernels.governor`)."""
        if self._governor is not None:
            self._governor.settle_cap()

    # --- the batching API: what `engine.runners.batched` shares with this runner ---------------

    @property
    def session(self) -> Any:
        """The graph's ONNX Runtime session (batched decode steps run on it too)."""
        return self._session

    @property
    def ort(self) -> Any:
        """The onnxruntime module the session came from (for OrtValues and bindings)."""
        return self._ort

    @property
    def rope_inputs(self) -> dict[str, Any]:
        """The rotary tables every run binds, as OrtValues by input name."""
        return self._rope

    @property
    def kv_layers(self) -> list[int]:
        """The layers with K/V buffers of their own, in the graph's cache-input order."""
        return self._kv_layers

    def kv_sharers(self, layer: int) -> list[int]:
        """The layers that read ``layer``'s K/V instead of their own (gemma4), else []."""
        return self._sharers.get(layer, [])

    @property
    def experts_mapped(self) -> bool:
        """Whether the MoE experts run as the kernel op over the mapped file (a batch can
        route each row), not as the graph's one-sequence nested If."""
        return self._experts is not None

    def embed(self, ids: Sequence[int]) -> np.ndarray:
        """(len(ids), hidden) float32: the token-embedding rows of ``ids``."""
        return self._embeddings.lookup(ids)

    @property
    def cached_ids(self) -> list[int]:
        return list(self._ids)

    @property
    def capacity(self) -> int:
        return int(self._buffers[0].shape[2])

    def add_image(self, image: ImageEmbedding) -> None:
        """Make ``image``'s ids (`engine.runners.image_rows.image_ids`) runnable: ``extend``
        then reads its rows for them (no token lookup), each image in a run of its own."""
        self._image.add(image)

    @property
    def images(self) -> ImageRows:
        """The rows this runner's image ids stand for (`engine.runners.image_inputs`)."""
        return self._image.rows

    @property
    def deepstack_width(self) -> int:
        """Qwen3-VL: the width of the graph's ``deepstack`` input (0: the graph has none)."""
        return self._image.deepstack

    def extend(self, ids: Sequence[int], last_only: bool = False) -> np.ndarray:
        """Run ``ids`` after the cache; logits (len(ids), V), or (1, V) with ``last_only``.

        Image ids (negative, `add_image`) run as their image's rows; a list holding them runs
        as text and image segments in turn, each image whole (Gemma's image tokens attend to
        each other both ways, as llama.cpp decodes an image in one non-causal batch)."""
        check_extend(ids, len(self._ids), self.context_window)
        if min(ids) >= 0:
            return self._run(ids, last_only)
        parts = [self._run(ids[a:b], last_only) for a, b, _image in segments(list(ids))]
        return parts[-1] if last_only else np.concatenate(parts)

    def advance(self, ids: Sequence[int]) -> None:
        """`extend` (``last_only``) with the head on no rows: a prefill's runs before its last
        (`engine.generate`); the cache and a hybrid's saved states are `extend`'s."""
        check_extend(ids, len(self._ids), self.context_window)
        for a, b, _image in segments(list(ids)):
            self._run(ids[a:b], last_only=True, head=False)

    def _run(self, ids: Sequence[int], last_only: bool = False, head: bool = True) -> np.ndarray:
        """One graph run of ``ids`` (text, or one image's ids) after the cache; without
        ``head``, no logits: (0, V)."""
        total = len(self._ids) + len(ids)
        image = min(ids) < 0
        needed = total + (len(ids) == 1 and self.paired_decode)  # a step writes one more
        if needed > self.capacity:
            self._grow(needed)
        if self.extend_calls is not None:
            self.extend_calls.append(len(ids))
        start = len(ids) if not head else len(ids) - 1 if last_only else 0
        state = self._recurrent
        binding = self._binding if state is None else self._bindings[state.current]
        tokens = [max(0, i) for i in ids]  # an image token's per-layer row: id 0's (llama.cpp)
        embeds = self._embeddings.lookup(tokens)[None]  # (1, T, hidden)
        if image:
            self._image.rows.fill(ids, embeds[0])  # unscaled: Gemma scales token rows only
        binding.bind_cpu_input("inputs_embeds", embeds)
        if self._per_layer is not None:
            binding.bind_cpu_input("per_layer_embeds", self._per_layer.lookup(tokens)[None])
        self._image.bind(binding, self._ids, ids, total, image)  # M-RoPE, image block, deepstack
        binding.bind_cpu_input("seqlens_k", np.array([total - 1], dtype=np.int32))
        binding.bind_cpu_input("total_sequence_length", np.array(total, dtype=np.int32))
        binding.bind_cpu_input("logits_start", np.array([start], dtype=np.int64))
        binding.bind_cpu_input("pad_one_row", np.array([self.paired_decode], dtype=np.bool_))
        binding.bind_output("logits")
        if self._hidden:
            binding.bind_output("hidden")
        for tail in state.tail_names() if state is not None else ():  # shapes vary per run
            binding.bind_output(tail)
        governor = self._governor if len(ids) == 1 else None  # it times decode steps
        if governor is not None:
            governor.before_step()
        else:
            self.settle_threads()
        began = time.perf_counter()
        self._session.run_with_iobinding(binding)
        if governor is not None:
            governor.record(time.perf_counter() - began)
        outputs = binding.get_outputs()
        logits: np.ndarray = outputs[0].numpy()[0]  # (T or 1, V)
        if self._hidden:
            self._keep_hidden(len(self._ids), outputs[1].numpy()[0])
        self._ids.extend(int(i) for i in ids)
        self._reuse.track(total - len(ids), len(ids), self.exact_steps)
        if state is not None:
            state.advanced(total - len(ids))
            if last_only and len(ids) > 2 * PROMPT_TAIL:
                # The state just before the prompt's end, from the same run: a chat template
                # that renders the previous reply's opening differently (a stripped <think>)
                # parts from the cache there, a few tokens short of the end.
                tails = binding.get_outputs()[-len(state.layers) * 2 :]
                state.save(total - PROMPT_TAIL, [np.array(t.numpy()) for t in tails])
            if last_only and len(ids) > 1:  # a prefill: the end of a prompt, reused next turn
                state.save(total)
            elif 2 <= len(ids) <= PROMPT_TAIL and self.exact_pairs:  # a verify: its draft
                # may be rejected; such a run's tail is the state after its first token
                tails = outputs[-len(state.layers) * 2 :]
                state.pair_at, state.pair = total - len(ids) + 1, tails  # read on a rollback
        return logits

    def _keep_hidden(self, start: int, rows: np.ndarray) -> None:
        end, held = start + len(rows), self.hidden_rows
        if held is None or len(held) < end:
            grown = np.zeros((max(end, 2 * len(held) if held is not None else 0), rows.shape[1]),
                             np.float32)  # fmt: skip
            if held is not None:
                grown[: len(held)] = held
            self.hidden_rows = held = grown
        held[start:end] = rows
        if start <= self.hidden_from <= end:
            self.hidden_from = start

    @property
    def reusable_length(self) -> int:
        """Leading cached tokens whose K/V a cold prefill would compute bitwise alike (which
        runs count: `engine.runners.reuse.Reuse`)."""
        return self._reuse.length(len(self._ids))

    def crop(self, n: int) -> None:
        """Keep the first ``n`` cached tokens (the K/V beyond are overwritten later).

        Hybrid: the recurrent state goes back to the nearest known one at or before ``n``
        and the tokens from there to ``n`` are run again.
        """
        if not 0 <= n <= len(self._ids):
            raise ValueError(f"crop({n}) outside the cached range 0..{len(self._ids)}")
        self._reuse.cut(n)
        if self._recurrent is None or n == len(self._ids):
            del self._ids[n:]
            return
        state = self._recurrent
        start = state.best_before(n)
        state.rewind(start)
        replay, self._ids = self._ids[start:n], self._ids[:start]
        if replay:  # saves no checkpoint: a rejected draft's would push a prompt's end out
            kept = dict(state.checkpoints)
            self.advance(replay)  # no logits: nothing reads them
            state.checkpoints = kept

    def reset(self) -> None:
        self._ids.clear()
        self._reuse.reusable = 0
        self.hidden_from = 0
        if self._recurrent is not None:
            self._recurrent.clear()

    def snapshot(self) -> object:
        """A parked copy of the cache and its ids (see `engine.kv_cache.ConversationCaches`)."""
        n = len(self._ids)
        states = self._recurrent.snapshot() if self._recurrent is not None else None
        buffers = [b[:, :, :n].copy() for b in self._buffers]
        return (buffers, list(self._ids), states, self.reusable_length)

    def restore(self, state: object) -> None:
        buffers, ids, states, reusable = cast(Snapshot, state)
        self._reuse.reusable = reusable
        if len(ids) > self.capacity:
            self._grow(len(ids))
        for live, parked in zip(self._buffers, buffers, strict=True):
            live[:, :, : len(ids)] = parked
        self._ids = list(ids)
        self.hidden_from = len(ids)  # parked without its residual stream rows
        if self._recurrent is not None:
            self._recurrent.restore(states)

    def export_state(self) -> SavedState:
        """The cache as plain arrays, for `engine.runners.kv_store` (a private copy; the
        layout: `engine.runners.cache_arrays`)."""
        return export_snapshot(cast(Snapshot, self.snapshot()))

    def import_state(self, saved: SavedState) -> None:
        """Make ``saved`` (from `export_state`, maybe of an earlier process) the cache.

        Raises ValueError when its arrays do not fit this model (nothing is changed then)."""
        self.restore(import_snapshot(saved, self._buffers, self._recurrent, self.context_window))

    def state_key(self) -> str:
        """What the cached K/V depend on besides the model file and template (kv_store key)."""
        graph = self.model_file.parent.name  # source identity, graph version, accuracy, ORT
        return f"onnx:{graph}:ctx{self.context_window}"

    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        capacity = min(-(-capacity // CACHE_STEP) * CACHE_STEP, self.context_window)
        self._allocate(max(capacity, needed))  # a paired step may need one past the window

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate the KV buffers with ``capacity`` tokens, keeping the cached ones."""
        hp, n = self.hparams, len(self._ids)
        self._buffers = kv_buffers(hp, self._kv_layers, capacity, self._buffers, n, self.kv_dtype,
                                   self._reserve)  # fmt: skip
        self._bind_cache()

    def _bind_cache(self) -> None:
        """Bind each layer's past and present K/V to the same buffer (in-place append).

        Hybrid: two bindings, one reading each recurrent buffer set and writing the other
        (an op's output must not overwrite an input it still reads)."""
        sets = [0, 1] if self._recurrent is not None else [None]
        self._bindings = [
            io_binding(
                self._session, self._ort, hidden=self._hidden, rope=self._rope,
                kv_layers=self._kv_layers, sharers=self._sharers, buffers=self._buffers,
                state=self._recurrent, reads=reads,
            )
            for reads in sets
        ]  # fmt: skip
        self._binding = self._bindings[0]
