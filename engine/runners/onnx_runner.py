"""The Runner over an ONNX Runtime session: the CPU fast path's forward and KV cache.

Owns one `InferenceSession` of the graph `engine.fastpath.graph` writes, the token-embedding
lookup (`engine.runners.token_rows`: rows read from the GGUF file as asked, never mapped), the
rotary tables for the chosen context window, and the KV cache for one token sequence as
preallocated numpy buffers that GroupQueryAttention reads and writes in place (past and present
bound to the same buffer), so a decode step copies nothing but the new token's K/V. ``crop`` is
then just a length change. Satisfies `engine.runners.base.SnapshotRunner`. A hybrid model
(qwen35) keeps K/V for its attention layers only and a recurrent state for the others
(`engine.runners.recurrent`): there ``crop`` returns to the nearest saved state at or before
the cut and recomputes the tokens between.
``reusable_length`` says how much of the cache a later request may reuse and still get a
cold prefill's exact numbers (decode steps too where ``exact_steps``); ``export_state`` /
``import_state`` turn the cache into plain arrays for `engine.runners.kv_store` (chats on disk).
Does not own sampling, prompts, which conversation the cache holds, or how the session uses the
CPU (`engine.runners.session_options`); not thread-safe (one worker thread owns it, as with
`engine.runners.torch_runner.TorchRunner`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from engine.arch.hparams import HParams, rope_tables
from engine.fastpath import kernel_ops
from engine.fastpath.deltanet import TAIL
from engine.fastpath.expert_op import attach_experts
from engine.fastpath.graph import EXACT_PAIRS
from engine.fastpath.matmul_op import attach_matrices
from engine.fastpath.meta import EmbeddingSource, GraphMeta
from engine.runners.base import check_extend
from engine.runners.image_rows import (
    ImageEmbedding,
    ImageRows,
    MRope,
    block_inputs,
    mrope_for,
    segments,
    text_block_inputs,
)
from engine.runners.kv_store import SavedState
from engine.runners.recurrent import RecurrentState
from engine.runners.session_options import cpu_session_options, thread_governor
from engine.runners.token_rows import TokenRows

CACHE_STEP = 256  # KV buffers grow in multiples of this many tokens (doubling, up to context)
PROMPT_TAIL = TAIL  # hybrid: a prefill also saves the recurrent state this many tokens early
DENSE_PREFILL_CHUNK = 128  # prompt tokens per prefill run on a dense graph (see __init__)
# Attention of heads wider than WIDE_HEAD rounds a row one way in a run of at most SHORT_TOTAL
# keys (cache + run) and another in a longer run (measured: real Gemma 3 270M and tiny gemma3
# with head_dim 256, not 128; an ONNX Runtime/MLAS path choice), so rows of such runs are not
# what a longer cold prefill computes (`OnnxRunner.exact_from`).
WIDE_HEAD, SHORT_TOTAL = 128, 64


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
        self._experts = attach_experts(folder, source, options)
        self._matrices = attach_matrices(folder, source, options)
        self._governor = thread_governor(self.kernel_ops, threads)  # decode threads, by step times
        self._ort = ort
        self._session = ort.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
        self._rope_arrays: dict[str, np.ndarray] = {}  # the bound tables (M-RoPE writes rows)
        self._rope = self._rope_values()
        self.images = ImageRows()  # image ids' rows (`engine.runners.image_rows`)
        inputs = {i.name: i for i in self._session.get_inputs()}
        self._block_inputs: dict[str, np.ndarray] | None = None  # Gemma: both-ways images
        self._deepstack = self.hparams.deepstack_layers * self.hparams.hidden  # Qwen3-VL
        if "image_block" in inputs:
            rotary = ("image_cos", "image_sin")
            widths = {n: int(i.shape[1]) for n, i in inputs.items() if n.startswith(rotary)}
            self._block_inputs = text_block_inputs(widths)
        self._mrope: MRope | None = mrope_for(self.hparams, source)
        self._rope_plain = (
            {n: a.copy() for n, a in self._rope_arrays.items()} if self._mrope else {}
        )
        self._ids: list[int] = []
        self._buffers: list[np.ndarray] = []  # per layer: key, value; (1, kv_heads, cap, head_dim)
        self._binding: Any = None
        hp = self.hparams
        self._kv_layers = [  # gemma4's KV-sharing layers write into their source's buffers
            i for i in range(meta.n_layers) if not hp.is_recurrent(i) and hp.kv_source(i) == i
        ]
        self._sharers: dict[int, list[int]] = {}
        for i in range(meta.n_layers):
            if not hp.is_recurrent(i) and hp.kv_source(i) != i:
                self._sharers.setdefault(hp.kv_source(i), []).append(i)
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
        self._reusable = 0  # leading cached tokens a cold prefill would compute alike (below)
        wide = any(
            hp.head_dim_at(i) > WIDE_HEAD for i in range(meta.n_layers) if not hp.is_recurrent(i)
        )
        self._short_total = SHORT_TOTAL if wide else 0  # runs this short round apart (above)
        # qwen35 with an MTP block: the residual stream's row at each cached position (the
        # drafter's input, `engine.mtp`; rows past the cache are stale); and whether a 2-token
        # run's DeltaNets step per token, so a verified 1-token draft rounds as two decode
        # steps do and the state after its first row is kept (the rollback point).
        outputs = {o.name for o in self._session.get_outputs()}
        self.source = source
        self.hidden_rows: np.ndarray | None = None
        self.hidden_from = 0  # rows below are not this cache's (a restored one's are not kept)
        self._hidden = "hidden" in outputs
        props = self._session.get_modelmeta().custom_metadata_map
        self.exact_pairs = self._recurrent is not None and props.get(EXACT_PAIRS) == "1"
        self._allocate(min(CACHE_STEP, self.context_window))

    def _rope_values(self) -> dict[str, Any]:
        """The cos/sin inputs for this window, as OrtValues bound once."""

        names = {i.name for i in self._session.get_inputs()}
        values: dict[str, Any] = {}
        for suffix, local in (("", False), ("_local", True)):
            if f"cos_cache{suffix}" not in names:
                continue
            # one row past the window: a 1-token step's attention runs one position more
            cos, sin = rope_tables(self.hparams, self.context_window + 1, local)
            self._rope_arrays[f"cos_cache{suffix}"], self._rope_arrays[f"sin_cache{suffix}"] = (
                cos,
                sin,
            )
            values[f"cos_cache{suffix}"] = self._ort.OrtValue.ortvalue_from_numpy(cos)
            values[f"sin_cache{suffix}"] = self._ort.OrtValue.ortvalue_from_numpy(sin)
        return values

    def _write_mrope(self, ids: Sequence[int]) -> None:
        """M-RoPE: the rotary rows of this run's indices from its tokens' (t, h, w) positions."""
        assert self._mrope is not None
        start = len(self._ids)
        positions = self._mrope.positions(
            self.images, ids, start + self.images.position_shift(self._ids)
        )
        for name, live in self._rope_arrays.items():
            self._mrope.write(live, self._rope_plain[name], start, positions)

    def _image_block(self, n: int, total: int) -> dict[str, np.ndarray]:
        """Gemma: the inputs of one image's both-ways pass (`engine.fastpath.image_block`)."""
        return block_inputs(total - n, n, self.hparams.sliding_window, self._rope_arrays)

    @property
    def exact_steps(self) -> bool:
        """Whether a 1-token step's logits and K/V equal the same token's row in any longer run
        and in a cold prefill, bit for bit (tests/engine/loop/test_exact_steps.py).

        True of every attention-only graph with ``paired_decode`` (`engine.fastpath.graph`
        `_one_row_pad`). False of a hybrid (qwen35): its DeltaNet layers take the recurrent
        update for one token and the chunked form for more (other sums, ~0.03 logit apart on
        tiny files after a few steps), so there the loop does not speculate
        (`engine.generate`) and decode steps are not reusable."""
        return self._recurrent is None and self.paired_decode

    @property
    def exact_from(self) -> int:
        """The cache length from which `exact_steps` holds: 0, or `SHORT_TOTAL` on a graph with
        heads wider than `WIDE_HEAD`, where a run that ends within the first SHORT_TOTAL
        positions rounds apart from a longer run (so the loop speculates only after a prompt
        of at least this many tokens, and such runs are not reusable: `settle` redoes them)."""
        return self._short_total

    @property
    def text_block_inputs(self) -> dict[str, np.ndarray] | None:
        """Gemma: the image-block inputs of a run without an image (None for other graphs);
        every run of the graph binds them (`engine.runners.batched` too)."""
        return self._block_inputs

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
        if image.rows.shape[1] != self.hparams.hidden + self._deepstack:
            raise ValueError(
                f"image rows are {image.rows.shape[1]} wide; the model takes "
                f"{self.hparams.hidden + self._deepstack}"
            )
        self.images.add(image)

    @property
    def deepstack_width(self) -> int:
        """Qwen3-VL: the width of the graph's ``deepstack`` input (0: the graph has none)."""
        return self._deepstack

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

    def _run(self, ids: Sequence[int], last_only: bool = False) -> np.ndarray:
        """One graph run of ``ids`` (text, or one image's ids) after the cache."""
        total = len(self._ids) + len(ids)
        image = min(ids) < 0
        both_ways = image and self._block_inputs is not None  # appends the image once more
        # Gemma's image pass appends the image once more: room past the window if need be.
        needed = total + len(ids) if both_ways else total
        needed += len(ids) == 1 and self.paired_decode  # its attention writes one more
        if needed > self.capacity:
            self._grow(needed)
        if self.extend_calls is not None:
            self.extend_calls.append(len(ids))
        start = len(ids) - 1 if last_only else 0
        state = self._recurrent
        binding = self._binding if state is None else self._bindings[state.current]
        tokens = [max(0, i) for i in ids]  # an image token's per-layer row: id 0's (llama.cpp)
        embeds = self._embeddings.lookup(tokens)[None]  # (1, T, hidden)
        if image:
            self.images.fill(ids, embeds[0])  # unscaled: Gemma scales token rows only
        binding.bind_cpu_input("inputs_embeds", embeds)
        if self._per_layer is not None:
            binding.bind_cpu_input("per_layer_embeds", self._per_layer.lookup(tokens)[None])
        if self._mrope is not None and len(self.images):  # once an image ran, rows may differ
            self._write_mrope(ids)
        if self._block_inputs is not None:
            block = self._image_block(len(ids), total) if image else self._block_inputs
            for name, value in block.items():
                binding.bind_cpu_input(name, value)
        binding.bind_cpu_input("seqlens_k", np.array([total - 1], dtype=np.int32))
        binding.bind_cpu_input("total_sequence_length", np.array(total, dtype=np.int32))
        binding.bind_cpu_input("logits_start", np.array([start], dtype=np.int64))
        if self._deepstack:  # Qwen3-VL: zeros for text, an image token's extra rows
            deep = np.zeros((1, len(ids), self._deepstack), dtype=np.float32)
            if image:
                self.images.fill_extra(ids, deep[0], self.hparams.hidden)
            binding.bind_cpu_input("deepstack", deep)
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
        self._track_reusable(total - len(ids), len(ids))
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
            elif len(ids) == 2 and self.exact_pairs:  # a verify: its draft may be rejected
                tails = outputs[-len(state.layers) * 2 :]
                state.pair_at, state.pair = total - 1, tails  # read only on a rollback
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
        """Leading cached tokens whose K/V a cold prefill would compute bitwise alike.

        Runs of >= 2 tokens agree bitwise however a sequence is chunked, and so do 1-token runs
        (decode steps) where `exact_steps` holds: there a reply's K/V are reused as decoded
        and `engine.kv_cache.settle` has nothing to redo. Elsewhere a step rounds apart (a
        hybrid's DeltaNet step; with ``paired_decode`` off, MLAS's M == 1 kernel: logits up to
        1.3 apart on the bundled SmolLM2, enough to change a greedy reply), so only the prefix
        written by longer runs is reused by a later request (`engine.kv_cache.reuse_prefix`):
        the same prompt gives the same reply, cold or cached.
        """
        return min(self._reusable, len(self._ids))

    def _track_reusable(self, start: int, count: int) -> None:
        if start + count <= self._short_total:  # rounds apart from a longer run (exact_from)
            self._reusable = min(self._reusable, start)
        elif (count >= 2 or self.exact_steps) and start <= self._reusable:
            self._reusable = start + count
        elif count == 1:
            self._reusable = min(self._reusable, start)

    def crop(self, n: int) -> None:
        """Keep the first ``n`` cached tokens (the K/V beyond are overwritten later).

        Hybrid: the recurrent state goes back to the nearest known one at or before ``n``
        and the tokens from there to ``n`` are run again.
        """
        if not 0 <= n <= len(self._ids):
            raise ValueError(f"crop({n}) outside the cached range 0..{len(self._ids)}")
        self._reusable = min(self._reusable, n)
        if self._recurrent is None or n == len(self._ids):
            del self._ids[n:]
            return
        start = self._recurrent.best_before(n)
        self._recurrent.rewind(start)
        replay, self._ids = self._ids[start:n], self._ids[:start]
        if replay:
            self.extend(replay, last_only=True)

    def reset(self) -> None:
        self._ids.clear()
        self._reusable = 0
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
        buffers, ids, states, reusable = cast(tuple[list[np.ndarray], list[int], Any, int], state)
        self._reusable = reusable
        if len(ids) > self.capacity:
            self._grow(len(ids))
        for live, parked in zip(self._buffers, buffers, strict=True):
            live[:, :, : len(ids)] = parked
        self._ids = list(ids)
        self.hidden_from = len(ids)  # parked without its residual stream rows
        if self._recurrent is not None:
            self._recurrent.restore(states)

    def export_state(self) -> SavedState:
        """The cache as plain arrays, for `engine.runners.kv_store` (a private copy)."""
        buffers, ids, states, reusable = cast(
            tuple[list[np.ndarray], list[int], Any, int], self.snapshot()
        )
        if states is None:  # only the reusable prefix is worth a file (see reusable_length)
            buffers, ids = [b[:, :, :reusable] for b in buffers], ids[:reusable]
        arrays = list(buffers)
        layout: dict[str, Any] = {"kv": len(buffers), "reusable": reusable}
        if states is not None:
            state, checkpoints = states
            arrays += state
            layout["state"] = len(state)
            layout["checkpoints"] = list(checkpoints)
            for position in checkpoints:
                arrays += checkpoints[position]
        return SavedState(ids, arrays, layout)

    def import_state(self, saved: SavedState) -> None:
        """Make ``saved`` (from `export_state`, maybe of an earlier process) the cache.

        Raises ValueError when its arrays do not fit this model (nothing is changed then)."""
        n, arrays, layout = len(saved.ids), saved.arrays, saved.layout
        kv = int(layout.get("kv", -1))
        expected = [(1, b.shape[1], n, b.shape[3]) for b in self._buffers]
        if kv != len(expected) or [a.shape for a in arrays[:kv]] != expected:
            raise ValueError("the saved K/V do not fit this model")
        states: Any = None
        if self._recurrent is not None:
            width = len(self._recurrent.sets[0])
            positions = [int(p) for p in layout.get("checkpoints", [])]
            shapes = [b.shape for b in self._recurrent.sets[0]] * (1 + len(positions))
            if layout.get("state") != width or [a.shape for a in arrays[kv:]] != shapes:
                raise ValueError("the saved recurrent state does not fit this model")
            chunks = [
                arrays[kv + width * i : kv + width * (i + 1)] for i in range(len(positions) + 1)
            ]
            states = (chunks[0], dict(zip(positions, chunks[1:], strict=True)))
        elif len(arrays) != kv:
            raise ValueError("the saved cache holds a recurrent state this model has not")
        if n > self.context_window:
            raise ValueError("the saved cache is longer than the context window")
        reusable = min(int(layout.get("reusable", 0)), n)
        self.restore((arrays[:kv], list(saved.ids), states, reusable))

    def state_key(self) -> str:
        """What the cached K/V depend on besides the model file and template (kv_store key)."""
        graph = self.model_file.parent.name  # source identity, graph version, accuracy, ORT
        return f"onnx:{graph}:ctx{self.context_window}"

    def _grow(self, needed: int) -> None:
        capacity = self.capacity
        while capacity < needed:
            capacity *= 2
        capacity = min(-(-capacity // CACHE_STEP) * CACHE_STEP, self.context_window)
        self._allocate(max(capacity, needed))  # only an image pass needs more than the window

    def _allocate(self, capacity: int) -> None:
        """(Re)allocate the KV buffers with ``capacity`` tokens, keeping the cached ones."""
        hp, n = self.hparams, len(self._ids)
        old, self._buffers = self._buffers, []
        for j in range(2 * len(self._kv_layers)):
            layer = self._kv_layers[j // 2]  # gemma4: heads and head size differ per layer
            shape = (1, hp.kv_heads_at(layer), capacity, hp.head_dim_at(layer))
            buf = np.zeros(shape, dtype=np.float32)
            if old:
                buf[:, :, :n] = old[j][:, :, :n]
            self._buffers.append(buf)
        self._bind_cache()

    def _bind_cache(self) -> None:
        """Bind each layer's past and present K/V to the same buffer (in-place append).

        Hybrid: two bindings, one reading each recurrent buffer set and writing the other
        (an op's output must not overwrite an input it still reads)."""
        sets = [0, 1] if self._recurrent is not None else [None]
        self._bindings = [self._binding_for(reads) for reads in sets]
        self._binding = self._bindings[0]

    def _binding_for(self, reads: int | None) -> Any:
        binding = self._session.io_binding()
        binding.bind_output("logits")  # first, so get_outputs()[0] is the logits
        if self._hidden:
            binding.bind_output("hidden")  # second
        for name, value in self._rope.items():
            binding.bind_ortvalue_input(name, value)
        for j, layer in enumerate(self._kv_layers):
            for k, kind in enumerate(("key", "value")):
                value = self._ort.OrtValue.ortvalue_from_numpy(self._buffers[2 * j + k])
                binding.bind_ortvalue_input(f"past_{kind}.{layer}", value)
                binding.bind_ortvalue_output(f"present_{kind}.{layer}", value)
                for sharer in self._sharers.get(layer, ()):  # rewrites the same K/V there
                    binding.bind_ortvalue_output(f"present_{kind}.{sharer}", value)
        state = self._recurrent
        if state is not None and reads is not None:
            ortvalue = self._ort.OrtValue.ortvalue_from_numpy
            names = state.names()
            for (past, present), src, dst in zip(
                names, state.sets[reads], state.sets[1 - reads], strict=True
            ):
                binding.bind_ortvalue_input(past, ortvalue(src))
                binding.bind_ortvalue_output(present, ortvalue(dst))
            for tail in state.tail_names():  # last, in buffer order; ORT allocates them
                binding.bind_output(tail)
        return binding
