"""The graph-builder core: nodes, initializers, linear layers and norms, no layer pieces.

Owns `GraphBuilder` (unique names, constants, weights streamed into a `WeightFile`, a linear
layer over one repacked weight or the kernel op, RMSNorm) and `concat_rows`. The layer pieces
(`engine.fastpath.graph`, `.moe`, `.gemma4_moe`, `.deltanet`, `.head`, ...) import this core;
it imports none of them. Does not own what a model's layers are (`engine.fastpath.graph`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from engine.fastpath.matmul_op import kernel_projection
from engine.fastpath.weights import WeightFile
from engine.gguf.repack import repack, zero_points_input
from engine.kernels.experts import InputForm

ACCURACY_INT8 = 4
MS = "com.microsoft"
_CONTRIB = {"MatMulNBits", "GroupQueryAttention", "SkipSimplifiedLayerNormalization", "FastGelu"}


class GraphBuilder:
    """Accumulates nodes and initializers with unique names; weights go to a `WeightFile`."""

    def __init__(self, weights: WeightFile, reader: Any, accuracy: int = ACCURACY_INT8) -> None:
        self.accuracy = accuracy  # MatMulNBits accuracy_level: 4 = int8 activations, 0 = float
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.file = weights
        self.reader = reader
        self.tensors = {t.name: t for t in reader.tensors}  # the GGUF's, by name
        self._count = 0
        self.bsums: dict[tuple[str, int], str] = {}  # (input, block) -> its block sums
        self.layer_kv: dict[int, tuple[str, str]] = {}  # a layer's new K/V, for KV sharing
        self.expert_key: str | None = None  # set: MoE experts run as one op (fastpath.expert_op)
        self.dense_key: str | None = None  # set: dense MLPs run as that op (fastpath.dense_op)
        # Set: these projections run as the kernel op under that key (fastpath.matmul_op).
        self.matrix_key: str | None = None
        self.matrix_names_on: frozenset[str] = frozenset()
        self.matrix_names_used: set[str] = set()
        self.delta_op = False
        self.one_token: str | None = None  # whether T == 1, made once (fastpath.deltanet_step)
        self.two_tokens: str | None = None  # whether T == 2, likewise
        self.pads_one_row = False  # graph.py: a 1-token run's attention as a 2-row run's row 0
        self.one_row_pad: tuple[str, str, str, str] | None = None  # its shared nodes
        self.image_block = False  # set: Gemma's image runs attend both ways (fastpath.image_block)
        self.attention_op = False  # set: text layers on HearthAttention (fastpath.attention_op)
        self.kv_half = False  # set: its K/V cache is float16 (fastpath.attention_op.cache_half)

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, array: np.ndarray) -> str:
        """A small constant stored inside the graph."""
        from onnx import numpy_helper

        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def stored(self, hint: str, array: np.ndarray) -> str:
        """A large constant streamed to the external-data file."""
        name = self.name(hint)
        self.inits.append(self.file.tensor(name, array))
        return name

    def op(self, op_type: str, inputs: list[str], hint: str = "", **attrs: Any) -> str:
        """A node with one output; returns the output's name."""
        return self.ops(op_type, inputs, 1, hint, **attrs)[0]

    def ops(
        self, op_type: str, inputs: list[str], n_out: int, hint: str = "", **attrs: Any
    ) -> list[str]:
        """A node with ``n_out`` outputs (Split); returns their names."""
        from onnx import helper

        outs = [self.name(hint or op_type) for _ in range(n_out)]
        domain = MS if op_type in _CONTRIB else ""
        self.nodes.append(helper.make_node(op_type, inputs, outs, domain=domain, **attrs))
        return outs

    def has(self, name: str) -> bool:
        return name in self.tensors

    def packed(self, name: str) -> Any:
        """The repacked weight of tensor ``name`` (rows = output features): from the weight
        file's pipeline when the conversion runs one (repacked ahead, in parallel), else here."""
        if self.file.pipeline is not None:
            return self.file.pipeline.get(name)
        t = self.tensors[name]
        k, n = (int(x) for x in t.shape)
        return repack(t.tensor_type, t.data, n, k, name)

    def vector(self, name: str) -> np.ndarray:
        return np.asarray(self.tensors[name].data, dtype=np.float32).reshape(-1)

    # --------------------------------------------------------------- linear layers

    def linear(self, x: str, w: Any, hint: str, accuracy: int | None = None) -> str:
        """x·Wᵀ for one repacked weight, plus the block-offset term when it has one.
        ``accuracy`` overrides the graph's activation precision for this one projection."""
        if w.bits == 0:
            return self.op("MatMul", [x, self.stored(hint + ".w", w.dense.T)], hint)
        inputs = [x, self.stored(hint + ".q", w.codes), self.stored(hint + ".d", w.scales)]
        zero = zero_points_input(w)  # Q4_1, Q4_K: each block's (engine.gguf.repack)
        if zero is not None:
            inputs.append(self.stored(hint + ".zp", zero))
        y = self.op(
            "MatMulNBits", inputs, hint, K=w.k, N=w.n, bits=w.bits,
            block_size=w.block, accuracy_level=self.accuracy if accuracy is None else accuracy,
        )  # fmt: skip
        if w.offsets is None:
            return y
        offsets = self.stored(hint + ".m", np.ascontiguousarray(w.offsets.T))  # (K/block, N)
        corr = self.op("MatMul", [self.block_sums(x, w.k // w.block, w.block), offsets])
        return self.op("Add", [y, corr], hint + ".out")

    def block_sums(self, x: str, n_blocks: int, block: int) -> str:
        """Per-block sums of x (B, S, K) → (B, S, K/block), shared by projections of x."""
        key = (x, block)
        if key not in self.bsums:
            shape = self.const("shape", np.array([0, -1, n_blocks, block]))
            blocks = self.op("Reshape", [x, shape])
            self.bsums[key] = self.op(
                "ReduceSum", [blocks, self.const("axis", np.array([-1]))], keepdims=0
            )
        return self.bsums[key]

    def projection(
        self, x: str, names: list[str], hint: str, accuracy: int | None = None,
        form: InputForm | None = None,
    ) -> str:  # fmt: skip
        """Projections of the same input, concatenated; one fused MatMulNBits when alike, or
        one kernel op over the mapped file (`engine.fastpath.matmul_op`) where the graph has
        it. ``accuracy`` 0: float activations for these (`linear`; the kernel's float form);
        ``form``, where given, is the kernel's input form instead (MatMulNBits keeps
        ``accuracy``)."""
        if form is None:
            form = "float" if accuracy == 0 else "int8"
        mapped = kernel_projection(self, x, names, hint, form=form)
        if mapped is not None:
            return mapped
        if len(names) == 1:
            return self.linear(x, self.packed(names[0]), hint, accuracy)
        parts = [self.packed(n) for n in names]
        fused = concat_rows(parts)
        if fused is not None:
            return self.linear(x, fused, hint, accuracy)
        outs = [self.linear(x, p, f"{hint}{j}", accuracy) for j, p in enumerate(parts)]
        return self.op("Concat", outs, hint, axis=-1)

    # --------------------------------------------------------------- norms

    def rms_norm(self, x: str, weight: str, eps: float) -> str:
        gamma = self.const("norm", self.vector(weight))
        return self.op("SimplifiedLayerNormalization", [x, gamma], axis=-1, epsilon=eps)

    def add_norm(
        self, hidden: str, pending: str | None, weight: str, eps: float
    ) -> tuple[str, str]:
        """(hidden + pending, RMSNorm of it): one fused op when there is something to add."""
        if pending is None:
            return hidden, self.rms_norm(hidden, weight, eps)
        from onnx import helper

        gamma = self.const("norm", self.vector(weight))
        normed, summed = self.name("norm"), self.name("resid")
        self.nodes.append(
            helper.make_node(
                "SkipSimplifiedLayerNormalization", [pending, hidden, gamma],
                [normed, "", "", summed], domain=MS, epsilon=eps,
            )
        )  # fmt: skip
        return summed, normed


def concat_rows(parts: list[Any]) -> Any | None:
    """Stack repacked weights that read the same input into one, when their layouts match."""
    first = parts[0]

    def layout(p: Any) -> tuple[int, int, bool, int | None]:
        return (p.bits, p.block, p.offsets is None, p.zero_point)

    if any(layout(p) != layout(first) for p in parts):
        return None

    def cat(name: str) -> np.ndarray | None:
        if getattr(first, name) is None:
            return None
        return np.concatenate([getattr(p, name) for p in parts], axis=0)

    n = sum(p.n for p in parts)
    return replace(first, n=n, codes=cat("codes"), scales=cat("scales"), offsets=cat("offsets"),
                   dense=cat("dense"), zero_points=cat("zero_points"))  # fmt: skip


def one_row_pad(g: GraphBuilder) -> tuple[str, str, str, str]:
    """A 1-token run's attention as row 0 of a 2-row run: (Tile repeats, seqlens_k, total, rows).

    Why: GroupQueryAttention weighs V with MLAS's SGEMM, which takes a separate M == 1 kernel
    for one query row; its sums round apart from the same row inside a multi-row run, and int8
    activations grow that to ~1 logit. A verified speculative draft is a multi-row run, so a
    1-token decode step must round as one: its q/k/v are repeated to 2 rows, the attention
    runs with one position more, and only row 0 is kept. Row 0 attends causally to the cache
    and itself only, so it equals the same token's row in any longer run bit for bit; the
    repeat's K/V land one position past the cache and the next step
    overwrites them (the runner keeps one more cache position and rotary row than its
    window). Costs one attention row, not a forward (the matrices stay 1 row).
    Built once per graph (the nodes are shared by every layer)."""
    from onnx import TensorProto

    if g.one_row_pad is not None:
        return g.one_row_pad
    shape = g.op("Shape", ["inputs_embeds"])  # (batch, rows, hidden)
    batch = g.op("Slice", [shape, g.const("zero", np.array([0])), g.const("one", np.array([1]))])
    rows = g.op("Slice", [shape, g.const("one", np.array([1])), g.const("two", np.array([2]))])
    unit = g.const("one", np.array([1]))
    # GQA takes more than one row after a cache only for batch 1; a batch's decode step (the
    # server's, which never speculates) keeps the M == 1 kernel.
    single = g.op("And", [g.op("Equal", [rows, unit]), g.op("Equal", [batch, unit])])
    single = g.op("And", [single, "pad_one_row"])  # the runner's choice (`paired_decode`)
    extra = g.op("Cast", [single], to=TensorProto.INT64)  # [1]: 1 for a 1-token run, else 0
    one = g.const("one", np.array([1]))
    reps = g.op("Concat", [one, g.op("Add", [one, extra]), one], axis=0)
    extra32 = g.op("Cast", [extra], to=TensorProto.INT32)
    seqlens = g.op("Add", ["seqlens_k", extra32])
    total = g.op("Add", ["total_sequence_length", g.op("Squeeze", [extra32])])
    g.one_row_pad = (reps, seqlens, total, rows)
    return reps, seqlens, total, rows
